"""Contextual chunks without a model: the header (title, heading path, pages) joins what is indexed,
never the unit — same ids, same spans, same relevance as the plain chunker."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.chunking import RecursiveChunker
from bench.chunking.context import ContextualTable, contextual, header, heading_paths
from bench.chunking.table import ChunkTable
from bench.config import load_config
from bench.errors import BenchError
from bench.inputs.documents import Corpus, Document
from tests.helpers import CONFIG, finished_runs, run_cli, write_project

POLICY = (
    "# Travel policy\n\nIntro line.\n\n"
    "## Booking\n\nBook through the portal.\n\n"
    "### Flights\n\nEconomy under six hours.\n\n"
    "## Refunds\n\nClaims within 30 days.\n"
)


def test_the_heading_path_is_the_headings_above_each_start():
    starts = np.array([0, POLICY.index("Intro"), POLICY.index("Economy"), POLICY.index("Claims")])
    assert heading_paths(POLICY, starts) == [
        [],  # the first heading starts the text: nothing is above it
        ["Travel policy"],
        ["Travel policy", "Booking", "Flights"],
        ["Travel policy", "Refunds"],  # a new level-2 heading drops "Booking" and everything below it
    ]
    assert header("Travel policy", ["Travel policy", "Refunds"], "") == "Travel policy › Refunds"
    assert header("handbook.pdf", ["Costs"], "p. 4–5") == "handbook.pdf › Costs (p. 4–5)"
    assert header("", [], "") == ""
    long = "5.1 Investment of Deferred Amounts. The Committee shall establish the same investment options"
    assert header("10-K.pdf", [long], "p. 113") == f"10-K.pdf › {long[:79].rstrip()}… (p. 113)"


def test_a_contextual_table_indexes_the_header_and_keeps_the_units(tmp_path: Path):
    docs = [
        Document("travel.md", POLICY, title="Travel policy"),
        Document("notes.txt", "Plain notes without headings. " * 20),  # no title: its id stands in
        Document("manual.pdf", "Page one text. " * 10 + "Page two text. " * 10, pages=(0, 150), page_label="p."),
        # a saved web page named by its hash: the name says nothing, its heading says what it is
        Document(f"web/{'3f9a' * 16}.html", "# Rail strikes\n\nTrains stop on Monday. " + "More. " * 20),
        Document("exports/0b6e2a1c-95d4-4f0e-9a43-7d1c2b8e6f10.txt", "An export without headings. " * 10),
    ]
    corpus = Corpus.from_documents(tmp_path, docs)
    plain = ChunkTable.chunk_corpus(corpus, RecursiveChunker(size=12))
    table = contextual(plain, corpus)
    assert isinstance(table, ContextualTable)
    assert list(table.ids) == list(plain.ids)
    assert np.array_equal(table.start, plain.start) and np.array_equal(table.end, plain.end)
    texts = list(table.iter_texts())
    assert texts == [table.text(i) for i in range(len(table))] == list(table.texts)
    for i, text in enumerate(texts):
        _, _, body = text.partition("\n\n")
        assert body == plain.text(i) or text == plain.text(i)
    by_doc = {plain.doc_ids[int(d)]: table.text(i).split("\n\n")[0] for i, d in enumerate(plain.doc)}
    refunds = next(table.text(i) for i in range(len(table)) if "Claims" in plain.text(i))
    assert refunds.startswith("Travel policy › Refunds\n\n")
    assert by_doc["notes.txt"] == "notes.txt"
    rows = [i for i, d in enumerate(plain.doc) if plain.doc_ids[int(d)].startswith("web/")]
    web = [table.text(i) for i in rows]
    assert web[0] == plain.text(rows[0])  # above the first heading: nothing to say
    assert all(text.startswith("Rail strikes\n\n") for text in web[1:]) and len(web) > 1
    assert "3f9a" not in " ".join(table.headers) and "0b6e2a1c" not in " ".join(table.headers)
    pdf_heads = {
        table.text(i).split("\n\n")[0] for i, d in enumerate(plain.doc) if plain.doc_ids[int(d)] == "manual.pdf"
    }
    assert {"manual.pdf (p. 1)", "manual.pdf (p. 2)"} <= pdf_heads
    assert len(table.headers) == len(set(table.headers))  # each distinct header kept once


def test_contextual_chunkers_in_the_config(tmp_path: Path):
    toml = write_project(tmp_path)
    plain = load_config(toml)
    toml.write_text(CONFIG.replace('models = ["hash", "bm25"]', 'models = ["hash", "bm25"]\ncontextual = ["rec24"]'))
    config = load_config(toml)
    assert [c.name for c in config.chunkers] == ["tok24", "rec24", "rec24+ctx"]
    ctx = config.chunker("rec24+ctx")
    assert ctx.context and ctx.plain == "rec24" and ctx.params == config.chunker("rec24").params
    assert "context" not in json.dumps(plain.resolved()) and plain.hash != config.hash
    assert {c.id for c in config.candidates()} >= {"hash/rec24+ctx/flat", "bm25/rec24+ctx/inverted"}
    toml.write_text(CONFIG.replace('models = ["hash", "bm25"]', 'models = ["hash", "bm25"]\ncontextual = ["rec42"]'))
    with pytest.raises(BenchError, match=r"contextual: no chunker 'rec42'; did you mean 'rec24'"):
        load_config(toml)
    toml.write_text(CONFIG.replace("[chunkers.rec24]", "[chunkers.'rec24+ctx']"))
    with pytest.raises(BenchError, match=r"names a contextual chunker"):
        load_config(toml)


def test_a_run_with_contextual_chunks_judges_and_stores_the_plain_units(tmp_path: Path):
    write_project(
        tmp_path, CONFIG.replace('models = ["hash", "bm25"]', 'models = ["hash", "bm25"]\ncontextual = ["rec24"]')
    )
    done = run_cli("run", "bench.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (run,) = finished_runs(tmp_path / "results")
    summary = json.loads((run / "summary.json").read_text())
    ids = {c["id"] for c in summary["candidates"]}
    assert {"hash/rec24+ctx/flat", "bm25/rec24+ctx/inverted"} <= ids
    records = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    spans = {
        (r["candidate"], r["question_id"]): [(u["id"], u["start"], u["end"]) for u in r["expected"]] for r in records
    }
    for (cand, qid), expected in spans.items():
        if "+ctx" in cand:  # the same relevant units as the plain chunker's twin
            assert expected == spans[(cand.replace("rec24+ctx", "rec24"), qid)]
    corpus_texts = {
        (t["doc_id"], t["start"], t["end"]): t["text"]
        for t in map(json.loads, (run / "texts.jsonl").read_text().splitlines())
    }
    assert not any(
        " › " in text or text.startswith("kb/") for text in corpus_texts.values()
    )  # stored as the spans read
    sizes = summary["chunkers"]
    assert sizes["rec24+ctx"]["tokens"] > sizes["rec24"]["tokens"]  # what is embedded is counted
    assert sizes["rec24+ctx"]["chars"] == sizes["rec24"]["chars"]  # the units are the plain chunker's
    assert "plain chunker" in done.stdout  # its gain over the plain chunker, in the diagnosis
