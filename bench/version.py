"""The version of bench, written once: the package's metadata, runs' manifests and locks read it here."""

__version__ = "0.1.0"
