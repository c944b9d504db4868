"""Chunkers: hand-made examples plus properties that must hold for any text."""

from __future__ import annotations

from bisect import bisect_left

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.chunking import (
    CHUNKER_KINDS,
    Chunk,
    FixedTokenChunker,
    RecursiveChunker,
    chunk_id,
    make_chunker,
)
from bench.chunking.tokens import count_tokens, token_char_offsets
from bench.errors import BenchError
from bench.text.scripts import grapheme_starts
from tests.chunking.test_sentence_markdown_semantic import trimmed

# --- helpers -------------------------------------------------------------------------------


def check_common(chunks: list[Chunk], doc: str, doc_id: str = "d") -> None:
    """Invariants shared by every chunker."""
    assert [c.id for c in chunks] == [chunk_id(doc_id, i) for i in range(len(chunks))]
    for c in chunks:
        assert c.doc_id == doc_id
        assert 0 <= c.start < c.end <= len(doc)
        assert c.text == doc[c.start : c.end]
        assert c.text.strip(), "whitespace-only chunk"
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)
    covered = [False] * len(doc)
    for c in chunks:
        covered[c.start : c.end] = [True] * (c.end - c.start)
    missing = [i for i, ch in enumerate(doc) if not ch.isspace() and not covered[i]]
    assert not missing, f"characters not in any chunk: {missing[:10]}"


def texts(doc: str) -> list[str]:
    return [c.text for c in FixedTokenChunker(3).chunk("d", doc)]


# --- tokens --------------------------------------------------------------------------------


def test_token_offsets_on_multibyte_text() -> None:
    doc = "a😀b 日本語 👍🏽é"
    tokens, offsets = token_char_offsets(doc)
    assert len(tokens) == len(offsets) == count_tokens(doc)
    assert offsets == sorted(offsets)
    assert all(0 <= o < len(doc) for o in offsets)
    assert offsets[0] == 0


def test_special_token_text_is_ordinary_text() -> None:
    doc = "before <|endoftext|> after"
    assert count_tokens(doc) > 3
    assert "".join(c.text for c in FixedTokenChunker(100).chunk("d", doc)) == doc
    assert RecursiveChunker(100).chunk("d", doc)[0].text == doc


def test_lone_surrogates_keep_offsets_valid() -> None:
    doc = "x\ud83d\ude00y \udc00 z"
    _, offsets = token_char_offsets(doc)
    assert offsets == sorted(offsets) and offsets[-1] < len(doc)
    check_common(FixedTokenChunker(1).chunk("d", doc), doc)
    check_common(RecursiveChunker(2).chunk("d", doc), doc)


# --- FixedTokenChunker ---------------------------------------------------------------------

WORDS = "one two three four five six seven"  # one cl100k token per word


def test_fixed_known_windows() -> None:
    assert count_tokens(WORDS) == 7
    assert texts(WORDS) == ["one two three", " four five six", " seven"]
    chunks = FixedTokenChunker(3, overlap=1).chunk("d", WORDS)
    assert [c.text for c in chunks] == ["one two three", " three four five", " five six seven"]
    assert [c.id for c in chunks] == ["d#0000", "d#0001", "d#0002"]
    check_common(chunks, WORDS)


def test_fixed_no_trailing_window_inside_previous() -> None:
    chunks = FixedTokenChunker(4, overlap=2).chunk("d", WORDS)
    assert [c.text for c in chunks] == ["one two three four", " three four five six", " five six seven"]


def test_fixed_skips_whitespace_windows() -> None:
    doc = "alpha" + " \n" * 50 + "omega"
    chunks = FixedTokenChunker(2).chunk("d", doc)
    check_common(chunks, doc)
    assert all(c.text.strip() for c in chunks)


@pytest.mark.parametrize("chunker", [FixedTokenChunker(5), RecursiveChunker(5)])
@pytest.mark.parametrize("doc", ["", "   ", "\n\r\n\t "])
def test_empty_and_blank_documents(chunker, doc: str) -> None:
    assert chunker.chunk("d", doc) == []


# --- RecursiveChunker ----------------------------------------------------------------------

PARAS = [
    "The first paragraph talks about cats. Cats are small.",
    "The second paragraph is about dogs! Dogs bark loudly.",
    "A third one covers birds? Birds can fly far away.",
]


