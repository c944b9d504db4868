"""How figures read in every report: money, times, percentages, intervals, p-values and ranks, written
the same way in the terminal tables, report.pdf, the plots' axes and the diagnosis."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

MISSING = "—"  # a figure that was not measured or does not apply, in the terminal tables


def number(value: object, fmt: str = "{}", missing: str = MISSING) -> str:
    """``fmt`` filled with ``value``; ``missing`` when there is none."""
    return missing if value is None else fmt.format(value)


# --- money ---------------------------------------------------------------------------------------


def usd(value: float | None, unknown: str = "unknown", *, symbol: str = "$", keep_small: bool = True) -> str:
    """Dollars with the precision that shows the amount: ``$0`` for nothing, two significant digits
    below a dollar (``$0.25``, ``$0.0011``, ``$0.000021``: a small cost never reads as $0), cents up
    to $100 (``$12.35``), whole dollars above (``$1,234``); ``unknown`` when the cost is not known.

    ``keep_small`` is accepted for older callers and changes nothing: no amount is cut to $0.0000.
    """
    if value is None:
        return unknown
    if value == 0:
        return f"{symbol}0"
    sign, amount = ("-", -value) if value < 0 else ("", value)
    if amount >= 99.995:
        return f"{sign}{symbol}{amount:,.0f}"
    if amount >= 0.995:
        return f"{sign}{symbol}{amount:,.2f}"
    if amount < 1e-9:  # below a billionth of a dollar a row of zeros says nothing
        return f"{sign}{symbol}{amount:.1e}"
    return f"{sign}{symbol}{amount:.{_decimals(amount, 2)}f}"


def _decimals(amount: float, significant: int) -> int:
    """Decimal places that show ``significant`` digits of ``0 < amount < 1`` once rounded (0.0999 → 0.10)."""
    digits = significant - 1 - math.floor(math.log10(amount))
    if round(amount, digits) >= 10 ** (significant - digits):
        digits -= 1
    return max(digits, 2)


def usd_per_queries(cost_per_1k: float | None, unknown: str = "unknown", *, symbol: str = "$") -> str:
    """A cost per 1,000 queries in the unit that reads: ``$2.00 per 1k queries`` from a cent per 1k up,
    ``$21 per M queries`` below (the same money per million)."""
    if cost_per_1k is None:
        return unknown
    if cost_per_1k == 0 or abs(cost_per_1k) >= 0.01:
        return f"{usd(cost_per_1k, symbol=symbol)} per 1k queries"
    return f"{usd(cost_per_1k * 1000, symbol=symbol)} per M queries"


def usd_tick(x: float, _pos: int | None = None) -> str:
    """A tick label on a dollar axis: ``$0``, ``$2``, ``$1.50``, ``$0.005``."""
    if x <= 0:  # no cost is negative: left of zero is only margin, so it gets no tick label
        return "$0" if x == 0 else ""
    return f"${x:,.0f}" if x >= 1 and x == round(x) else f"${x:,.2f}" if x >= 1 else f"${x:.2g}"


# --- sizes ---------------------------------------------------------------------------------------


def size(n_bytes: float | None, missing: str = MISSING) -> str:
    """Bytes in the largest unit that keeps a number >= 1: ``912 B``, ``84 KB``, ``1.2 MB`` (1 KB = 1,000 B)."""
    if n_bytes is None:
        return missing
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n_bytes >= scale:
            value = n_bytes / scale
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{n_bytes:.0f} B"


# --- time ----------------------------------------------------------------------------------------


def ms(value: float | None, missing: str = MISSING) -> str:
    """Milliseconds to one decimal, ``11.5``."""
    return number(value, "{:.1f}", missing)


def ms_tick(x: float, _pos: int | None = None) -> str:
    """A tick label on a milliseconds axis, ``0.5``, ``20``."""
    return f"{x:g}" if x >= 0 else ""  # left of zero is only margin


def seconds(value: float | None, missing: str = MISSING) -> str:
    """Seconds to one decimal, ``3.2``."""
    return number(value, "{:.1f}", missing)


def duration(value: float | None, missing: str = MISSING) -> str:
    """Seconds in the unit that reads: ``0.03 s``, ``4.2 s``, ``17 s``, ``4.5 min``, ``3.1 h``, ``2.5 d``."""
    if value is None:
        return missing
    if value == 0:
        return "0 s"
    for unit, scale, above in (("d", 86400, 172800), ("h", 3600, 3600), ("min", 60, 60)):
        if value >= above:
            amount = value / scale
            return f"{amount:.1f} {unit}" if amount < 10 else f"{amount:,.0f} {unit}"
    return f"{value:.2g} s" if value < 1 else f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


# --- shares and figures in running text ------------------------------------------------------------


def percent(share: float, places: int = 0) -> str:
    """A share as a percentage, ``45%`` (``places`` decimals)."""
    return f"{share:.{places}%}"


def brief_percent(x: float) -> str:
    """A share in a sentence: one decimal below 10% (``4.5%``), none above (``45%``)."""
    return percent(x, 1 if abs(x) < 0.1 else 0)


def brief_decimal(x: float) -> str:
    """A figure in a sentence: two decimals, three for small ones (span precision is often a few hundredths)."""
    return f"{x:.3f}" if 0 < abs(x) < 0.1 else f"{x:.2f}"


def ratio(a: float, b: float) -> str:
    """How many times ``b`` is ``a``, ``1.5×``."""
    return "∞×" if b == 0 else f"{a / b:.1f}×"


# --- statistics ----------------------------------------------------------------------------------


def with_ci(value: float, ci: Sequence[float] | None) -> str:
    """``0.711 [0.656, 0.766]``; the bare value when the interval is missing or undefined."""
    if not ci or any(v != v for v in ci):
        return f"{value:.3f}"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def p_value(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


TEST_COLUMNS = ("Wilcoxon p", "t-test p", "randomisation p", "rank-biserial", "Cohen's dz")


def test_cells(result: Mapping[str, float], p_cell: Callable[[float], str] = p_value) -> list[str]:
    """A paired comparison's Holm-corrected p-values (each through ``p_cell``, which may mark the
    significant ones) and effect sizes, in the order of ``TEST_COLUMNS``."""
    return [
        p_cell(result["wilcoxon_p_holm"]),
        p_cell(result["t_p_holm"]),
        p_cell(result["randomisation_p_holm"]),
        f"{result['rank_biserial']:+.2f}",
        f"{result['cohens_dz']:+.2f}",
    ]


def rank(first_relevant_rank: int | None) -> str:
    return "miss" if first_relevant_rank is None else str(first_relevant_rank)


# --- counts --------------------------------------------------------------------------------------


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 candidate``, ``2 candidates``; ``words`` for a plural that is not ``word`` + s (``queries``)."""
    return f"{n:,} {word if n == 1 else words or word + 's'}"
