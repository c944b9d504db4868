"""Importers: other tools' benchmark layouts → a corpus and goldset that ``bench run`` accepts."""

from __future__ import annotations

from bench.inputs.importers.base import ImportResult
from bench.inputs.importers.beir import import_beir
from bench.inputs.importers.chroma import import_chroma
from bench.inputs.importers.pages import import_pages
from bench.inputs.importers.trec import import_trec

FORMATS = ("beir", "trec", "chroma", "pages")

__all__ = ["FORMATS", "ImportResult", "import_beir", "import_chroma", "import_pages", "import_trec"]
