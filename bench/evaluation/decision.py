"""The recommendation: which candidate to use, honest about what the goldset can tell apart.

The best is the top-ranked candidate on mrr@k. Every other candidate is tested against it question
by question (Wilcoxon signed-rank, two-sided), and the p-values are Holm-corrected over that family;
a candidate whose corrected p is at least ``ALPHA`` is *tied with the best*: this goldset cannot say
it is worse. Among the best and the tied the team's preference decides (``prefer`` in bench.toml):
the lowest monthly cost, the lowest end-to-end p95 latency, or the best itself. Where the goldset
cannot separate two candidates (or has under ``SMALL_GOLDSET`` questions), the recommendation
estimates from the observed paired differences how many questions would.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats

from bench.core.measures import metric_key
from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult
from bench.evaluation import costs, significance
from bench.evaluation.scale import Scale
from bench.formatting import usd

ALPHA = 0.05  # a candidate is tied with the best when its Holm-corrected p is at least this
POWER = 0.8  # of the questions-needed estimate
SMALL_GOLDSET = significance.SMALL_SAMPLE  # below this many questions the goldset separates little
TEST = "Wilcoxon signed-rank, two-sided, Holm-corrected over each candidate against the best"
COST_KEY = "monthly_cost_usd"
# Differences in cost or latency within these shares of the lowest do not decide: they are within
# what timing the same candidate twice gives.
COST_TOLERANCE = 0.05
LATENCY_TOLERANCE = 0.10


def recommendation(
    candidates: Sequence[CandidateResult],
    records: Sequence[QuestionRecord],
    k: int,
    margin: float,
    prefer: str = "cost",
    scale: Scale | None = None,
) -> dict[str, Any]:
    """The pick among the candidates tied with the best, why, and what the goldset can tell apart.

    ``candidates`` carry their ranks (``scoring.rank_candidates``); ``records`` their per-question
    metrics. ``margin`` is kept in the result for readers of older runs; ties are decided by the test.
    """
    metric = metric_key("mrr", k)
    out: dict[str, Any] = {
        "metric": metric,
        "margin": margin,
        "cost_key": COST_KEY,
        "prefer": prefer,
        "test": TEST,
        "alpha": ALPHA,
        **({"scale": dataclasses.asdict(scale)} if scale is not None else {}),
    }
    ranked = sorted(candidates, key=lambda c: (math.inf if c.rank is None else c.rank, c.id))
    if not ranked:
        line = f"no recommendation: no candidate has a {metric} score"
        return {**out, **dict.fromkeys(("pick", "best", "value", "p_value", "questions_needed")), "line": line}
    values = _per_question(records, metric)
    best = ranked[0]
    others = ranked[1:]
    rows = [_compare(values, best.id, c.id) for c in others]
    for row, adjusted in zip(rows, significance.holm([r["p"] for r in rows])):
        row["p_holm"] = float(adjusted)
        row["tied"] = row["p_holm"] >= ALPHA
    by_id = {c.id: c for c in ranked}
    tied = [row["candidate"] for row in rows if row["tied"]]
    pick = _pick([best, *(by_id[t] for t in tied)], prefer, metric)
    n = len(_present(values.get(best.id, {})))
    against = pick if pick is not best else (others[0] if others else None)
    row_of = {row["candidate"]: row for row in rows}
    against_row = row_of.get(against.id) if against is not None else None
    pick_values = np.array(_present(values.get(pick.id, {})), dtype=float)
    ci = significance.bootstrap_ci(pick_values) if len(pick_values) else (math.nan, math.nan)
    needed, needed_line = _questions_needed(best, against, against_row, n, metric)
    reason = _reason(best, pick, against, against_row, tied, prefer, metric, n)
    monthly = _number(pick.ops.get("monthly_cost_usd"))
    includes = pick.ops.get("monthly_cost_includes")
    line = " ".join(part for part in (reason, _monthly_line(pick), needed_line) if part)
    return {
        **out,
        "pick": pick.id,
        "line": line,
        "best": best.id,
        "value": _number(pick.quality.get(metric)),
        "ci": [float(ci[0]), float(ci[1])],
        "tied": tied,
        "p_value": row_of[pick.id]["p_holm"] if pick is not best else None,
        "n_questions": n,
        "reason": reason,
        "questions_needed": needed,
        "monthly_cost_usd": monthly,
        "monthly_cost_includes": list(includes) if isinstance(includes, list) else None,
        "comparisons": rows,
    }


# --- the tests -----------------------------------------------------------------------------------


def _per_question(records: Sequence[QuestionRecord], metric: str) -> dict[str, dict[str, float | None]]:
    """Candidate id → question id → the metric's value (None where the record has none)."""
    out: dict[str, dict[str, float | None]] = {}
    for rec in records:
        out.setdefault(rec.candidate, {})[rec.question_id] = _number(rec.metrics.get(metric))
    return out


