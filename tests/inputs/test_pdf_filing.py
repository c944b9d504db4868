"""A filing's PDF read as its reader sees it: statements as tables with their headers, every value
in its row and column, running headers and footers left out (and named), two columns in order.
The generated filing runs everywhere; the real filings where the shared datasets are."""

from __future__ import annotations

import pytest

from bench.inputs.formats import pdf
from tests.helpers import SHARED
from tests.inputs import make_filing as f

FILINGS = SHARED / "filings" / "pdfs"


@pytest.fixture(scope="module")
def filing(tmp_path_factory: pytest.TempPathFactory) -> pdf.Extracted:
    path = f.write_filing(tmp_path_factory.mktemp("filing") / "filing.pdf")
    return pdf.extract(path.read_bytes())


def _row(label: str, values: tuple[str, ...] | None, width: int) -> str:
    return "| " + " | ".join([label, *(values or ("",) * width)]) + " |"


def test_a_statement_round_trips_with_its_year_header_currency_and_negatives(filing: pdf.Extracted) -> None:
    header = "|  | " + " | ".join(f"{f.SPANNING} {year}" for year in f.YEARS) + " |"
    table = "\n".join([header, "|---|---|---|---|", *(_row(label, values, 3) for label, values in f.INCOME)])
    assert table in filing.text
    page = filing.text.index(table)
    assert filing.pages[1] <= page < filing.pages[2]  # on page 2, in one piece


def test_shading_behind_rows_is_not_taken_for_columns(filing: pdf.Extracted) -> None:
    table = "\n".join(
        ["|  | " + " | ".join(f.BALANCE_YEARS) + " |", "|---|---|---|"]
        + [_row(label, values, 2) for label, values in f.BALANCE]
    )
    assert table in filing.text


def test_running_headers_and_footers_are_left_out_and_named(filing: pdf.Extracted) -> None:
    assert f.RUNNING_HEADER not in filing.text
    assert "Page 3 of 5" not in filing.text
    (note,) = [n for n in filing.notes if n.startswith("running headers and footers")]
    assert f"“{f.RUNNING_HEADER}” (top, 5 of 5 pages)" in note
    assert "“Page 1 of 5” (bottom, 5 of 5 pages)" in note
    assert f.INTRO in filing.text and f.CLOSING in filing.text  # the body text stays


def test_two_columns_read_one_after_the_other(filing: pdf.Extracted) -> None:
    at = [filing.text.find(line) for line in (*f.LEFT, *f.RIGHT)]
    assert -1 not in at and at == sorted(at)


@pytest.mark.skipif(not FILINGS.is_dir(), reason="the shared filings are not on this machine")
def test_a_real_income_statement_keeps_its_years_and_amounts() -> None:
    import io

    import pypdf

    reader = pypdf.PdfReader(FILINGS / "AMAZON_2017_10K.pdf")
    writer = pypdf.PdfWriter()
    for page in reader.pages[36:39]:
        writer.add_page(page)
    buffer = io.BytesIO()
    writer.write(buffer)
    text = pdf.extract(buffer.getvalue()).text
    years = " | ".join(f"Year Ended December 31, {y}" for y in (2015, 2016, 2017))
    assert f"|  | {years} |\n|---|---|---|---|\n| Net product sales | $ 79,268 | $ 94,665 | $ 118,573 |" in text
    assert "| Interest expense | (459) | (484) | (848) |" in text
    assert "| Diluted | 477 | 484 | 493 |" in text
