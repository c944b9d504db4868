"""Quotes resolve as a reader copies them: verbatim first, then on the normalised text, with the span
always in the original text's offsets; errors name the places or the closest passage."""

from __future__ import annotations

import random
import re
import time

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bench.errors import BenchError
from bench.inputs.goldset import resolve_quote
from bench.inputs.quotes import QuoteError, find_quote, normalise, normalised


def span_of(text: str, quote: str) -> str:
    start, end = find_quote(text, quote)
    return text[start:end]


def error(text: str, quote: str, **kw) -> str:
    with pytest.raises(QuoteError) as err:
        find_quote(text, quote, **kw)
    message = str(err.value)
    assert "\n" not in message and "\r" not in message
    return message


def occurrences(haystack: str, needle: str) -> int:
    return sum(1 for i in range(len(haystack)) if haystack.startswith(needle, i))


# --- rule 1: verbatim ------------------------------------------------------------------------------


def test_verbatim_quote_is_its_exact_span() -> None:
    text = "Alpha beta.\n\nGamma  delta — epsilon."
    assert find_quote(text, "Gamma  delta") == (13, 25)
    assert find_quote(text, "beta.\r\n\r\nGamma") == (6, 18)  # CRLF in the quote reads as LF


def test_verbatim_quote_kept_even_when_the_normalised_form_repeats() -> None:
    text = "see the ﬁle now; see the file later"
    assert find_quote(text, "see the file") == (17, 29)


def test_verbatim_repeat_is_ambiguous_with_count_and_places() -> None:
    message = error("one two one two one", "one", locate=lambda at: f"p. {at // 8 + 1}")
    assert "more than once" in message and "3 times" in message
    assert "0 (p. 1), 8 (p. 2), 16 (p. 3)" in message
    assert "quote a longer passage or give start/end" in message


# --- rule 2: normalised, mapped back to the original ----------------------------------------------

PDF_PAGE = (
    "Travel  expenses are re-\nimbursed within thirty days of sub-\n  mission. Receipts for the\n"
    "ﬁrst and last night’s hotel must be at-\ntached to the claim; a “per diem” covers\nmeals."
)


def test_pdf_like_wrapped_and_hyphenated_text_matches_the_clean_sentence() -> None:
    quote = "expenses are reimbursed within thirty days of submission. Receipts for the first and last night's hotel"
    start, end = find_quote(PDF_PAGE, quote)
    assert PDF_PAGE[start:end] == (
        "expenses are re-\nimbursed within thirty days of sub-\n  mission. Receipts for the\n"
        "ﬁrst and last night’s hotel"
    )
    assert start == PDF_PAGE.index("expenses")
    assert span_of(PDF_PAGE, 'attached to the claim; a "per diem" covers meals.') == (
        "at-\ntached to the claim; a “per diem” covers\nmeals."
    )


@pytest.mark.parametrize(
    ("text", "quote", "span"),
    [
        ("He said “hello” to me", 'said "hello" to', "said “hello” to"),
        ('He said "hello" to me', "said “hello” to", 'said "hello" to'),
        ("it’s «fine» ‚now‛", "it's \"fine\" 'now'", "it’s «fine» ‚now‛"),
        ("a 5′ 3″ man", "5' 3\" man", "5′ 3″ man"),
        ("pay\u00a0100\u202feuros\tnow", "pay 100 euros now", "pay\u00a0100\u202feuros\tnow"),
        ("line one\u2028line two", "one line", "one\u2028line"),
        ("  spaced   out \n\n words ", "spaced out words", "spaced   out \n\n words"),
        ("the ﬁrst ﬂoor oﬃce", "the first floor office", "the ﬁrst ﬂoor oﬃce"),
        ("co\u00adop\u00aderate fully", "cooperate fully", "co\u00adop\u00aderate fully"),
        ("zero\u200bwidth\u2060joined\ufeff", "zerowidthjoined", "zero\u200bwidth\u2060joined"),
        ("pages 3–5 and 7—9", "pages 3-5 and 7-9", "pages 3–5 and 7—9"),
        ("minus −4 or ‐ here", "minus -4 or - here", "minus −4 or ‐ here"),
        ("ＦＵＬＬ width ①", "FULL width 1", "ＦＵＬＬ width ①"),
        ("  pad me  ", " \n pad me\n", "pad me"),
    ],
)
def test_invisible_differences_are_ignored(text: str, quote: str, span: str) -> None:
    assert span_of(text, quote) == span