def _present(values: dict[str, float | None]) -> list[float]:
    return [v for v in values.values() if v is not None]


def _paired(values: dict, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    """The two candidates' values on the questions both have, in ``a``'s order."""
    va, vb = values.get(a, {}), values.get(b, {})
    both = [q for q, v in va.items() if v is not None and vb.get(q) is not None]
    return np.array([va[q] for q in both], dtype=float), np.array([vb[q] for q in both], dtype=float)


def _compare(values: dict, best: str, other: str) -> dict[str, Any]:
    """The best against one candidate: Wilcoxon's two-sided p, the mean and spread of the paired
    differences (best − other)."""
    a, b = _paired(values, best, other)
    tests = significance.paired_tests(a, b, permutations=0)  # only Wilcoxon's p is read here
    d = np.round(a - b, 12)
    return {
        "candidate": other,
        "n": int(tests["n"]),
        "mean_diff": float(tests["mean_diff"]),
        "sd_diff": float(d.std(ddof=1)) if len(d) > 1 else 0.0,
        "p": float(tests["wilcoxon_p"]),
    }


def questions_needed(mean_diff: float, sd_diff: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Questions at which a mean paired difference ``mean_diff`` with standard deviation ``sd_diff``
    is significant at ``alpha`` (two-sided) with ``power``: ``n = ((z(1 − alpha/2) + z(power)) ×
    sd / mean)²``, rounded up (at least 2). None when the mean difference is 0: no number of such
    questions separates them."""
    if mean_diff == 0 or not math.isfinite(mean_diff):
        return None
    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    return max(2, math.ceil((z * sd_diff / abs(mean_diff)) ** 2 - 1e-9))


def _questions_needed(
    best: CandidateResult, against: CandidateResult | None, row: dict | None, n: int, metric: str
) -> tuple[int | None, str]:
    """How many questions would separate the best from ``against`` (the pick, else the runner-up),
    said when the goldset cannot separate them or is small; (None, "") otherwise."""
    if against is None or row is None or not (n < SMALL_GOLDSET or row["tied"]):
        return None, ""
    needed = questions_needed(row["mean_diff"], row["sd_diff"])
    pair = f"{best.id} from {against.id}"
    if needed is None:
        return None, (
            f"The goldset cannot separate {pair}: their mean {metric} differs by 0 over {n} questions, "
            f"so more questions like these would not either."
        )
    observed = f"the observed mean difference, {row['mean_diff']:.3f} (sd {row['sd_diff']:.3f})"
    power = f"at alpha {ALPHA:g} with {POWER:.0%} power"
    if row["tied"]:
        few = f"With only {n} questions the goldset" if n < SMALL_GOLDSET else "The goldset"
        return needed, f"{few} cannot separate {pair}: about {needed:,} questions would, at {observed}, {power}."
    return needed, (
        f"With only {n} questions {best.id} is separated from {against.id}, but narrowly: about {needed:,} "
        f"questions would confirm {observed}, {power}."
    )


# --- the preference ------------------------------------------------------------------------------


def _pick(group: list[CandidateResult], prefer: str, metric: str) -> CandidateResult:
    """The preferred candidate of ``group`` (best first). Each figure of the preference in turn keeps
    the candidates within its tolerance of the lowest (a figure nobody knows is passed over, one
    somebody knows keeps only those who know it); the higher mrr@k, then the rank, decides the rest.
    Measured seconds vary from run to run: a difference inside the tolerance is noise, not a reason
    to give up quality."""
    figures: list[tuple[Callable[[CandidateResult], float | None], float]] = []
    if prefer == "cost":
        figures = [(_monthly, COST_TOLERANCE), (_per_1k, COST_TOLERANCE), (_p95, LATENCY_TOLERANCE)]
    elif prefer == "latency":
        figures = [(_p95, LATENCY_TOLERANCE)]
    left = list(group)
    for figure, tolerance in figures:
        known = [(v, c) for c in left if (v := figure(c)) is not None]
        if known:
            lowest = min(v for v, _ in known)
            left = [c for v, c in known if v <= lowest * (1 + tolerance) + 1e-12]
    mrr = _score(metric)
    return min(left, key=lambda c: (-mrr(c), _rank(c)))


def _reason(
    best: CandidateResult,
    pick: CandidateResult,
    against: CandidateResult | None,
    row: dict | None,
    tied: list[str],
    prefer: str,
    metric: str,
    n: int,
) -> str:
    """One sentence: why this candidate, with the test's p-value and the number of questions."""
    mrr = _score(metric)
    pref = f'prefer = "{prefer}"'
    if against is None or row is None:
        return f"{best.id} is the only candidate ({metric} {mrr(best):.3f}, n = {n}); {pref}."
    test = f"{_p(row['p_holm'])} after Holm, n = {n}"
    if pick is not best:
        versus = f"{metric} {mrr(pick):.3f} vs {mrr(best):.3f}, {test}"
        return f"{pick.id} is tied with the best, {best.id} ({versus}), and {_advantage(pick, best, prefer)}; {pref}."
    lead = f"{best.id} has the best {metric} ({mrr(best):.3f})"
    closest = f"the runner-up, {against.id} {mrr(against):.3f}, {test}"
    if not tied:
        return f"{lead} and every other candidate is significantly worse ({closest}); {pref}."
    group = f"the {len(tied)} candidate{'s' if len(tied) > 1 else ''} tied with it ({closest})"
    if prefer == "cost":
        return f"{lead} and none of {group} is {COST_TOLERANCE:.0%} or more cheaper; {pref}."
    if prefer == "latency":
        return f"{lead} and none of {group} is {LATENCY_TOLERANCE:.0%} or more faster at p95; {pref}."
    return f"{lead}, which {pref} keeps over {group}."


def _advantage(pick: CandidateResult, best: CandidateResult, prefer: str) -> str:
    """What the pick does better than the best: the first figure of the preference that differs."""
    a, b = _monthly(pick), _monthly(best)
    if prefer == "cost" and a is not None and b is not None and b > a * (1 + COST_TOLERANCE):
        return f"costs {usd(b - a)} a month less ({usd(a)} against {usd(b)})"
    if prefer == "cost" and a is not None and b is None:
        return f"its monthly cost is known ({usd(a)}) where the best's is not"
    a, b = _per_1k(pick), _per_1k(best)
    if prefer == "cost" and a is not None and b is not None and b > a * (1 + COST_TOLERANCE):
        return f"costs {usd((b - a) * 1000)} less per million queries"
    if prefer == "cost" and a is not None and b is None:
        return f"its cost per query is known ({usd(a * 1000)} per million) where the best's is not"
    a, b = _p95(pick), _p95(best)
    if a is not None and b is not None and b > a * (1 + LATENCY_TOLERANCE):
        same = "costs the same and " if prefer == "cost" else ""
        return f"{same}answers in {a:.1f} ms at p95 against {b:.1f} ms"
    return "costs and answers the same"


def _monthly_line(pick: CandidateResult) -> str:
    """The pick's monthly cost at the team's scale, and what it adds up."""
    monthly = _number(pick.ops.get("monthly_cost_usd"))
    includes = pick.ops.get("monthly_cost_includes")
    if monthly is None:
        if "monthly_cost_usd" not in pick.ops:
            return ""
        if _number(pick.ops.get("monthly_embedding_usd")) is None:
            why = "a price it needs is missing (see its price_source)"
        elif _number(pick.ops.get("storage_gb_at_scale")) is None:
            why = "its index size is not known"
        else:
            why = "the time to embed its corpus was not measured"
        return f"Its monthly cost is unknown: {why}."
    parts = list(includes) if isinstance(includes, list) else []
    missing = [p for p in ("storage", "compute") if p not in parts]
    note = f"{', '.join(parts)}" if parts else "embedding"
    if missing:
        keys = {"storage": "storage_usd_per_gb_month", "compute": "hourly_usd"}
        note += f"; no {' or '.join(missing)} price in [scale]: set {' and '.join(keys[m] for m in missing)}"
    return f"At your scale it costs {usd(monthly)} a month ({note})."


# --- small readers -------------------------------------------------------------------------------


def _score(metric: str) -> Callable[[CandidateResult], float]:
    return lambda c: _number(c.quality.get(metric)) or 0.0


def _monthly(c: CandidateResult) -> float | None:
    return _number(c.ops.get("monthly_cost_usd"))


def _per_1k(c: CandidateResult) -> float | None:
    return _number(c.ops.get("cost_per_1k_queries_usd"))


def _p95(c: CandidateResult) -> float | None:
    stored = _number(c.ops.get("end_to_end_ms_p95"))
    return stored if stored is not None else costs.end_to_end_ms(c, "p95")


def _rank(c: CandidateResult) -> float:
    return math.inf if c.rank is None else c.rank


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def _number(value: object) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return None
    return float(value)