def test_recursive_keeps_paragraphs_whole_when_they_fit() -> None:
    doc = "\n\n".join(PARAS)
    size = max(count_tokens(p) for p in PARAS)
    assert count_tokens(PARAS[0] + "\n\n" + PARAS[1]) > size
    chunks = RecursiveChunker(size).chunk("d", doc)
    assert [c.text for c in chunks] == PARAS
    check_common(chunks, doc)
    assert [c.text for c in RecursiveChunker(1000).chunk("d", doc)] == [doc]


def test_recursive_merges_small_paragraphs() -> None:
    doc = "\n\n".join(PARAS)
    size = count_tokens(PARAS[0] + "\n\n" + PARAS[1])
    assert [c.text for c in RecursiveChunker(size).chunk("d", doc)] == [
        PARAS[0] + "\n\n" + PARAS[1],
        PARAS[2],
    ]


def test_recursive_splits_big_paragraph_at_sentences() -> None:
    doc = PARAS[0] + "\n\nShort one."
    size = count_tokens("The first paragraph talks about cats.")
    chunks = RecursiveChunker(size).chunk("d", doc)
    assert [c.text for c in chunks] == ["The first paragraph talks about cats.", "Cats are small.", "Short one."]


def test_markdown_heading_stays_with_its_paragraph() -> None:
    doc = "# Cats\n\nCats are small and independent.\n\n# Dogs\n\nDogs are loyal and loud."
    size = count_tokens("# Cats\n\nCats are small and independent.")
    chunks = RecursiveChunker(size).chunk("d", doc)
    assert [c.text for c in chunks] == [
        "# Cats\n\nCats are small and independent.",
        "# Dogs\n\nDogs are loyal and loud.",
    ]


def test_recursive_overlap_carries_whole_trailing_sentences() -> None:
    doc = "Cats run. Dogs bark. Birds fly. Cows moo."
    assert [count_tokens(s) for s in ("Cats run.", "Dogs bark.", "Birds fly.", "Cows moo.")] == [4, 4, 4, 4]
    chunks = RecursiveChunker(8, overlap=4).chunk("d", doc)
    assert [c.text for c in chunks] == ["Cats run. Dogs bark.", "Dogs bark. Birds fly.", "Birds fly. Cows moo."]
    check_common(chunks, doc)


def test_sentence_free_text_falls_back_to_token_windows() -> None:
    doc = "abcdefghijklmnopqrstuvwxyz0123456789" * 40
    chunks = RecursiveChunker(16).chunk("d", doc)
    check_common(chunks, doc)
    assert len(chunks) >= count_tokens(doc) // 16
    assert "".join(c.text for c in chunks) == doc  # contiguous, nothing lost
    assert all(count_tokens(c.text) <= 16 for c in chunks)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_non_ascii_emoji_and_cjk(size: int) -> None:
    doc = "Café naïve 😀👍🏽🇫🇷 日本語のテキストです。次の文！ Ελληνικά κείμενο. العربية"
    for chunker in (FixedTokenChunker(size), FixedTokenChunker(size + 1, overlap=1), RecursiveChunker(size)):
        chunks = chunker.chunk("doc", doc)
        check_common(chunks, doc, "doc")
    recursive = RecursiveChunker(size).chunk("doc", doc)
    assert all(count_tokens(c.text) <= size or len(grapheme_starts(c.text)) == 1 for c in recursive)


def test_cjk_sentences_split_without_spaces() -> None:
    doc = "日本語のテキストです。次の文です。三つ目の文。"
    size = count_tokens("日本語のテキストです。")
    chunks = RecursiveChunker(size).chunk("d", doc)
    assert chunks[0].text == "日本語のテキストです。"
    check_common(chunks, doc)


def test_crlf_text() -> None:
    doc = "Line one.\r\nLine two.\r\n\r\nSecond paragraph.\r\nMore text here.\r\n"
    size = count_tokens("Second paragraph.\r\nMore text here.")
    assert count_tokens("Line one.\r\nLine two.") <= size
    chunks = RecursiveChunker(size).chunk("d", doc)
    assert [c.text for c in chunks] == ["Line one.\r\nLine two.", "Second paragraph.\r\nMore text here."]
    for chunker in (FixedTokenChunker(3), FixedTokenChunker(4, 2), RecursiveChunker(3, 1)):
        check_common(chunker.chunk("d", doc), doc)


# --- parameters and registry ---------------------------------------------------------------


@pytest.mark.parametrize("cls", [FixedTokenChunker, RecursiveChunker])
@pytest.mark.parametrize(
    ("size", "overlap"), [(0, 0), (-3, 0), (5, 5), (5, 7), (5, -1), (2.5, 0), (True, 0), ("8", 0), (8, None)]
)
def test_bad_parameters(cls, size, overlap) -> None:
    with pytest.raises(BenchError):
        cls(size, overlap)


