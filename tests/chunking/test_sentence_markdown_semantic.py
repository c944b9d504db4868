"""Sentence-window, markdown-section and semantic chunkers: examples plus properties for any text."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.chunking import (
    CHUNKER_KINDS,
    Chunk,
    MarkdownSectionChunker,
    SemanticChunker,
    SentenceWindowChunker,
    chunk_id,
    make_chunker,
)
from bench.chunking.markdown import heading_sections
from bench.chunking.sentences import sentence_spans
from bench.chunking.tokens import count_tokens
from bench.errors import BenchError
from bench.text.scripts import grapheme_starts

# --- helpers -------------------------------------------------------------------------------


def check_common(chunks: list[Chunk], doc: str, doc_id: str = "d") -> None:
    """Invariants shared by every chunker (as in test_fixed_and_recursive.py)."""
    assert [c.id for c in chunks] == [chunk_id(doc_id, i) for i in range(len(chunks))]
    for c in chunks:
        assert c.doc_id == doc_id
        assert 0 <= c.start < c.end <= len(doc)
        assert c.text == doc[c.start : c.end]
        assert c.text and trimmed(c.text), "empty or untrimmed chunk"
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)
    covered = [False] * len(doc)
    for c in chunks:
        covered[c.start : c.end] = [True] * (c.end - c.start)
    missing = [i for i, ch in enumerate(doc) if not ch.isspace() and not covered[i]]
    assert not missing, f"characters not in any chunk: {missing[:10]}"


def within_size(chunks: list[Chunk], size: int) -> None:
    for c in chunks:
        assert count_tokens(c.text) <= size or len(grapheme_starts(c.text)) == 1


def trimmed(text: str) -> bool:
    """No whitespace at either edge, but for a space that carries a mark (one grapheme cluster
    with visible text: stripping it would cut the cluster)."""
    clusters = [text[a:b] for a, b in zip(grapheme_starts(text), [*grapheme_starts(text)[1:], len(text)])]
    return not clusters[0].isspace() and not clusters[-1].isspace()


def touching(spans: list[tuple[int, int]], start: int, end: int) -> int:
    """How many of ``spans`` intersect ``[start, end)``."""
    return sum(1 for s, e in spans if s < end and start < e)


TOPICS = {"cat": 0, "cats": 0, "kitten": 0, "rocket": 1, "rockets": 1, "orbit": 1, "fish": 2, "fins": 2}


def topic_embed(texts: list[str]) -> np.ndarray:
    """Fake model: counts of each topic's words, L2-normalised (topics are orthogonal axes)."""
    out = np.zeros((len(texts), 3))
    for i, t in enumerate(texts):
        for w in re.findall(r"\w+", t.lower()):
            if w in TOPICS:
                out[i, TOPICS[w]] += 1
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def hashed_embed(texts: list[str]) -> np.ndarray:
    """Fake model for properties: hashed bag of words in 8 dimensions (all-zero without words)."""
    out = np.zeros((len(texts), 8))
    for i, t in enumerate(texts):
        for w in re.findall(r"\w+", t.lower()):
            out[i, zlib.crc32(w.encode("utf-8", "surrogatepass")) % 8] += 1
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def no_embed(texts: list[str]) -> np.ndarray:
    raise AssertionError("embed must not be called")


# --- Chunk.heading -------------------------------------------------------------------------


def test_chunk_heading_field_is_optional() -> None:
    c = Chunk("d#0000", "d", 0, 3, "abc")
    assert c.heading == ""
    assert Chunk("d#0000", "d", 0, 3, "abc", "A > B").heading == "A > B"
    assert not hasattr(c, "__dict__")  # still slots
    with pytest.raises(AttributeError):
        c.heading = "x"  # type: ignore[misc]


# --- sentences -----------------------------------------------------------------------------

SEVEN = "One is here. Two is here! Three is here? Four is here. Five is here. Six is here. Seven is here."
SEVEN_S = [s.strip() for s in re.split(r"(?<=[.!?]) ", SEVEN)]


