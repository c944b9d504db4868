"""The one exception type that means "the user's input is wrong": the CLI prints it as one line, exit 2."""


class BenchError(Exception):
    """Bad input or configuration. The message names where (file:line) and how to fix it."""
