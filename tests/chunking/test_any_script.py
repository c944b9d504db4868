"""Every chunker on text of any script: Chinese, Japanese, Thai, Devanagari, marks, emoji
sequences, lone surrogates. Properties for random text, and examples worked out by hand."""

from __future__ import annotations

import re
import zlib
from bisect import bisect_left

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.chunking import (
    Chunk,
    FixedTokenChunker,
    MarkdownSectionChunker,
    RecursiveChunker,
    SemanticChunker,
    SentenceWindowChunker,
    chunk_id,
)
from bench.chunking.boundaries import _FIRST_CJK, CLAUSE, CutPoints
from bench.chunking.sentences import sentence_spans
from bench.chunking.tokens import count_tokens, token_char_offsets
from bench.errors import BenchError
from bench.text.scripts import CJK, grapheme_starts

# --- what every chunk of every chunker must be ---------------------------------------------------


def clusters(text: str) -> list[str]:
    starts = grapheme_starts(text)
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]


def check(chunks: list[Chunk], doc: str, *, stripped: bool = True) -> None:
    """Exact slices, in order, on grapheme cluster boundaries, covering every visible character."""
    bounds = {*grapheme_starts(doc), len(doc)}
    assert [c.id for c in chunks] == [chunk_id("d", i) for i in range(len(chunks))]
    for c in chunks:
        assert 0 <= c.start < c.end <= len(doc)
        assert c.text == doc[c.start : c.end]
        assert c.start in bounds and c.end in bounds, f"chunk {c.text!r} cuts a grapheme cluster"
        assert c.text.strip() or not all(p.isspace() for p in clusters(c.text)), "whitespace-only chunk"
        if stripped:
            parts = clusters(c.text)
            assert not parts[0].isspace() and not parts[-1].isspace(), f"untrimmed chunk {c.text!r}"
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    covered = np.zeros(len(doc), dtype=bool)
    for c in chunks:
        covered[c.start : c.end] = True
    missing = [i for i, ch in enumerate(doc) if not ch.isspace() and not covered[i]]
    assert not missing, f"characters in no chunk: {[doc[i] for i in missing[:10]]}"


def within(chunks: list[Chunk], size: int) -> None:
    for c in chunks:
        assert count_tokens(c.text) <= size or len(clusters(c.text)) == 1, f"{c.text!r} over {size} tokens"


def window_within(chunks: list[Chunk], doc: str, size: int) -> None:
    """A token window holds at most ``size`` of the document's tokens (counted where they start),
    give or take the other tokens of the one character it starts with, unless it is one cluster."""
    _, offsets = token_char_offsets(doc)
    for c in chunks:
        held = bisect_left(offsets, c.end) - bisect_left(offsets, c.start)
        assert held <= size + 3 or len(clusters(c.text)) == 1, f"{c.text!r} holds {held} tokens, size {size}"


def hashed_embed(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), 8))
    for i, t in enumerate(texts):
        for w in re.findall(r"\w", t):
            out[i, zlib.crc32(w.encode("utf-8", "surrogatepass")) % 8] += 1
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


# --- random text of every script -----------------------------------------------------------------

CHINESE = "我们每隔十八个月就会进行一次全面的系统检查以确保所有设备都处于良好的运行状态北京大学"
PIECES = [
    "。",
    "，",
    "、",
    "；",
    "：",
    "！",
    "？",
    "……",
    "．",
    "“",
    "”",
    "「",
    "」",
    "『",
    "』",
    "（",
    "）",
    "\n",
    "\n\n",
    "\r\n",
    " ",
    "\u3000",
    ". ",
    ".",
    "1999年",
    "3.14",
    "コンピューター",
    "ひらがな",
    "ภาษาไทย ",
    "กิ่",
    "क्षि",
    "नमस्ते। ",
    "e\u0301",
    " \u0301",
    "\u0600 ",
    "\u0600x",
    "👨\u200d👩\u200d👧\u200d👦",
    "👍🏽",
    "🇫🇷",
    "1\ufe0f\u20e3",
    "\u1100\u1161\u11a8",
    "\ud800",
    "\udc00x",
    "# 标题\n",
    "- 项目\n",
    "abc def",
]
TEXT = st.lists(
    st.one_of(
        st.text(st.sampled_from(CHINESE), min_size=1, max_size=40),
        st.sampled_from(PIECES),
        st.text(max_size=8),  # any code point hypothesis draws, all categories
        st.text(st.characters(categories=["Mn", "Me", "Mc", "Cf", "Zs", "Cs", "So"]), max_size=4),
    ),
    max_size=30,
).map("".join)

PROPS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(chunker, doc: str) -> list[Chunk]:
    try:
        return chunker.chunk("d", doc)
    except BenchError:
        return []


