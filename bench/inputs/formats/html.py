"""html documents (being written)."""

EXTRACTORS: tuple = ()
