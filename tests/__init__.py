"""The test suite: one package per stage of bench, end-to-end command-line tests under cli/."""