@PROPS
@given(doc=TEXT, size=st.integers(1, 24), data=st.data())
def test_token_windows_on_any_script(doc: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    chunks = run(FixedTokenChunker(size, overlap), doc)
    check(chunks, doc, stripped=False)
    window_within(chunks, doc, size)
    for prev, nxt in zip(chunks, chunks[1:]):
        assert prev.start < nxt.start and prev.end < nxt.end


@PROPS
@given(doc=TEXT, size=st.integers(1, 24), data=st.data())
def test_recursive_on_any_script(doc: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    chunks = run(RecursiveChunker(size, overlap), doc)
    check(chunks, doc)
    within(chunks, size)


@PROPS
@given(doc=TEXT, n=st.integers(1, 4), size=st.one_of(st.none(), st.integers(1, 24)), data=st.data())
def test_sentences_on_any_script(doc: str, n: int, size: int | None, data: st.DataObject) -> None:
    chunks = run(SentenceWindowChunker(n, data.draw(st.integers(0, n - 1)), size), doc)
    check(chunks, doc)
    if size is not None:
        within(chunks, size)
    bounds = {*grapheme_starts(doc), len(doc)}
    assert all(s in bounds and e in bounds for s, e in sentence_spans(doc))


@PROPS
@given(doc=TEXT, size=st.integers(1, 24), data=st.data())
def test_markdown_on_any_script(doc: str, size: int, data: st.DataObject) -> None:
    chunks = run(MarkdownSectionChunker(size, data.draw(st.integers(0, size - 1))), doc)
    check(chunks, doc)
    within(chunks, size)


@PROPS
@given(doc=TEXT, size=st.integers(1, 24), percentile=st.floats(0, 100), data=st.data())
def test_semantic_on_any_script(doc: str, size: int, percentile: float, data: st.DataObject) -> None:
    min_tokens = data.draw(st.integers(0, size))
    chunks = run(SemanticChunker(hashed_embed, size, percentile, 1, min_tokens), doc)
    check(chunks, doc)
    within(chunks, size)


# --- sentences and clauses of Chinese, Japanese, Thai, Hindi -------------------------------------


@pytest.mark.parametrize(
    ("doc", "sentences"),
    [
        ("他说：“好的！”然后走了。", ["他说：“好的！”", "然后走了。"]),
        ("第一句；第二句。第三句", ["第一句；第二句。", "第三句"]),  # ；joins clauses of one sentence
        ("等等……然后呢？「是的。」好", ["等等……", "然后呢？", "「是的。」", "好"]),
        ("他走了.我们留下!你呢?好", ["他走了.", "我们留下!", "你呢?", "好"]),
        ("版本v1.0发布。圆周率3.14。", ["版本v1.0发布。", "圆周率3.14。"]),  # a decimal point is no end
        ("全角３．１４不断．下一句", ["全角３．１４不断．", "下一句"]),
        ("日本語です。次の文！", ["日本語です。", "次の文！"]),
        ("ภาษาไทยเป็นภาษา ที่สวยงาม มาก", ["ภาษาไทยเป็นภาษา", "ที่สวยงาม", "มาก"]),
        ("यह पहला वाक्य है। यह दूसरा है॥ तीसरा", ["यह पहला वाक्य है।", "यह दूसरा है॥", "तीसरा"]),
        ("Hello world. 你好", ["Hello world.", "你好"]),
        ("wait…what. Yes", ["wait…what.", "Yes"]),  # English keeps its rule: no space, no end
    ],
)
def test_sentence_ends_of_every_script(doc: str, sentences: list[str]) -> None:
    assert [doc[s:e] for s, e in sentence_spans(doc)] == sentences


def test_recursive_cuts_chinese_at_clauses_then_words() -> None:
    clause = "我们每隔十八个月就会进行一次全面的系统检查"
    doc = f"{clause}，{clause}；{clause}、{clause}"
    size = count_tokens(clause + "，")
    chunks = RecursiveChunker(size).chunk("d", doc)
    assert [c.text for c in chunks] == [f"{clause}，", f"{clause}；", f"{clause}、", clause]
    # too long for a clause: cut between jieba's words, never inside 十八, 系统 or 检查
    words = RecursiveChunker(8).chunk("d", clause)
    assert "".join(c.text for c in words) == clause
    for c in words:
        assert count_tokens(c.text) <= 8
    cuts = {c.end for c in words[:-1]}
    assert len(cuts) >= 2
    for word in ("我们", "每隔", "进行", "一次", "全面", "系统", "检查"):
        at = clause.index(word)
        assert not any(at < cut < at + len(word) for cut in cuts), f"{word} cut"


def test_half_width_commas_between_chinese_are_clauses() -> None:
    parts = ["我们每隔十八个月,", "就会进行一次全面的系统检查;", "以确保所有设备都处于良好的运行状态"]
    size = max(map(count_tokens, parts))
    assert all(count_tokens(a + b) > size for a, b in zip(parts, parts[1:]))
    assert [c.text for c in RecursiveChunker(size).chunk("d", "".join(parts))] == parts
    assert CLAUSE.search("one,two;three:four, five; six: seven") is None  # English has no clause level


def test_token_windows_end_between_words_and_clusters() -> None:
    doc = "我们每隔十八个月就会进行一次全面的系统检查，以确保所有设备都处于良好的运行状态。" * 4
    points = CutPoints(doc)
    for size, overlap in ((5, 0), (12, 3), (31, 8)):
        chunks = FixedTokenChunker(size, overlap).chunk("d", doc)
        check(chunks, doc, stripped=False)
        assert all(points.word_start(c.end) == c.end for c in chunks)
        assert all(points.word_start(c.start) == c.start for c in chunks)
    # 系统 is one word: a window meant to end between 系 and 统 ends before 系
    at = doc.index("系统") + 1
    assert points.word_start(at) == at - 1
    assert points.before(at, 0) == at - 1


def test_katakana_runs_numbers_and_latin_words_in_cjk_stay_whole() -> None:
    doc = "これはコンピューターです。1999年にHeseriが来た。"
    points = CutPoints(doc)
    k = doc.index("コンピューター")
    assert all(points.word_start(i) == k for i in range(k + 1, k + 7))
    n = doc.index("1999")
    assert [points.word_start(i) for i in range(n + 1, n + 4)] == [n, n, n]
    h = doc.index("Heseri")
    assert points.word_start(h + 3) == h
    english = "In 1999 the Heseri came. 北京"  # English around: numbers and words are cut as before
    assert CutPoints(english).word_start(english.index("1999") + 2) == english.index("1999") + 2


@pytest.mark.parametrize("size", [1, 2, 3])
def test_emoji_sequences_and_marks_are_never_cut(size: int) -> None:
    doc = "👨\u200d👩\u200d👧\u200d👦 e\u0301\u0302 क्षि กิ่ 🇫🇷🇩🇪 1\ufe0f\u20e3"
    for chunker in (FixedTokenChunker(size), FixedTokenChunker(size + 1, 1), RecursiveChunker(size)):
        chunks = chunker.chunk("d", doc)
        check(chunks, doc, stripped=isinstance(chunker, RecursiveChunker))
    family = RecursiveChunker(size).chunk("d", doc)[0]
    assert family.text == "👨\u200d👩\u200d👧\u200d👦"  # one cluster of 7 code points, over size: alone


def test_a_space_with_an_accent_is_visible_text() -> None:
    doc = "abc \u0301def"
    assert [doc[s:e] for s, e in sentence_spans(doc)] == [doc]
    chunks = RecursiveChunker(1).chunk("d", doc)
    check(chunks, doc)
    assert " \u0301" in [c.text for c in chunks] or any(c.text.startswith(" \u0301") for c in chunks)


# --- cut points agree with the Unicode rules --------------------------------------------------------


@PROPS
@given(doc=TEXT)
def test_cluster_starts_agree_with_the_regex_module(doc: str) -> None:
    """The shortcuts of CutPoints (two characters settle most offsets) against the ``\\X`` clusters."""
    starts = [*grapheme_starts(doc), len(doc)]
    points = CutPoints(doc)
    for i in range(len(doc) + 1):
        want = max(s for s in starts if s <= i)
        assert points.cluster_before(i) == want, i
        if i in starts[:-1]:
            assert points.cluster_after(i) == starts[starts.index(i) + 1]


def test_a_long_run_of_marks_is_read_whole() -> None:
    doc = "x" + "\u0301" * 600 + "y" + "e\u0301" * 300 + "z"
    points = CutPoints(doc)
    assert points.cluster_before(500) == 0 and points.cluster_after(0) == 601
    assert points.cluster_before(604) == 604 and points.cluster_before(605) == 604
    chunks = RecursiveChunker(4).chunk("d", doc)
    check(chunks, doc)
    assert chunks[0].text == doc[:601]  # one cluster of 601 code points: over size, alone


def test_no_cjk_character_comes_before_the_first_one_a_text_is_checked_for():
    """A text whose largest character is below ``_FIRST_CJK`` is taken to hold no CJK unscanned."""
    assert not any(CJK.match(chr(c)) for c in range(ord(_FIRST_CJK)) if not 0xD800 <= c <= 0xDFFF)
    assert CJK.match(_FIRST_CJK)
    latin = "Café Müller — 1999 edition, naïve"  # past ASCII, no CJK: ASCII words stay where cut
    assert CutPoints(latin).word_start(latin.index("999")) == latin.index("999")
    mixed = "满语Heseri的"
    assert CutPoints(mixed).word_start(mixed.index("eseri")) == mixed.index("Heseri")