def test_sentence_spans() -> None:
    doc = (
        "# Title\nFirst line. Second (one.) Third \u201cquote.\u201d Done\n\n- item a\n- item b\n"
        "日本語です。次の文！ 3.14 stays whole…  End"
    )
    got = [doc[s:e] for s, e in sentence_spans(doc)]
    assert got == [
        "# Title",
        "First line.",
        "Second (one.)",
        "Third \u201cquote.\u201d",
        "Done",
        "- item a",
        "- item b",
        "日本語です。",
        "次の文！",
        "3.14 stays whole…",
        "End",
    ]
    assert sentence_spans("  \n\t ") == []


def test_sentence_windows_with_overlap() -> None:
    chunks = SentenceWindowChunker(3, overlap=1).chunk("d", SEVEN)
    s = SEVEN_S
    assert [c.text for c in chunks] == [" ".join(s[0:3]), " ".join(s[2:5]), " ".join(s[4:7])]
    check_common(chunks, SEVEN)
    assert [c.text for c in SentenceWindowChunker(3, overlap=0).chunk("d", SEVEN)] == [
        " ".join(s[0:3]),
        " ".join(s[3:6]),
        s[6],
    ]
    assert [c.text for c in SentenceWindowChunker(2, overlap=1).chunk("d", SEVEN)] == [
        " ".join(s[i : i + 2]) for i in range(6)
    ]
    assert [c.text for c in SentenceWindowChunker(10, overlap=2).chunk("d", SEVEN)] == [SEVEN]
    assert [c.heading for c in chunks] == ["", "", ""]


def test_sentence_windows_cut_short_by_size() -> None:
    assert [count_tokens(x) for x in SEVEN_S] == [4] * 7
    size = count_tokens(" ".join(SEVEN_S[:2]))
    chunks = SentenceWindowChunker(3, overlap=1, size=size).chunk("d", SEVEN)
    # Two sentences fit; the one carried over leaves room for one new sentence each time.
    assert [c.text for c in chunks] == [" ".join(SEVEN_S[i : i + 2]) for i in range(6)]
    within_size(chunks, size)
    # A sentence longer than size is cut into pieces that fit.
    doc = "Short one. " + "word " * 30 + "end. Tail."
    chunks = SentenceWindowChunker(2, overlap=0, size=8).chunk("d", doc)
    check_common(chunks, doc)
    within_size(chunks, 8)
    assert chunks[-1].text.endswith("Tail.")


@pytest.mark.parametrize(
    ("sentences", "overlap", "size"),
    [(0, 0, None), (3, 3, None), (3, -1, None), (2.0, 1, None), (3, 1, 0), (3, 1, "8"), (True, 0, None)],
)
def test_sentence_bad_parameters(sentences, overlap, size) -> None:
    with pytest.raises(BenchError):
        SentenceWindowChunker(sentences, overlap, size)


# --- markdown ------------------------------------------------------------------------------

LEAVE = """Preamble before any heading.

# Leave Policy

All staff are covered.

## Annual leave

You get 25 days.

```bash
# not a heading
echo hi
```

### Requesting annual leave

Ask your manager two weeks ahead.

~~~
## also not a heading
~~~

## Sick leave ##

Call in before 9.
"""


def test_markdown_sections_and_heading_paths() -> None:
    chunks = MarkdownSectionChunker(size=512).chunk("d", LEAVE)
    check_common(chunks, LEAVE)
    assert [(c.heading, c.text.splitlines()[0]) for c in chunks] == [
        ("", "Preamble before any heading."),
        ("Leave Policy", "# Leave Policy"),
        ("Leave Policy > Annual leave", "## Annual leave"),
        ("Leave Policy > Annual leave > Requesting annual leave", "### Requesting annual leave"),
        ("Leave Policy > Sick leave", "## Sick leave ##"),
    ]
    assert "# not a heading" in chunks[2].text and chunks[2].text.endswith("```")
    assert "## also not a heading" in chunks[3].text
    assert chunks[4].text == "## Sick leave ##\n\nCall in before 9."


