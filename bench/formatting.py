"""How figures read in every report: the terminal tables and report.pdf share these."""

from __future__ import annotations


def with_ci(value: float, ci) -> str:
    """``0.711 [0.656, 0.766]``; the bare value when the interval is missing or undefined."""
    if not ci or any(v != v for v in ci):
        return f"{value:.3f}"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def p_value(value: float) -> str:
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def rank(first_relevant_rank: int | None) -> str:
    return "miss" if first_relevant_rank is None else str(first_relevant_rank)
