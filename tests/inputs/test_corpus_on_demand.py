"""Corpora read on demand, so that a run scales to millions of documents: the same texts and
fingerprint as reading everything at once."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from bench.inputs.corpus import load_corpus
from tests.helpers import random_text

# --- corpora read on demand -------------------------------------------------------------------------


def _reference_fingerprint(docs: dict[str, str]) -> str:
    h = hashlib.sha256()
    for doc_id in sorted(docs):
        h.update(doc_id.encode() + b"\0" + docs[doc_id].encode() + b"\0")
    return h.hexdigest()


@pytest.mark.parametrize("sorted_ids", [True, False])
def test_a_jsonl_corpus_is_read_back_on_demand_with_the_same_fingerprint(tmp_path: Path, sorted_ids: bool):
    rng = random.Random(3)
    docs = {f"d{i:03d}": random_text(rng, rng.randint(1, 40)) + "\nline two" for i in range(50)}
    docs["crlf"] = "one\r\ntwo"
    ids = sorted(docs) if sorted_ids else list(reversed(sorted(docs)))
    path = tmp_path / "c.jsonl"
    path.write_text("\n\n".join(json.dumps({"id": i, "text": docs[i]}) for i in ids) + "\n", encoding="utf-8")
    corpus = load_corpus(path)
    docs["crlf"] = "one\ntwo"
    assert list(corpus.ids) == sorted(docs)
    assert [d.text for d in corpus.documents] == [docs[i] for i in sorted(docs)]
    assert corpus.get("d017").text == docs["d017"] and corpus.documents[-1].id == "d049"
    assert corpus.fingerprint == _reference_fingerprint(docs)


def test_a_folder_corpus_reads_each_file_when_asked(tmp_path: Path):
    for name, text in {"a.md": "alpha", "sub/b.txt": "beta"}.items():
        (tmp_path / "c" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "c" / name).write_text(text)
    corpus = load_corpus(tmp_path / "c")
    (tmp_path / "c" / "a.md").write_text("changed")  # read now, not at load time
    assert corpus.get("a.md").text == "changed"