def test_markdown_heading_rules() -> None:
    doc = "#NoSpace\n    # indented code\n #  Spaced  #\n\n####### seven\n###### six\n## \ntext\r\n# CRLF\r\nbody"
    sections = heading_sections(doc)
    assert [doc[s:e].splitlines()[0] for s, e, _ in sections] == [
        "#NoSpace",
        " #  Spaced  #",
        "###### six",
        "## ",
        "# CRLF",
    ]
    assert [p for _, _, p in sections] == ["", "Spaced", "Spaced > six", "Spaced", "CRLF"]
    assert sections[0][0] == 0 and sections[-1][1] == len(doc)
    assert all(e == s2 for (_, e, _), (s2, _, _) in zip(sections, sections[1:]))
    # A document that starts with a heading has no preamble; an unclosed fence runs to the end.
    assert [p for *_, p in heading_sections("# A\n```\n# B\n")] == ["A"]
    assert MarkdownSectionChunker().chunk("d", "") == []
    assert MarkdownSectionChunker().chunk("d", "\n\n  ") == []


def test_markdown_long_section_is_split_with_heading_kept() -> None:
    body = " ".join(f"Sentence number {i} about leave." for i in range(40))
    doc = f"# Policy\n\nShort intro.\n\n## Details\n\n{body}\n\n## End\n\nBye."
    size = 30
    chunks = MarkdownSectionChunker(size=size).chunk("d", doc)
    check_common(chunks, doc)
    within_size(chunks, size)
    details = [c for c in chunks if c.heading == "Policy > Details"]
    assert len(details) > 2
    assert details[0].text.startswith("## Details")
    assert all(c.text.startswith("Sentence number") for c in details[1:])
    assert [c.heading for c in chunks if c not in details] == ["Policy", "Policy > End"]
    over = MarkdownSectionChunker(size=size, overlap=8).chunk("d", doc)
    check_common(over, doc)
    assert len([c for c in over if c.heading == "Policy > Details"]) >= len(details)


# --- semantic ------------------------------------------------------------------------------

CATS = ["Cats purr when happy.", "A kitten sleeps a lot.", "Old cats like warm spots.", "My cat hunts mice."]
ROCKETS = ["The rocket lifted off.", "It needed fuel to reach orbit.", "The orbit was stable.", "A rocket waits."]
FISH = "Fish have fins. Fins help fish swim fast. A fish eats small plants. Many fish live in deep water."


@pytest.mark.parametrize("buffer", [0, 1, 2])
def test_semantic_splits_exactly_at_topic_change(buffer: int) -> None:
    doc = " ".join(CATS) + " " + " ".join(ROCKETS)
    chunker = SemanticChunker(topic_embed, size=512, buffer=buffer, min_tokens=0)
    chunks = chunker.chunk("d", doc)
    assert [c.text for c in chunks] == [" ".join(CATS), " ".join(ROCKETS)]
    check_common(chunks, doc)
    assert chunker.chunk("d", doc) == chunks  # deterministic


def test_semantic_merges_small_group_into_closer_neighbour() -> None:
    # The middle sentence is about rockets and fish; its distance to the fish text is smaller.
    doc = " ".join(CATS) + " The rocket carried fish. " + FISH
    sents = [doc[s:e] for s, e in sentence_spans(doc)]
    split = SemanticChunker(topic_embed, buffer=0, breakpoint_percentile=50, min_tokens=0).chunk("d", doc)
    assert [c.text for c in split] == [" ".join(CATS), "The rocket carried fish.", " ".join(sents[5:])]
    merged = SemanticChunker(topic_embed, buffer=0, breakpoint_percentile=50, min_tokens=8).chunk("d", doc)
    assert [c.text for c in merged] == [" ".join(CATS), " ".join(sents[4:])]
    # When the merge would exceed size, the small piece stays on its own.
    size = max(count_tokens(" ".join(CATS)), count_tokens(FISH))
    assert count_tokens(" ".join(sents[4:])) > size and count_tokens(" ".join(sents[:5])) > size
    kept = SemanticChunker(topic_embed, size=size, buffer=0, breakpoint_percentile=50, min_tokens=8).chunk("d", doc)
    assert [c.text for c in kept] == [c.text for c in split]