def test_every_kind_of_space_reads_as_one_space() -> None:
    spaces = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    assert all(normalise(f"a{c} {c}b") == "a b" for c in spaces), [c for c in spaces if normalise(f"a{c}b") != "a b"]


@pytest.mark.parametrize("text", ["a hyphen-\nated word", "a hyphen- ated word", "a hyphen-\n  ated word"])
def test_a_word_hyphenated_across_a_line_matches_it_whole(text: str) -> None:
    start, end = find_quote(text, "hyphenated word")
    assert (start, end) == (2, len(text))


@pytest.mark.parametrize("text_form", ["well-known", "well-\nknown", "wellknown"])
@pytest.mark.parametrize("quote_form", ["well-known", "well-\nknown", "wellknown", "well- known"])
def test_hyphen_between_letters_is_optional_on_both_sides(text_form: str, quote_form: str) -> None:
    text = f"a {text_form} fact"
    assert span_of(text, f"{quote_form} fact") == f"{text_form} fact"


def test_a_spaced_dash_is_not_a_hyphen_and_digits_keep_theirs() -> None:
    assert span_of("yes - no", "yes - no") == "yes - no"
    with pytest.raises(QuoteError):
        find_quote("yes - no", "yesno")
    assert span_of("pages 12-\n14 only", "pages 12-14") == "pages 12-\n14"
    with pytest.raises(QuoteError):
        find_quote("pages 12-14", "pages 1214")


def test_composed_and_decomposed_accents_match_both_ways() -> None:
    composed, decomposed = "caf\u00e9 cr\u00e8me", "cafe\u0301 cre\u0300me"
    assert span_of(f"a {decomposed} b", composed) == decomposed
    assert span_of(f"a {composed} b", decomposed) == composed
    assert find_quote("x cafe\u0301", "caf\u00e9") == (2, 7)  # the span ends after the combining mark


def test_accents_and_case_are_kept() -> None:
    assert "not found" in error("Her résumé is long", "Her resume is long")
    assert "not found" in error("Her resume is long", "résumé")
    assert "not found" in error("The Brown Fox", "the brown fox")


def test_markdown_marks_a_reader_does_not_see() -> None:
    text = "# Leave policy\n\n## Annual leave\n- Ten days a year\n* Unused days lapse\n  - even in March\n"
    assert span_of(text, "Leave policy Annual leave Ten days a year Unused days lapse even in March") == (
        text.strip().removeprefix("# ")
    )
    table = "| Plan | Price |\n|:-----|------:|\n| Basic | 10 € |\n| Pro | 20 € |"
    assert span_of(table, "Plan Price Basic 10 € Pro 20 €") == table[2:-2]
    assert span_of("#hashtag and *stars*", "#hashtag and *stars*") == "#hashtag and *stars*"
    assert span_of("use a|b here, #1 - see", "use a b here, #1 - see") == "use a|b here, #1 - see"


def test_span_starts_at_the_origin_of_the_first_matched_character() -> None:
    text = "the ﬁnal word"
    assert find_quote(text, "inal word") == (4, len(text))  # inside a ligature: the whole ligature


def test_normalised_form_is_cached_and_maps_every_character() -> None:
    text = "A “quote”,\u00a0a  ﬁx-\nup."
    n = normalised(text)
    assert normalised(text) is n
    assert n.text == normalise(text) == 'A "quote", a fixup.'
    assert len(n.lo) == len(n.hi) == len(n.text)
    assert all(0 <= lo < hi <= len(text) for lo, hi in zip(n.lo, n.hi, strict=True))


# --- rule 3: ambiguous after normalisation ---------------------------------------------------------


