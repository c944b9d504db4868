"""Importers: other tools' benchmark layouts → a corpus and goldset that ``bench run`` accepts."""

from __future__ import annotations

from bench.importers.base import ImportResult
from bench.importers.beir import import_beir
from bench.importers.chroma import import_chroma
from bench.importers.trec import import_trec

FORMATS = ("beir", "trec", "chroma")

__all__ = ["FORMATS", "ImportResult", "import_beir", "import_chroma", "import_trec"]
