"""English chunks do not move: every chunker gives the bundled English corpus the very spans it gave
before chunking learned other scripts (recorded by tests/chunking/english_spans.py)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.chunking.english_spans import (
    CONFIGS,
    CORPUS,
    FIXTURE,
    ROOT,
    SQUAD,
    SQUAD_FIXTURE,
    corpus_digest,
    documents,
    spans,
)


def _check(corpus: Path, fixture: Path, names: list[str]) -> None:
    recorded = json.loads(fixture.read_text(encoding="utf-8"))
    docs = documents(corpus)
    assert corpus_digest(docs) == recorded["corpus_sha256"], f"{corpus} changed: record {fixture.name} again"
    for name in names:
        assert recorded["configs"][name] == CONFIGS[name]
        got = spans(CONFIGS[name], docs)
        moved = [doc for doc, digest in recorded["spans"][name].items() if got[doc] != digest]
        assert not moved, f"{name}: chunks moved in {len(moved)} document(s): {moved[:5]}"


def test_every_chunker_of_the_default_config_is_recorded() -> None:
    config = tomllib.loads((ROOT / "bench.toml").read_text(encoding="utf-8"))
    for name, table in config["chunkers"].items():
        assert CONFIGS.get(name) == table, f"[chunkers.{name}] of bench.toml is not in english_spans.CONFIGS"


@pytest.mark.parametrize("name", list(CONFIGS))
def test_english_corpus_chunks_unchanged(name: str) -> None:
    _check(CORPUS, FIXTURE, [name])


def test_english_wikipedia_chunks_unchanged() -> None:
    """Accents, dashes, Greek and IPA are no reason to move a chunk either."""
    if not SQUAD.is_dir():
        pytest.skip(f"{SQUAD} not present")
    _check(SQUAD, SQUAD_FIXTURE, ["tok256", "rec256", "md256", "sent3", "rec24"])