def test_semantic_size_and_degenerate_documents() -> None:
    assert SemanticChunker(no_embed).chunk("d", "") == []
    assert SemanticChunker(no_embed).chunk("d", " \n ") == []
    assert [c.text for c in SemanticChunker(no_embed).chunk("d", "  Only one sentence here.  ")] == [
        "Only one sentence here."
    ]
    long_sentence = "word " * 100 + "end."
    chunks = SemanticChunker(no_embed, size=16, min_tokens=0).chunk("d", long_sentence)
    check_common(chunks, long_sentence)
    within_size(chunks, 16)
    # Too-long topic groups are cut to size.
    doc = " ".join(CATS * 5) + " " + " ".join(ROCKETS * 5)
    chunks = SemanticChunker(topic_embed, size=24, min_tokens=0).chunk("d", doc)
    check_common(chunks, doc)
    within_size(chunks, 24)
    assert not any("cat" in c.text.lower() and "rocket" in c.text.lower() for c in chunks)


def test_semantic_rejects_bad_embedder_output() -> None:
    doc = "First sentence. Second sentence."
    with pytest.raises(BenchError, match="shape"):
        SemanticChunker(lambda texts: np.zeros((1, 4))).chunk("d", doc)
    with pytest.raises(BenchError, match="NaN"):
        SemanticChunker(lambda texts: np.full((len(texts), 4), np.nan)).chunk("d", doc)


@pytest.mark.parametrize(
    "params",
    [
        {"size": 0},
        {"buffer": -1},
        {"min_tokens": -1},
        {"size": 8, "min_tokens": 9},
        {"breakpoint_percentile": 101},
        {"breakpoint_percentile": -1},
        {"breakpoint_percentile": float("nan")},
        {"breakpoint_percentile": "90"},
        {"size": 2.5},
        {"buffer": True},
    ],
)
def test_semantic_bad_parameters(params: dict) -> None:
    with pytest.raises(BenchError):
        SemanticChunker(topic_embed, **params)
    with pytest.raises(BenchError):
        SemanticChunker("not callable")  # type: ignore[arg-type]


# --- registry ------------------------------------------------------------------------------


def test_registry_and_make_chunker() -> None:
    assert {"sentences", "markdown", "semantic"} <= set(CHUNKER_KINDS)
    sw = make_chunker("sentences", sentences=4, overlap=2, size=100)
    assert isinstance(sw, SentenceWindowChunker) and (sw.sentences, sw.overlap, sw.size) == (4, 2, 100)
    md = make_chunker("markdown")
    assert isinstance(md, MarkdownSectionChunker) and (md.size, md.overlap) == (512, 0)
    sem = make_chunker("semantic", embed=topic_embed, size=64, min_tokens=8)
    assert isinstance(sem, SemanticChunker) and sem.embed is topic_embed and sem.size == 64
    assert (sem.breakpoint_percentile, sem.buffer) == (90.0, 1)
    assert isinstance(make_chunker("tokens", embed=topic_embed, size=5), CHUNKER_KINDS["tokens"])


def test_make_chunker_errors_for_new_kinds() -> None:
    with pytest.raises(BenchError, match=r"needs a model: set model = \"...\" in its \[chunkers.NAME\] table"):
        make_chunker("semantic", size=64)
    with pytest.raises(BenchError, match=r"did you mean 'sentences'"):
        make_chunker("sentence")
    with pytest.raises(BenchError, match=r"did you mean 'semantic'"):
        make_chunker("semantics", embed=topic_embed)
    with pytest.raises(BenchError, match=r"'sentence'.*did you mean 'sentences'"):
        make_chunker("sentences", sentence=2)
    with pytest.raises(BenchError, match=r"'breakpoint'.*did you mean 'breakpoint_percentile'"):
        make_chunker("semantic", embed=topic_embed, breakpoint=95)
    with pytest.raises(BenchError, match=r"has no parameter 'model'"):
        make_chunker("semantic", embed=topic_embed, model="minilm")
    with pytest.raises(BenchError, match=r"overlap"):
        make_chunker("markdown", size=4, overlap=4)


# --- properties ----------------------------------------------------------------------------

