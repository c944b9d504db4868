"""How figures read in the reports (bench.formatting): the strings the tables, the PDF and the plots show."""

from __future__ import annotations

from bench.formatting import (
    MISSING,
    brief_decimal,
    brief_percent,
    duration,
    ms,
    ms_tick,
    number,
    percent,
    ratio,
    seconds,
    usd,
    usd_per_queries,
    usd_tick,
)


def test_usd_variants_of_the_tables_and_the_pdf():
    assert usd(None, "?") == "?"  # the shootout table
    assert usd(0.000021, keep_small=False) == "$0.000021"  # no caller can ask for $0.0000 any more
    assert usd(0.0123, MISSING, symbol="") == "0.012"
    assert usd(None, MISSING, symbol="") == "—"


def test_usd_shows_the_precision_the_amount_needs():
    assert usd(0) == "$0" and usd(0.0) == "$0"  # nothing costs nothing, not $0.0000
    # below a dollar: two significant digits, however small (a $0.02/Mtok model's query is not $0)
    assert [usd(x) for x in (0.25, 0.5, 0.0123, 0.00105508, 0.000021, 0.00002, 4.94e-7)] == [
        "$0.25",
        "$0.50",
        "$0.012",
        "$0.0011",
        "$0.000021",
        "$0.000020",
        "$0.00000049",
    ]
    assert usd(0.0999) == "$0.10" and usd(0.00999) == "$0.010"  # rounding up keeps two digits
    assert [usd(x) for x in (1.0, 1.5, 12.345, 99.99)] == ["$1.00", "$1.50", "$12.35", "$99.99"]  # cents
    assert [usd(x) for x in (99.996, 100.0, 1234.5, 2_000_000.0)] == ["$100", "$100", "$1,234", "$2,000,000"]
    assert usd(-0.25) == "-$0.25" and usd(3e-12) == "$3.0e-12"
    for x in (1e-3, 3.3e-5, 7.7e-8, 0.004, 0.04):
        assert usd(x).strip("$0.") != "", x  # never a row of zeros for a non-zero amount


def test_usd_per_queries_picks_the_unit_that_reads():
    assert usd_per_queries(0.000021) == "$0.021 per M queries"  # $0.000021 per 1k queries
    assert usd_per_queries(0.0005) == "$0.50 per M queries"
    assert usd_per_queries(2.0) == "$2.00 per 1k queries"
    assert usd_per_queries(0.0) == "$0 per 1k queries" and usd_per_queries(None) == "unknown"


def test_durations():
    assert [duration(x) for x in (0, 0.0314, 4.23, 17.4, 270, 11_160, 40_000, 180_000)] == [
        "0 s",
        "0.031 s",
        "4.2 s",
        "17 s",
        "4.5 min",
        "3.1 h",
        "11 h",
        "2.1 d",
    ]
    assert duration(None) == "—"


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