def test_make_chunker() -> None:
    assert {"tokens", "recursive"} <= set(CHUNKER_KINDS)
    assert isinstance(make_chunker("tokens", size=10, overlap=2), FixedTokenChunker)
    chunker = make_chunker("recursive", size=10)
    assert isinstance(chunker, RecursiveChunker) and chunker.overlap == 0


def test_make_chunker_errors() -> None:
    with pytest.raises(BenchError, match=r"did you mean 'recursive'.*recursive.*tokens"):
        make_chunker("recursiv", size=3)
    with pytest.raises(BenchError, match=r"'sise'.*did you mean 'size'"):
        make_chunker("tokens", sise=3)
    with pytest.raises(BenchError, match=r"'size'"):
        make_chunker("recursive", overlap=1)
    with pytest.raises(BenchError, match=r"overlap"):
        make_chunker("tokens", size=3, overlap=3)


# --- properties ----------------------------------------------------------------------------

_ALPHABET = st.sampled_from(
    [*"abcXYZ019 .,!?\n\r\t-", "é", "ß", "日", "本", "。", "😀", "👍", "\U0001f3fd", "\u0301", "Ω"]
)
_PIECES = st.one_of(
    st.text(_ALPHABET, max_size=40),
    st.text(max_size=20),  # any unicode
    st.text(st.sampled_from("abcdefghijklmnop😀日"), min_size=30, max_size=120),  # long runs without spaces
    st.sampled_from(["\n\n", "\r\n", ". ", "! ", "# Heading\n\n", "<|endoftext|>", "   "]),
)
DOCS = st.lists(_PIECES, max_size=12).map("".join)
ASCII_DOCS = st.lists(
    st.one_of(
        st.text(st.sampled_from("abcd XY.\n"), max_size=40),
        st.text(st.sampled_from("abcdefgh"), min_size=20, max_size=80),
    ),
    max_size=8,
).map("".join)

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def size_overlap(draw, max_size: int = 12) -> tuple[int, int]:
    size = draw(st.integers(1, max_size))
    return size, draw(st.integers(0, size - 1))


@PROPS
@given(doc=DOCS, params=size_overlap())
def test_fixed_properties(doc: str, params: tuple[int, int]) -> None:
    size, overlap = params
    check_common(FixedTokenChunker(size, overlap).chunk("d", doc), doc)


@PROPS
@given(doc=ASCII_DOCS, params=size_overlap())
def test_fixed_windows_are_exact(doc: str, params: tuple[int, int]) -> None:
    """On ASCII every token starts at its own character, so windows can be read back exactly."""
    size, overlap = params
    step = size - overlap
    _, offsets = token_char_offsets(doc)
    n = len(offsets)
    chunks = FixedTokenChunker(size, overlap).chunk("d", doc)
    check_common(chunks, doc)
    windows = []
    for c in chunks:
        first, last = offsets.index(c.start), bisect_left(offsets, c.end)
        assert first % step == 0
        assert last - first == size or last == n
        windows.append((first, last))
    for (first, last), (nxt, _) in zip(windows, windows[1:]):
        assert nxt > first
        if nxt == first + step:
            assert last - nxt == overlap
    if chunks:
        assert windows[-1][1] == n or not doc[chunks[-1].end :].strip()


@PROPS
@given(doc=DOCS, params=size_overlap())
def test_recursive_properties(doc: str, params: tuple[int, int]) -> None:
    size, overlap = params
    chunks = RecursiveChunker(size, overlap).chunk("d", doc)
    check_common(chunks, doc)
    for c in chunks:
        assert count_tokens(c.text) <= size or len(grapheme_starts(c.text)) == 1
        assert trimmed(c.text)
    for prev, nxt in zip(chunks, chunks[1:]):
        assert not (prev.start <= nxt.start and nxt.end <= prev.end), "chunk inside the previous one"
        if overlap == 0:
            assert nxt.start >= prev.end
        elif nxt.start < prev.end:
            assert count_tokens(doc[nxt.start : prev.end]) <= overlap


@PROPS
@given(doc=ASCII_DOCS, size=st.integers(4, 40))
def test_recursive_without_overlap_tiles_the_document(doc: str, size: int) -> None:
    chunks = RecursiveChunker(size).chunk("d", doc)
    rebuilt = "".join(doc[c.start : c.end] for c in chunks)
    assert "".join(rebuilt.split()) == "".join(doc.split())
