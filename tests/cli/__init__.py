"""The command line end to end: every command on small projects, bad input, API models."""