_ALPHABET = st.sampled_from([*"abcXYZ019 .,!?\n\r\t-#`~", "é", "日", "。", "😀", "\U0001f3fd", "\u0301", "Ω"])
_PIECES = st.one_of(
    st.text(_ALPHABET, max_size=30),
    st.text(max_size=12),  # any unicode
    st.text(st.sampled_from("abcdefgh😀日"), min_size=20, max_size=80),  # long runs without spaces
    st.sampled_from(
        [
            "\n\n",
            "\r\n",
            ". ",
            "! ",
            "。",
            "\n# Heading\n",
            "\n## Sub heading ##\n",
            "\n### Deep\n",
            "\n```\n",
            "\n~~~~\n",
            "# not heading?",
            "\n- item\n",
            "cat kitten. ",
            "rocket orbit! ",
            "fish fins? ",
            "   ",
        ]
    ),
)
DOCS = st.lists(_PIECES, max_size=10).map("".join)

PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(doc=DOCS, n=st.integers(1, 5), data=st.data())
def test_sentence_window_properties(doc: str, n: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, n - 1))
    size = data.draw(st.one_of(st.none(), st.integers(1, 24)))
    chunks = SentenceWindowChunker(n, overlap, size).chunk("d", doc)
    check_common(chunks, doc)
    sents = sentence_spans(doc)
    for c in chunks:
        assert touching(sents, c.start, c.end) <= n
        assert c.heading == ""
    for prev, nxt in zip(chunks, chunks[1:]):
        assert prev.start < nxt.start and prev.end < nxt.end, "chunk inside the previous one"
        shared = touching(sents, nxt.start, prev.end) if nxt.start < prev.end else 0
        assert shared <= overlap
        if size is None:
            assert shared == overlap
    if size is None:
        bounds = {s for s, _ in sents}, {e for _, e in sents}
        assert all(c.start in bounds[0] and c.end in bounds[1] for c in chunks)
        assert all(touching(sents, c.start, c.end) == n for c in chunks[:-1])
    else:
        within_size(chunks, size)


@PROPS
@given(doc=DOCS, size=st.integers(1, 40), data=st.data())
def test_markdown_properties(doc: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    chunks = MarkdownSectionChunker(size, overlap).chunk("d", doc)
    check_common(chunks, doc)
    within_size(chunks, size)
    sections = heading_sections(doc)
    assert sections[0][0] == 0 and sections[-1][1] == len(doc)
    assert all(e == s2 for (_, e, _), (s2, _, _) in zip(sections, sections[1:]))
    for c in chunks:
        assert any(s <= c.start and c.end <= e and c.heading == p for s, e, p in sections), "chunk crosses sections"
    for prev, nxt in zip(chunks, chunks[1:]):
        if overlap == 0 or prev.heading != nxt.heading:
            assert nxt.start >= prev.end
        elif nxt.start < prev.end:
            assert count_tokens(doc[nxt.start : prev.end]) <= overlap


@PROPS
@given(
    doc=DOCS,
    size=st.integers(1, 40),
    percentile=st.floats(0, 100),
    buffer=st.integers(0, 3),
    data=st.data(),
)
def test_semantic_properties(doc: str, size: int, percentile: float, buffer: int, data: st.DataObject) -> None:
    min_tokens = data.draw(st.integers(0, size))
    chunker = SemanticChunker(hashed_embed, size, percentile, buffer, min_tokens)
    chunks = chunker.chunk("d", doc)
    check_common(chunks, doc)
    within_size(chunks, size)
    assert chunker.chunk("d", doc) == chunks
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.start >= prev.end
    if len(sentence_spans(doc)) == 1 and count_tokens(doc.strip()) <= size:
        assert len(chunks) == 1
    for i, c in enumerate(chunks):
        if len(chunks) > 1 and count_tokens(c.text) < min_tokens:  # small only when no neighbour fits
            if i > 0:
                assert count_tokens(doc[chunks[i - 1].start : c.end]) > size
            if i + 1 < len(chunks):
                assert count_tokens(doc[c.start : chunks[i + 1].end]) > size
