"""office documents (being written)."""

EXTRACTORS: tuple = ()