def test_normalised_repeat_is_ambiguous_with_places_and_a_fix() -> None:
    text = "see the ﬁle now;\nsee the\nfile later"
    message = error(text, "see  the file", locate=lambda at: "p. 1" if at < 10 else "p. 2")
    assert "more than once" in message and "2 times" in message
    assert "0 (p. 1), 17 (p. 2)" in message
    assert "quote a longer passage or give start/end" in message


def test_many_repeats_are_counted_and_listed_briefly() -> None:
    message = error("x\u00a0y " * 12, "x y")
    assert "12 times" in message and "and 7 more" in message


# --- rule 4: not found -----------------------------------------------------------------------------

REPORT = (
    "Staff submit receipts monthly.\n" * 40
    + "Every expenses report must be approved by a manager before the end of the month.\n"
    + "Approvals are logged.\n" * 40
)


def test_not_found_names_the_closest_passage_its_similarity_and_the_first_difference() -> None:
    quote = "Every expense report must be approved by a manager before the end of the month."
    message = error(REPORT, quote, locate=lambda at: f"p. {at // 1000 + 1}")
    at = REPORT.index("Every")
    assert f'quote "{quote}" not found in the document' in message
    assert f"at character {at:,}, p. {at // 1000 + 1})" in message
    assert '"Every expenses report must be approved by a manager before the end of the month."' in message
    similarity = int(re.search(r"\((\d+)% alike", message).group(1))
    assert 90 <= similarity <= 99
    assert "they first differ at character 13 of the quote" in message
    assert 'the quote has "expense report" where the document has "expenses report"' in message
    assert "copy it exactly" in message


def test_not_found_message_is_one_line_and_cuts_long_quotes() -> None:
    quote = "Approvals are\nlogged by nobody. " + "word " * 80
    message = error(REPORT, quote)
    shown = re.search(r'quote "(.*?)" not found', message).group(1)
    assert shown.endswith("…") and len(shown) == 200
    assert shown.startswith("Approvals are logged by nobody.")


def test_nothing_alike_and_nothing_visible() -> None:
    assert "nor any passage like it" in error("abc", "xyz")
    assert "no visible text" in error("abc", "\u200b\u00ad")


def test_goldset_resolve_quote_prefixes_where_and_passes_locate() -> None:
    with pytest.raises(BenchError) as err:
        resolve_quote(REPORT, "Every expense report", "gold.jsonl:3", locate=lambda at: "p. 9")
    assert str(err.value).startswith('gold.jsonl:3: quote "Every expense report" not found in the document')
    assert "p. 9" in str(err.value)
    assert resolve_quote("a “b” c", 'a "b"', "x") == (0, 5)
    with pytest.raises(BenchError, match="non-empty text"):
        resolve_quote("abc", "  ", "gold.jsonl:1")


# --- rule 5: fast on long documents ----------------------------------------------------------------


def _long_text(size: int) -> str:
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
    parts, length = [], 0
    while length < size:
        line = " ".join(rng.choices(words, k=11)) + rng.choice([".\n", ". ", "-\n", ",\n\n", " “q” ﬁ\u00a0"])
        parts.append(line)
        length += len(line)
    return "".join(parts)[:size]


def test_normalising_a_megabyte_is_fast() -> None:
    text = _long_text(1_000_000)
    started = time.process_time()  # CPU time: other tests on the same cores do not inflate it
    normalised(text)
    assert time.process_time() - started < 1.0


def test_closest_passage_in_two_megabytes_is_fast() -> None:
    text = _long_text(2_000_000)
    quote = normalise(text[1_234_567:1_234_867]).replace("a", "A", 3).strip()
    normalised(text)  # documents are normalised once and quoted many times
    started = time.process_time()
    message = error(text, quote)
    assert time.process_time() - started < 1.0
    assert "99% alike" in message or "98% alike" in message


# --- properties ------------------------------------------------------------------------------------

WORD = st.text(alphabet="abcfilnortxyzAZéüßøçñ", min_size=1, max_size=7)
GAPS = [" ", "\n", "  ", " \n ", "\t", "\u00a0", "\n\n"]
READER_GAPS = [" ", "\n", "\u00a0", "\u202f", " \t", "\r\n", "  "]
HYPHENATED = ["-\n", "- ", "-\n  ", "-"]
READER_HYPHENATED = ["", "-", "-\n", "- "]
CURLY = {"'": "‘’′", '"': "“”«»„", "-": "–—−‐", "fi": "ﬁ"}


