"""Chunk tables without texts, so that a run scales to millions of chunks: the texts sliced back
from the corpus are the chunker's own, and chunk sizes of a very large table come from a sample."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from bench.chunking import FixedTokenChunker, MarkdownSectionChunker, RecursiveChunker
from bench.chunking.table import ChunkTable
from bench.inputs.corpus import load_corpus
from tests.helpers import random_text

# --- chunk tables without texts ---------------------------------------------------------------------


@pytest.mark.parametrize("chunker", [FixedTokenChunker(16, 4), RecursiveChunker(20), MarkdownSectionChunker(24)])
def test_a_chunked_corpus_slices_the_same_texts_the_chunker_made(tmp_path: Path, chunker):
    rng = random.Random(5)
    rows = [
        {"id": f"doc{i}", "text": f"# Title {i}\n\n{random_text(rng, 50)}\n\n## Part\n\n{random_text(rng, 30)}"}
        for i in range(12)
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    corpus = load_corpus(path)
    table = ChunkTable.chunk_corpus(corpus, chunker)
    made = [c for d in corpus.documents for c in sorted(chunker.chunk(d.id, d.text), key=lambda c: (c.start, c.end))]
    assert [c.text for c in made] == list(table.texts) == list(table.iter_texts())
    assert list(table.chunks) == made  # ids, offsets, texts and markdown headings alike
    assert list(table.iter_texts(3, 11)) == [c.text for c in made[3:11]] == table.texts[3:11]
    assert table.texts[-1] == made[-1].text


def test_chunking_on_threads_keeps_the_corpus_order_and_its_errors(tmp_path: Path, monkeypatch):
    import bench.chunking.table

    monkeypatch.setattr(bench.chunking.table.measure, "cores", lambda: 3)
    monkeypatch.setattr(bench.chunking.table, "_AHEAD", 5)
    rng = random.Random(11)
    rows = [{"id": f"doc{i:03d}", "text": random_text(rng, rng.randint(3, 60))} for i in range(40)]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    corpus = load_corpus(tmp_path / "c.jsonl")
    chunker = FixedTokenChunker(12, 2)
    table = ChunkTable.chunk_corpus(corpus, chunker)
    assert list(table.chunks) == [c for d in corpus.documents for c in chunker.chunk(d.id, d.text)]

    class Failing(FixedTokenChunker):
        def chunk(self, doc_id: str, text: str) -> list:
            if doc_id == "doc017":
                raise ValueError(doc_id)
            return super().chunk(doc_id, text)

    with pytest.raises(ValueError, match="doc017"):
        ChunkTable.chunk_corpus(corpus, Failing(12))


def test_chunk_sizes_of_a_very_large_table_come_from_an_even_sample(tmp_path: Path, monkeypatch):
    import bench.chunking.sizes
    from bench.chunking.sizes import chunk_sizes
    from bench.chunking.tokens import count_tokens

    rng = random.Random(9)
    rows = [{"id": f"doc{i:02d}", "text": random_text(rng, rng.randint(5, 80))} for i in range(40)]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    table = ChunkTable.chunk_corpus(load_corpus(tmp_path / "c.jsonl"), FixedTokenChunker(10))
    exact = chunk_sizes(table)
    assert exact["tokens_sampled"] is None and exact["tokens"] == sum(count_tokens(t) for t in table.texts)
    monkeypatch.setattr(bench.chunking.sizes, "SIZE_SAMPLE", 25)
    sampled = chunk_sizes(table)
    rows_measured = np.unique(np.linspace(0, len(table) - 1, 25).astype(np.int64))
    sizes = [count_tokens(table.text(int(i))) for i in rows_measured]
    assert sampled["tokens_sampled"] == len(sizes) == sum(sampled["token_histogram"]["counts"])
    assert sampled["tokens"] == round(np.mean(sizes) * len(table)) and sampled["chunks"] == len(table)
    assert sampled["char_sizes"] == exact["char_sizes"]  # characters are always exact
    assert sampled["chars"] == exact["chars"] == sum(map(len, table.texts))
    assert sampled["chars_per_token"] == round(sum(len(table.text(int(i))) for i in rows_measured) / sum(sizes), 4)


def test_sizes_say_how_many_characters_a_token_holds(tmp_path: Path):
    """A 256-token chunk of Chinese holds 200 to 270 characters, of English about a thousand."""
    from bench.chunking.sizes import chunk_sizes, chunk_stats
    from bench.chunking.tokens import count_tokens

    chinese = "我们每隔十八个月就会进行一次全面的系统检查，以确保所有设备都处于良好的运行状态。" * 40
    english = "Every eighteen months we run a full check of the system, so that every device stays safe. " * 40
    rows = [{"id": "zh", "text": chinese}, {"id": "en", "text": english}]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    corpus = load_corpus(tmp_path / "c.jsonl")
    for doc, low, high in ((chinese, 0.7, 1.2), (english, 3.5, 6.0)):
        sub = tmp_path / f"{low}.jsonl"
        sub.write_text(json.dumps({"id": "d", "text": doc}, ensure_ascii=False), encoding="utf-8")
        table = ChunkTable.chunk_corpus(load_corpus(sub), FixedTokenChunker(256))
        sizes = chunk_sizes(table)
        assert sizes["chars"] == sum(map(len, table.texts))
        assert sizes["chars_per_token"] == round(sizes["chars"] / sum(count_tokens(t) for t in table.texts), 4)
        assert low < sizes["chars_per_token"] < high
    table = ChunkTable.chunk_corpus(corpus, FixedTokenChunker(256))
    stats = chunk_stats("tok256", "tokens", table)
    assert stats.chars == chunk_sizes(table)["chars"]
    assert stats.chars_per_token == chunk_sizes(table)["chars_per_token"]
    zh = [len(table.text(i)) for i in table.chunks_of(table.doc_ids.index("zh"))]
    assert 200 <= max(zh) <= 280  # a full window of Chinese


def test_kept_chunk_texts_are_the_documents_slices_in_any_script_and_order(tmp_path: Path):
    from bench.chunking.chunk_texts import ChunkTexts

    rng = random.Random(3)
    texts = [
        "plain ASCII text " * 40,
        "Café — naïve 😀 " * 30,
        "满语Heseri的 中文句子。" * 25,
        "lone \ud800 surrogate",
        "",
    ]
    kept, expected = ChunkTexts(), []
    for text in texts:
        spans = sorted((a, a + rng.randint(1, 40)) for a in rng.sample(range(max(len(text), 1)), min(len(text), 12)))
        spans = [(a, min(b, len(text))) for a, b in spans]  # overlapping and nested spans alike
        kept.add(text, [a for a, _ in spans], [b for _, b in spans])
        expected += [text[a:b] for a, b in spans]
    kept.close_writing()
    assert [kept.text(i) for i in range(len(expected))] == expected
    assert list(kept.run(0, len(expected))) == expected
    assert list(kept.run(5, 17)) == expected[5:17]
    order = rng.sample(range(len(expected)), len(expected))
    assert [kept.text(i) for i in order] == [expected[i] for i in order]


def test_a_chunk_table_slices_its_documents_when_no_text_can_be_kept(tmp_path: Path, monkeypatch):
    import bench.chunking.chunk_texts

    rows = [{"id": f"d{i}", "text": f"Text number {i} has a few words in it. " * 9} for i in range(6)]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    corpus = load_corpus(tmp_path / "c.jsonl")
    chunker = FixedTokenChunker(16)
    made = [c for d in corpus.documents for c in chunker.chunk(d.id, d.text)]

    def full(self, text, starts, ends):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bench.chunking.chunk_texts.ChunkTexts, "add", full)
    table = ChunkTable.chunk_corpus(corpus, chunker)
    assert "_kept" not in table.__dict__
    assert list(table.texts) == [c.text for c in made] == [table.text(i) for i in range(len(table))]
