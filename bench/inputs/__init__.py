"""Inputs of a run: the corpus, the goldset and its lock, and importers from other formats."""