@st.composite
def document_and_quote(draw: st.DrawFn) -> tuple[str, str, str]:
    """A text of words joined by gaps (some hyphenated across lines, some marks curly), a run of
    whole words in it, and that run as a reader might copy it from the rendered page."""
    n = draw(st.integers(2, 25))
    words = [draw(WORD) for _ in range(n)]
    marks = [draw(st.sampled_from(["", "", "'", '"'])) for _ in range(n)]
    joins = [
        "hyphen" if draw(st.integers(0, 2)) == 0 and not marks[k] and not marks[k + 1] else "gap" for k in range(n - 1)
    ]
    text_parts: list[str] = []
    quote_parts: list[str] = []
    i = draw(st.integers(0, n - 1))
    j = draw(st.integers(i, n - 1))
    start = 0
    for k in range(n):
        mark = marks[k]
        if k == i:
            start = sum(map(len, text_parts))
        token = text_token = f"{mark}{words[k]}{mark}"
        if mark and draw(st.booleans()):
            curly = CURLY[mark]
            text_token = f"{draw(st.sampled_from(curly))}{words[k]}{draw(st.sampled_from(curly))}"
        if "fi" in token and draw(st.booleans()):
            text_token = text_token.replace("fi", "ﬁ")
        text_parts.append(text_token)
        if i <= k <= j:
            quote_parts.append(token)
        if k < n - 1:
            hyphen = joins[k] == "hyphen"
            text_parts.append(draw(st.sampled_from(HYPHENATED if hyphen else GAPS)))
            if i <= k < j:
                quote_parts.append(draw(st.sampled_from(READER_HYPHENATED if hyphen else READER_GAPS)))
        if k == j:
            end = sum(map(len, text_parts[: 2 * k + 1]))
    text = "".join(text_parts)
    quote = "".join(quote_parts)
    if len(words[i]) > 1 and draw(st.booleans()):  # an invisible character a copy picks up, inside a word
        at = len(marks[i]) + 1
        quote = quote[:at] + draw(st.sampled_from(["\u00ad", "\u200b", "\u2060", "\ufeff"])) + quote[at:]
    return text, text[start:end], quote


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document_and_quote())
def test_a_reader_copy_resolves_to_a_passage_that_reads_the_same(case: tuple[str, str, str]) -> None:
    text, passage, quote = case
    want = normalise(quote).strip()
    assert want == normalise(passage).strip()
    try:
        start, end = find_quote(text, quote)
    except QuoteError as e:
        assert "more than once" in str(e)
        assert occurrences(normalise(text), want) >= 2 or text.count(quote.replace("\r\n", "\n")) >= 2
        return
    assert 0 <= start < end <= len(text)
    assert normalise(text[start:end]).strip() == want


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=80), st.data())
def test_an_exact_unique_substring_resolves_to_its_exact_span(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    quote = text[i:j]
    assume(quote.strip() and "\r\n" not in quote)
    if text.find(quote) == i and text.find(quote, i + 1) < 0:
        assert resolve_quote(text, quote, "gold.jsonl:1") == (i, j)
    elif occurrences(text, quote) > 1:
        with pytest.raises(BenchError, match="more than once"):
            resolve_quote(text, quote, "gold.jsonl:1")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_the_map_back_to_the_original_is_ordered_and_inside_it(text: str) -> None:
    n = normalised(text)
    assert len(n.lo) == len(n.hi) == len(n.text)
    assert all(0 <= lo < hi <= len(text) for lo, hi in zip(n.lo, n.hi, strict=True))
    assert all(a <= b for a, b in zip(n.lo, n.lo[1:], strict=False))


def test_long_and_short_texts_normalise_alike() -> None:
    piece = "Ｆｕｌｌ “width” ﬁ e\u0301 ｶﾞ ①\u00a0| x |\n- y\u200b-\nz "
    long = piece * 3000
    assert len(long) > 100_000
    assert normalise(piece).endswith(" ")
    assert normalise(long) == normalise(piece) * 3000
