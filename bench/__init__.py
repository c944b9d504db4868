"""bench: which embedding model, chunker and vector index suit *your* documents, and at what cost."""

__version__ = "0.1.0"
