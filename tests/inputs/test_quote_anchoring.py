"""Quotes another tool copied, anchored by their words and numbers (bench.inputs.quote_anchoring)."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.errors import BenchError
from bench.inputs.corpus import load_corpus
from bench.inputs.goldset import load_goldset
from bench.inputs.quote_anchoring import (
    APPROXIMATE,
    EXACT,
    NORMALISED,
    THRESHOLD,
    anchor_quote,
    approximate,
    candidates,
    tokens,
)
from bench.inputs.quotes import QuoteError, find_quote
from tests.helpers import SHARED, run_cli
from tests.inputs.test_page_evidence import write_three_pages

# A filing's table as bench renders it (markdown rows, empty cells, a lone currency cell, a rule)
MARKDOWN = (
    "Results of operations for the year follow.\n\n"
    "| | 2022 | 2021 |\n"
    "|---|---|---|\n"
    "| Net sales | $ | 34,229 | $ | 31,017 |\n"
    "| Cost of sales | | 20,104 | | — |\n"
    "| Gross margin | | 14,125 | | 12,873 |\n\n"
    "Management believes the results reflect demand for its products.\n"
)
TABLE_START = MARKDOWN.index("| | 2022")
ROWS_START = MARKDOWN.index("Net sales")
ROWS_END = MARKDOWN.index("12,873") + len("12,873")
# ... and as another PDF tool copied it: a cell a line, the currency signs apart, no pipes or rules
CELL_PER_LINE = "Net sales\n$\n34,229\n $\n31,017\nCost of sales\n20,104\n \nGross margin\n14,125\n \n12,873"


def test_markdown_rows_against_a_cell_per_line() -> None:
    with pytest.raises(QuoteError):
        find_quote(MARKDOWN, CELL_PER_LINE)  # the strict matcher, as drafting keeps it
    found = anchor_quote(MARKDOWN, CELL_PER_LINE)
    assert (found.start, found.end, found.matched) == (ROWS_START, ROWS_END, APPROXIMATE)
    assert found.similarity == 1.0  # every word and number, and no other in between


def test_a_table_read_column_by_column_against_row_by_row() -> None:
    columns = (
        "Segment revenue\nAmericas\nEurope\nAsia Pacific\nTotal\n"
        "2022\n41,200\n18,950\n9,375\n69,525\n"
        "2021\n39,800\n17,410\n8,230\n65,440\n"
        "All figures are unaudited and in thousands of dollars.\n"
    )
    rows = (
        "Segment revenue 2022 2021\nAmericas 41,200 39,800\nEurope 18,950 17,410\n"
        "Asia Pacific 9,375 8,230\nTotal 69,525 65,440"
    )
    found = anchor_quote(columns, rows)
    assert found.matched == APPROXIMATE and found.similarity == 1.0
    assert (found.start, found.end) == (0, columns.index("65,440") + len("65,440"))
    # and the other way round: bench read rows, the quote is columns
    back = anchor_quote(rows + "\nAll figures are unaudited.", columns.rsplit("\n", 2)[0])
    assert (back.start, back.end, back.matched) == (0, len(rows), APPROXIMATE)


def test_one_changed_number_does_not_anchor() -> None:
    wrong = CELL_PER_LINE.replace("20,104", "20,105")
    with pytest.raises(QuoteError, match=r"lacking the quote's 20105"):
        anchor_quote(MARKDOWN, wrong)
    wrong = CELL_PER_LINE.replace("14,125", "14.125")  # a decimal point is not a thousands comma
    with pytest.raises(QuoteError, match=r"lacking the quote's 14\.125"):
        anchor_quote(MARKDOWN, wrong)


def test_the_same_table_twice_is_ambiguous() -> None:
    text = MARKDOWN + "\nIn the appendix, again:\n\n" + MARKDOWN[TABLE_START:]
    with pytest.raises(QuoteError, match=r"as much like two passages") as e:
        anchor_quote(text, CELL_PER_LINE)
    assert f"at character {ROWS_START:,}" in str(e.value)  # both places named
    second = text.index("Net sales", ROWS_END)
    assert f"at character {second:,}" in str(e.value)


def test_similarity_is_the_weighted_share_of_the_quote_at_the_threshold() -> None:
    # 30 words each once: every token weighs the same, and so do two the document lacks
    words = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(30)]
    text = " ".join(words)
    quote = " ".join(words[10:18] + ["zzz", "yyy"])  # 8 of 10 tokens are there, side by side
    found = approximate(text, quote, threshold=0.8)
    assert found.similarity == 0.8
    assert (found.start, found.end) == (text.index(words[10]), text.index(words[17]) + len(words[17]))
    with pytest.raises(QuoteError, match=r"80% alike"):
        approximate(text, quote, threshold=0.8001)
    assert THRESHOLD <= 0.8 or pytest.raises(QuoteError)  # the measured threshold decides the default


def test_rare_words_weigh_more_than_common_ones() -> None:
    text = ("the of and " * 50) + "quarterly dividend declared by the board of directors"
    common = approximate(text + " the of and", "quarterly dividend declared by the board", threshold=0.5)
    assert common.similarity == 1.0
    # missing "the" costs less than missing "dividend"
    miss_the = candidates(text, "quarterly dividend declared by board of directors xx")[0].similarity
    miss_rare = candidates(text, "quarterly xx declared by the board of directors")[0].similarity
    assert miss_the > miss_rare


def test_exact_and_normalised_are_said() -> None:
    assert anchor_quote(MARKDOWN, "Management believes").matched == EXACT
    found = anchor_quote("He said “yes” twice.", 'said "yes"')
    assert (found.start, found.end, found.matched, found.similarity) == (3, 13, NORMALISED, 1.0)
    with pytest.raises(QuoteError, match="occurs more than once"):  # ambiguous as written: not approximated
        anchor_quote("Net sales rose. Net sales rose.", "Net sales rose.")


def test_short_and_unrelated_quotes_stay_errors() -> None:
    with pytest.raises(QuoteError, match="too few words and numbers"):
        anchor_quote(MARKDOWN, "Net 34,229")
    with pytest.raises(QuoteError, match="not found"):
        anchor_quote(MARKDOWN, "Research and development expenses rose sharply this year")


def test_words_another_tool_ran_together_or_broke_are_mended() -> None:
    text = (
        "Cash flows from operating activities:\n\n"
        "| Adjustments to reconcile net loss to net cash provided by operating activities: | | |\n"
        "| Depreciation and amortization | 84,212 | 75,598 |\n\nThe internal control over reporting held.\n"
    )
    ran = (
        "Adjustmentstoreconcilenetlosstonetcashprovidedbyoperatingactivities:\n"
        "Depreciationandamortization\n84,212\n75,598"
    )
    found = anchor_quote(text, ran)
    assert (found.start, found.similarity) == (text.index("Adjustments"), 1.0)
    assert found.end == text.index("75,598") + len("75,598")
    broken = anchor_quote(text, "The internal cont rol over re porting held")
    assert (broken.start, broken.end, broken.similarity) == (text.index("The internal"), len(text) - 1, 1.0)


def test_a_quote_cut_inside_its_last_number_is_not_a_changed_number() -> None:
    cut = CELL_PER_LINE[: -len("873")]  # "... 12,"
    found = anchor_quote(MARKDOWN, cut + "8")  # 12,8 of 12,873: left out, the rest anchors
    assert (found.start, found.end, found.similarity) == (ROWS_START, MARKDOWN.index("14,125") + 6, 1.0)
    # no number of the document begins 129: a changed figure (12,9 reads as 12 and 9: no thousands group)
    with pytest.raises(QuoteError, match="lacking the quote's 12, 9"):
        anchor_quote(MARKDOWN, cut + "9")


def test_a_page_number_the_text_left_out_is_no_missing_figure_at_a_page_edge() -> None:
    page1 = MARKDOWN + "See accompanying notes to the financial statements."
    text = page1 + "\n\nNotes begin on this page and go on at length about policies."
    pages = (0, len(page1) + 2)
    viewer = (
        "Table of Contents\n" + CELL_PER_LINE + "\nManagement believes the results reflect demand for its products.\n"
    )
    viewer += "See accompanying notes to the financial statements.\n38"  # its folio, which bench leaves out
    found = anchor_quote(text, viewer, pages=pages)
    assert (found.start, found.end, found.matched) == (ROWS_START, len(page1), APPROXIMATE)
    assert found.similarity < 1.0  # "Table of Contents" and 38 are not in the span
    with pytest.raises(QuoteError, match="lacking the quote's 38"):
        anchor_quote(text, viewer)  # no pages known: 38 may be a figure
    inside = CELL_PER_LINE + "\n38"  # the span ends inside the page: 38 is a figure it lacks
    with pytest.raises(QuoteError, match="lacking the quote's 38"):
        anchor_quote(text, inside, pages=pages)


def test_tokens_leave_out_table_marks() -> None:
    assert [t for t, _, _ in tokens("| Net sales | $ | (1,234.5) | — |\n|---|:--:|")] == ["net", "sales", "1234.5"]
    assert [t for t, _, _ in tokens("营业收入 Revenue 12")] == ["营", "业", "收", "入", "revenue", "12"]


# --- a quote cut from a text and re-rendered as another tool would: it anchors to the same span ---

_LABELS = ("Revenue", "Cost of revenue", "Research and development", "Marketing", "General", "Interest income")


@st.composite
def _tables(draw: st.DrawFn) -> tuple[str, list[tuple[int, int]], list[list[str]]]:
    """A markdown table between two paragraphs; the span and the cells of each row."""
    n = draw(st.integers(2, 6))
    numbers = draw(st.lists(st.integers(100, 999_999), min_size=2 * n, max_size=2 * n, unique=True))
    text = "Quarterly figures are shown below.\n\n| | 2023 | 2022 |\n|---|---|---|\n"
    spans, cells = [], []
    for i in range(n):
        row = [_LABELS[i], f"{numbers[2 * i]:,}", f"{numbers[2 * i + 1]:,}"]
        line = f"| {row[0]} | $ | {row[1]} | | {row[2]} |"
        start = len(text) + 2
        spans.append((start, start + len(line) - 4))
        text += line + "\n"
        cells.append(row)
    return text + "\nThe notes are part of the statements.\n", spans, cells


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tables(), st.data())
def test_a_re_rendered_quote_anchors_to_its_span(table, data) -> None:
    text, spans, cells = table
    first = data.draw(st.integers(0, len(cells) - 1))
    last = data.draw(st.integers(first, len(cells) - 1))
    rows = [list(r) for r in cells[first : last + 1]]
    if data.draw(st.booleans()):  # another line order: rows swapped
        rows = data.draw(st.permutations(rows))
    if data.draw(st.booleans()):  # column by column
        rows = [list(col) for col in zip(*rows)]
    sep = data.draw(st.sampled_from(["\n", " ", "  \n ", " | ", "\t"]))
    quote = sep.join(cell for row in rows for cell in row)
    if len(tokens(quote)) < 4:
        return
    found = anchor_quote(text, quote)
    assert (found.start, found.end) == (spans[first][0], spans[last][1])
    assert found.similarity == 1.0


def test_a_goldset_records_how_each_quote_matched(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "results.md").write_text(MARKDOWN)
    gold = tmp_path / "gold.jsonl"
    rows = [
        {"id": "q1", "question": "Net sales?", "evidence": [{"doc": "results.md", "quote": CELL_PER_LINE}]},
        {"id": "q2", "question": "Why?", "evidence": [{"doc": "results.md", "quote": "Management believes"}]},
    ]
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_goldset(gold, load_corpus(corpus))
    [a], [b] = (q.evidence for q in loaded.questions)
    assert (a.start, a.end, a.matched, a.similarity) == (ROWS_START, ROWS_END, APPROXIMATE, 1.0)
    assert (b.matched, b.similarity) == (EXACT, 1.0)
    gold.write_text(json.dumps({**rows[0], "evidence": [{"doc": "results.md", "quote": CELL_PER_LINE[:-1] + "4"}]}))
    with pytest.raises(BenchError, match=r"gold.jsonl:1: question 'q1' evidence 1: quote .* lacking the quote's 12874"):
        load_goldset(gold, load_corpus(corpus))


# --- the command line ---------------------------------------------------------------------------


def test_validate_counts_and_explains_approximate_matches(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_three_pages(corpus / "report.pdf")
    (corpus / "results.md").write_text(MARKDOWN)
    gold = tmp_path / "gold.jsonl"
    swapped = "Bridges carry roads over\nrivers. Page two is about bridges."  # page 2's two lines, swapped
    rows = [
        {"id": "q1", "question": "Roads?", "evidence": [{"doc": "report.pdf", "quote": swapped}]},
        {"id": "q2", "question": "Sales?", "evidence": [{"doc": "results.md", "quote": CELL_PER_LINE}]},
        {"id": "q3", "question": "Apples?", "evidence": [{"doc": "report.pdf", "quote": "speaks of apples"}]},
    ]  # fmt: skip
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    plain = run_cli("goldset", "validate", str(gold), "--corpus", str(corpus))
    assert plain.returncode == 0, plain.stderr
    assert "ok (2 of 3 quotes matched approximately, by their words and numbers; --explain shows them)" in plain.stdout
    assert "Bridges" not in plain.stdout
    explained = run_cli("goldset", "validate", str(gold), "--corpus", str(corpus), "--explain")
    assert explained.returncode == 0, explained.stderr
    out = explained.stdout
    assert "question 'q1' evidence 1: report.pdf, p. 2, 100% alike" in out
    assert "    Bridges carry roads over\n    rivers. Page two is about bridges.\n" in out  # the quote
    span = "    Page two is about bridges.\n    Bridges carry roads over rivers.\n"
    assert "  the span bench chose (characters 34–93):\n" + span in out
    assert "question 'q2' evidence 1: results.md, 100% alike" in out
    assert "    Net sales | $ | 34,229 | $ | 31,017 |\n    | Cost of sales |" in out  # the span, as bench's text has it
    assert "q3" not in out  # found verbatim: nothing to explain


def test_validate_fails_on_a_changed_figure(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "results.md").write_text(MARKDOWN)
    gold = tmp_path / "gold.jsonl"
    quote = CELL_PER_LINE.replace("34,229", "34,299")
    gold.write_text(json.dumps({"id": "q1", "question": "?", "evidence": [{"doc": "results.md", "quote": quote}]}))
    result = run_cli("goldset", "validate", str(gold), "--corpus", str(corpus), "--explain")
    assert result.returncode == 2
    assert "lacking the quote's 34299" in result.stderr
    assert "1 problem in" in result.stderr


# --- speed ----------------------------------------------------------------------------------------


def test_a_long_document_is_indexed_once_and_quotes_are_fast() -> None:
    rng = random.Random(7)
    vocabulary = [f"term{i}" for i in range(3000)]
    text = " ".join(
        rng.choice(vocabulary) if rng.random() < 0.8 else f"{rng.randint(1, 10**6):,}" for _ in range(80_000)
    )
    assert len(text) > 500_000
    found = re.finditer(r"\S+(?: \S+){29}", text[250_000:])
    quotes = [next(found).group() for _ in range(5)]
    anchor_quote(text, quotes[0].replace(" ", "\n"))  # the index is built here, once
    t = time.perf_counter()
    for q in quotes:
        shuffled = q.split()
        rng.shuffle(shuffled)
        assert anchor_quote(text, "\n".join(shuffled)).matched == APPROXIMATE
    assert (time.perf_counter() - t) / len(quotes) < 0.5


# --- real filings ---------------------------------------------------------------------------------

FILINGS = SHARED / "filings"
_NUMBER = re.compile(r"\d[\d,.]*\d|\d")


def _pypdf_passages(pdf: Path, pages: list[int], rng: random.Random) -> list[tuple[int, str]]:
    """Runs of 1–6 lines of pypdf's text of each page (another extractor than bench's), and the page's
    first table: a run of 4 lines or more with two numbers or more each."""
    import pypdf

    reader = pypdf.PdfReader(str(pdf))
    out = []
    for page in pages:
        lines = [line for line in (reader.pages[page - 1].extract_text() or "").splitlines() if tokens(line)]
        for _ in range(3):
            k = rng.randint(1, 6)
            i = rng.randrange(0, max(1, len(lines) - k + 1))
            if len(tokens(quote := "\n".join(lines[i : i + k]))) >= 4:
                out.append((page, quote))
        run: list[str] = []
        for line in [*lines, ""]:
            if len(_NUMBER.findall(line)) >= 2:
                run.append(line)
            elif len(run) >= 4:
                out.append((page, "\n".join(run)))
                break
            else:
                run = []
    return out


def _anchors(text: str, quote: str) -> tuple[int, int] | None:
    try:
        found = anchor_quote(text, quote)
    except QuoteError:
        return None
    return found.start, found.end


def test_real_filings_anchor_other_tools_quotes_and_refuse_the_wrong_ones(tmp_path: Path) -> None:
    """FinanceBench's evidence and pypdf's passages anchor on their page of bench's text; the same
    passages in another filing, or with one number changed, do not (rates of docs/goldsets.md)."""
    filings = SHARED / "filings"
    if not (filings / "questions.jsonl").is_file():
        pytest.skip(f"{filings} is absent")
    names = ("ADOBE_2022_10K", "FOOTLOCKER_2022_8K_dated-2022-05-20")
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    for name in names:
        (pdfs / f"{name}.pdf").write_bytes((filings / "pdfs" / f"{name}.pdf").read_bytes())
    corpus = load_corpus(pdfs)
    adobe, footlocker = (corpus.get(f"{name}.pdf") for name in names)

    def page_text(doc, page: int) -> str:
        return doc.text[doc.pages[page - 1] : doc.pages[page] if page < len(doc.pages) else len(doc.text)]

    evidence = [
        (corpus.get(f"{row['doc_name']}.pdf"), e["evidence_page_num"] + 1, e["evidence_text"])
        for row in map(json.loads, (filings / "questions.jsonl").read_text().splitlines())
        if row["doc_name"] in names
        for e in row["evidence"]
    ]
    anchored = [_anchors(page_text(doc, page), quote) is not None for doc, page, quote in evidence]
    assert sum(anchored) == len(anchored) == 3  # every evidence text of these two filings

    rng = random.Random(0)
    pages = sorted(rng.sample(range(1, len(adobe.pages) + 1), 20))
    passages = _pypdf_passages(pdfs / "ADOBE_2022_10K.pdf", pages, rng)
    assert len(passages) >= 30
    recall = sum(_anchors(page_text(adobe, p), q) is not None for p, q in passages) / len(passages)
    wrong = sum(_anchors(footlocker.text, q) is not None for _, q in passages) / len(passages)
    changed = []
    for page, quote in passages:
        numbers = [m for m in _NUMBER.finditer(quote) if m.group().strip("0,.")]
        if numbers:
            m = rng.choice(numbers)
            i = max(j for j in range(m.start(), m.end()) if quote[j].isdigit())
            changed.append((page, quote[:i] + str((int(quote[i]) + rng.randint(1, 8)) % 10) + quote[i + 1 :]))
    refused = sum(_anchors(page_text(adobe, p), q) is None for p, q in changed) / len(changed)
    print(f"recall {recall:.3f}, anchored in another filing {wrong:.3f}, changed numbers refused {refused:.3f}")
    assert recall >= 0.9
    assert wrong == 0.0
    assert refused >= 0.9


# pypdf's text of a page, as bench's text has it
FILING = (
    "Management discussion opens here with some unrelated words about strategy and markets.\n\n"
    "The following selected consolidated statement of operations data for the years ended December 31, 2017, "
    "and 2016 have been derived from our audited consolidated financial statements.\n\n"
    "CONSOLIDATED STATEMENTS OF COMPREHENSIVE INCOME\n\n"
    "Report ofIndependent Registered Public Accounting Firm for each of the three years ended May 31, 2020 "
    "and May 31, 2019 follows the index.\n\nClosing remarks talk about something else entirely, at length."
)


def test_a_comma_before_other_than_three_digits_ends_a_number() -> None:
    quote = "selected consolidated statement of operations data for the years ended December\xa031,2017,\xa0and 2016"
    assert [k for k, _, _ in tokens("31,2017 1,234,567 2,5")] == ["31", "2017", "1234567", "2", "5"]
    found = anchor_quote(FILING, quote)
    assert FILING[found.start : found.end].endswith("December 31, 2017, and 2016")


def test_a_capital_after_a_lower_case_letter_starts_a_word() -> None:
    assert [k for k, _, _ in tokens("ofIndependent theCompany NIKE")] == ["of", "independent", "the", "company", "nike"]
    found = anchor_quote(FILING, "Report of Independent Registered Public Accounting Firm for each")
    assert FILING[found.start : found.end] == "Report ofIndependent Registered Public Accounting Firm for each"


def test_words_and_years_broken_by_a_line_break_or_space_are_rejoined() -> None:
    quote = "CONSOLIDATED STATEME\nNTS OF COMPREHENSIVE INCOME\nReport of Independent Register\ned Public"
    found = anchor_quote(FILING, quote)
    assert found.similarity == 1.0
    years = "three years ended May 31, 20 20 and May 31, 201\n9 follows"
    found = anchor_quote(FILING, years)
    assert FILING[found.start : found.end] == "three years ended May 31, 2020 and May 31, 2019 follows"
    # table cells apart by more than one space are two numbers, never one year
    with pytest.raises(QuoteError, match="lacking"):
        anchor_quote(FILING, "three years ended May 31, 20  20 and May 31, 2019 follows")


def test_a_running_header_the_text_left_out_is_not_asked_of_the_span() -> None:
    quote = "Table of Contents\nThe following selected consolidated statement of operations data for the years"
    found = anchor_quote(FILING, quote)
    assert FILING[found.start : found.end].startswith("The following selected")
    # an edge line with a number is never left out: it may be a changed figure
    with pytest.raises(QuoteError):
        anchor_quote(FILING, "Table 2016 Contents\nThe following selected consolidated statement of operations data")
