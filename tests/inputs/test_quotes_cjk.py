"""Quotes in Chinese, Japanese and Thai resolve as a reader copies them: line breaks and spaces an
extractor put between characters, corner brackets for curly quotes, full-width punctuation for
half-width; any text at all gives a span or a QuoteError, never another exception."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.inputs.quotes import QuoteError, find_quote, normalise, normalised
from tests.inputs.cmrc_quotes import CHANGES, CMRC, answers, resolved


def overlapping(haystack: str, needle: str) -> int:
    return sum(1 for i in range(len(haystack)) if haystack.startswith(needle, i))


def span_of(text: str, quote: str) -> str:
    start, end = find_quote(text, quote)
    return text[start:end]


# --- by hand ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "quote", "span"),
    [
        # a line break or a space an extractor put between two characters, in the document ...
        ("我们每隔十八个\n月检查一次", "每隔十八个月", "每隔十八个\n月"),
        ("我 们 每 隔 十 八 个 月", "每隔十八个月", "每 隔 十 八 个 月"),
        ("我们每隔十八个\r\n  月检查", "十八个月检查", "十八个\r\n  月检查"),
        # ... or in the quote
        ("我们每隔十八个月检查一次", "每隔十八\n个月", "每隔十八个月"),
        ("我们每隔十八个月检查一次", "每 隔 十 八 个 月", "每隔十八个月"),
        # beside CJK punctuation and Latin words written in Chinese text
        ("检查一次。\n然后休息", "一次。然后", "一次。\n然后"),
        ("使用 Python 开发", "使用Python开发", "使用 Python 开发"),
        ("分析（\nHC=CHOH）结果", "分析（HC=CHOH）", "分析（\nHC=CHOH）"),
        ("日本語の\nテキスト です", "日本語のテキストです", "日本語の\nテキスト です"),
        ("ภาษาไทย\nเป็นภาษา", "ภาษาไทยเป็นภาษา", "ภาษาไทย\nเป็นภาษา"),
        # corner brackets are quote marks
        ("他说「走吧」然后", "他说“走吧”", "他说「走吧」"),
        ("他说“走吧”然后", "他说「走吧」", "他说“走吧”"),
        ("书名『红楼梦』", "书名‘红楼梦’", "书名『红楼梦』"),
        ("他说﹁走吧﹂", "他说「走吧」", "他说﹁走吧﹂"),  # vertical forms
        ("约翰·史密斯", "约翰・史密斯", "约翰·史密斯"),  # middle dots
        ("十時〜十二時", "十時～十二時", "十時〜十二時"),  # wave dash and full-width tilde
        # full-width and half-width punctuation (NFKC)
        ("甲，乙：丙；丁！戊？（己）", "甲,乙:丙;丁!戊?(己)", "甲，乙：丙；丁！戊？（己）"),
        ("甲,乙:丙;丁!戊?(己)", "甲，乙：丙；丁！戊？（己）", "甲,乙:丙;丁!戊?(己)"),
        ("ｶﾀｶﾅ", "カタカナ", "ｶﾀｶﾅ"),
    ],
)
def test_a_reader_copy_of_cjk_text_resolves(text: str, quote: str, span: str) -> None:
    assert span_of(text, quote) == span


def test_an_ideographic_full_stop_is_not_a_period() -> None:
    """。 and . look different on the page: a quote with one does not name text with the other."""
    with pytest.raises(QuoteError, match="not found"):
        find_quote("检查一次。然后休息", "一次.然后")
    assert normalise("一次｡然后") == "一次。然后"  # the half-width ideographic stop is the same mark


def test_spaces_between_latin_words_still_count() -> None:
    assert normalise("使用 Python 开发 the tool") == "使用Python开发the tool"
    with pytest.raises(QuoteError):
        find_quote("使用 Python 开发 the tool", "使用Python开发thetool")
    assert normalise("Äynú (x) [y]") == "Äynú (x) [y]"  # no CJK: nothing changes


def test_whitespace_is_ignored_only_beside_unspaced_scripts() -> None:
    n = normalised("甲 乙\n丙 abc def 丁")
    assert n.text == "甲乙丙abc def丁"
    assert [int(x) for x in n.lo] == [0, 2, 4, 6, 7, 8, 9, 10, 11, 12, 14]


def test_a_quote_that_only_whitespace_tells_apart_is_ambiguous() -> None:
    with pytest.raises(QuoteError, match=r"more than once.*2 times"):
        find_quote("棒球 运动和棒球\n运动", "棒球运动")


# --- CMRC 2018: every answer, garbled as an extractor garbles it -----------------------------------

INHERENTLY_AMBIGUOUS = 3  # the same words again elsewhere, told apart only by whitespace or width


@pytest.fixture(scope="module")
def cmrc() -> None:
    if not CMRC.is_dir():
        pytest.skip(f"{CMRC} not present")


@pytest.mark.parametrize("change", [*CHANGES, *(f"quote_{c}" for c in CHANGES)])
def test_cmrc_answers_resolve_to_their_own_span(cmrc: None, change: str) -> None:
    ok, total, failures = resolved(change)
    assert total == len(answers()) > 3000
    if change.endswith("cornered") or change == "quote_wrapped":
        assert ok == total, failures[:3]
    else:
        # left: ambiguity no reader could resolve either, and a half-width "(" typed for a
        # full-width "（" next to a space, which then counts where the full-width one's does not
        assert total - ok <= INHERENTLY_AMBIGUOUS + 2, failures[:5]
        assert all("more than once" in f or "（" in f or "(" in f for f in failures), failures[:5]


# --- any text ---------------------------------------------------------------------------------------

PIECES = st.sampled_from(
    [*"我们每隔十八个月就会进行", "。", "，", "「", "」", "“", "”", "（", "）", "(", ")", " ", "\n", "\u3000", "ก", "ิ"]
    + ["e\u0301", "👨\u200d👩\u200d👧", "\ud800", "‧", "·", "〜", "～", "a", "b", "-", "\u00ad", "|", "#"]
)
DOCS = st.lists(st.one_of(PIECES, st.text(max_size=4)), min_size=1, max_size=40).map("".join).filter(bool)
PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(text=DOCS, data=st.data())
def test_any_quote_of_any_text_resolves_or_says_why(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    quote = data.draw(st.one_of(st.just(text[i:j]), st.text(max_size=10), DOCS))
    try:
        start, end = find_quote(text, quote)
    except QuoteError:
        return
    assert 0 <= start < end <= len(text)
    assert normalise(text[start:end]).strip() == normalise(quote).strip()


WORDS = st.sampled_from(["我们", "每隔", "十八个", "月", "就会", "进行", "。", "，", "「检查」"])


@PROPS
@given(words=st.lists(WORDS, min_size=2))
def test_whitespace_anywhere_between_chinese_characters_is_invisible(words: list[str]) -> None:
    """A passage with line breaks and spaces put anywhere between its characters, in the document
    or the quote, resolves to the passage: its first character to its last."""
    rng = random.Random(len(words))
    passage = "".join(words)
    doc_gaps = "".join(ch + rng.choice(["", "", "\n", " ", "\r\n", "\u3000 "]) for ch in passage).rstrip()
    quote = "".join(ch + rng.choice(["", "", "\n", " "]) for ch in passage)
    text = "前言：" + doc_gaps + "。后记"
    if overlapping(text, doc_gaps) == 1 and overlapping(normalise(text), normalise(passage)) == 1:
        start, end = find_quote(text, quote)
        assert text[start:end] == doc_gaps


def test_normalising_a_megabyte_of_wrapped_chinese_is_fast() -> None:
    rng = random.Random(3)
    chars = "我们每隔十八个月就会进行一次全面的系统检查以确保所有设备都处于良好的运行状态，。「」（）、 "
    lines = ["".join(rng.choices(chars, k=rng.randint(20, 40))) for _ in range(33_000)]
    text = "\n".join(lines)[:1_000_000]
    started = time.perf_counter()
    n = normalised(text)
    assert time.perf_counter() - started < 1.0
    assert "\n" not in n.text and " " not in n.text
    quote = text[500_000:500_200]
    if normalise(text).count(normalise(quote).strip()) == 1:
        started = time.perf_counter()
        start, end = find_quote(text, quote.replace("\n", ""))
        assert time.perf_counter() - started < 1.0
        assert normalise(text[start:end]) == normalise(quote).strip()
