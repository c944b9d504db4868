"""How figures read in the reports (bench.formatting): the strings the tables, the PDF and the plots show."""

from __future__ import annotations

from bench.formatting import (
    MISSING,
    brief_decimal,
    brief_percent,
    ms,
    ms_tick,
    number,
    percent,
    ratio,
    seconds,
    usd,
    usd_tick,
)


def test_usd_variants_of_the_tables_and_the_pdf():
    assert usd(None, "?") == "?"  # the shootout table
    assert usd(0.000021, keep_small=False) == "$0.0000"  # report.pdf: always four places
    assert usd(0.0123, MISSING, symbol="", keep_small=False) == "0.0123"  # the dry-run table: $ in the header
    assert usd(None, MISSING, symbol="") == "—"


def test_usd_tick_labels():
    assert [usd_tick(x) for x in (-0.5, 0.0, 0.005, 0.25, 1.0, 1.5, 1200.0)] == [
        "",
        "$0",
        "$0.005",
        "$0.25",
        "$1",
        "$1.50",
        "$1,200",
    ]


def test_times():
    assert ms(11.5) == "11.5" and ms(None) == "—" and ms(None, "–") == "–"
    assert seconds(3.24) == "3.2" and seconds(None) == "—"
    assert [ms_tick(x) for x in (-1.0, 0.0, 0.5, 20.0)] == ["", "0", "0.5", "20"]


def test_shares_and_figures_in_sentences():
    assert percent(0.456) == "46%" and percent(0.0123, 1) == "1.2%"
    assert brief_percent(0.045) == "4.5%" and brief_percent(0.45) == "45%"
    assert brief_decimal(0.04) == "0.040" and brief_decimal(0.45) == "0.45" and brief_decimal(0.0) == "0.00"
    assert ratio(0.06, 0.03) == "2.0×" and ratio(0.06, 0.0) == "∞×"
    assert number(None, "{:,}") == "—" and number(12345, "{:,}") == "12,345" and number(7) == "7"
