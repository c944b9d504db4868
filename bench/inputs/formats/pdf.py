"""pdf documents (being written)."""

EXTRACTORS: tuple = ()
