"""The recommendation: which candidate to use, honest about what the goldset can tell apart.

The best is the top-ranked candidate on mrr@k. Every other candidate is tested against it question
by question: Wilcoxon signed-rank (two-sided) for a difference, and two one-sided t-tests for
equivalence within ±``equivalence`` × the best's figure, each family Holm-corrected. A candidate is
*worse* when the difference is significant, *tied with the best* only when it is shown equivalent,
and *undecided* when the goldset shows neither (too few questions: an undecided candidate is never
picked over the best). Runs written before equivalence was tested (``equivalence`` None) tied every
candidate not significantly worse. Among the best and the tied the team's preference decides (``prefer`` in bench.toml):
the lowest monthly cost, the lowest end-to-end p95 latency, or the best itself. Where the goldset
cannot separate two candidates (or has under ``SMALL_GOLDSET`` questions), the recommendation
estimates from the observed paired differences how many questions would.

``recommend`` returns a ``Recommendation``: figures and codes, no sentences. The sentences a run
stores and the reports show are ``bench.report.decision_text``'s, rendered from it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats

from bench.core.measures import metric_key
from bench.core.records import QuestionRecord
from bench.core.sections import JsonObject, as_number
from bench.core.summary import CandidateResult
from bench.evaluation import costs, pipeline_gains, significance
from bench.evaluation.equivalence import questions_for_equivalence, tost_p
from bench.evaluation.scale import Scale
from bench.evaluation.selection import Selection, selection

ALPHA = 0.05  # the level of both tests, each Holm-corrected over the candidates
EQUIVALENCE = 0.05  # the equivalence margin: this share of the best's figure, either way
POWER = 0.8  # of the questions-needed estimate
SMALL_GOLDSET = significance.SMALL_SAMPLE  # below this many questions the goldset separates little
TEST = "Wilcoxon signed-rank, two-sided, Holm-corrected over each candidate against the best"
EQUIVALENCE_TEST = "two one-sided paired t-tests (TOST) within the margin, Holm-corrected over each candidate"
COST_KEY = "monthly_cost_usd"
# The stored recommendation's sentences: bench.report.decision_text renders them from the figures.
SENTENCES = ("line", "reason")
# Differences in cost or latency within these shares of the lowest do not decide: they are within
# what timing the same candidate twice gives.
COST_TOLERANCE = 0.05
LATENCY_TOLERANCE = 0.10

# Why the pick: the only candidate; tied with the best and better by the preference; the best, every
# other significantly worse; the best, none of the tied enough cheaper / faster; the best, kept by quality;
# the pipeline the best (or the tied pick) adds a technique to, which the technique is not shown to beat.
Why = Literal[
    "only", "tied_pick", "all_worse", "none_cheaper", "none_faster", "kept", "undecided", "technique_unproven"
]
# What the goldset can say of the best against the pick (else the runner-up), where it is worth saying:
# nothing would separate them (no mean difference), they are tied, or they are separated narrowly.
Separation = Literal["no_difference", "tied", "narrow", "undecided"]
Status = Literal["worse", "equivalent", "undecided", ""]  # "": a run from before equivalence was tested
# What the pick does better than the best: the first figure of the preference that differs.
AdvantageCode = Literal["monthly", "monthly_known", "per_query", "per_query_known", "latency", "same"]


@dataclass(frozen=True)
class Comparison:
    """The best against one candidate: Wilcoxon's two-sided p, Holm-corrected over the family, and
    the mean and spread of the paired differences (best − other)."""

    candidate: str
    n: int
    mean_diff: float
    sd_diff: float
    p: float
    p_holm: float = math.nan
    tied: bool = False  # shown equivalent (before equivalence was tested: not significantly worse)
    p_equivalence: float = math.nan  # TOST within the margin
    p_equivalence_holm: float = math.nan
    status: Status = ""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Comparison:
        p_holm, tied = d.get("p_holm", math.nan), d.get("tied", False)
        return cls(
            d["candidate"], d["n"], d["mean_diff"], d["sd_diff"], d["p"], p_holm, tied,
            d.get("p_equivalence", math.nan), d.get("p_equivalence_holm", math.nan), d.get("status", ""),
        )  # fmt: skip


@dataclass(frozen=True)
class Advantage:
    """The pick's edge over the best: which figure (``code``) and its value for each."""

    code: AdvantageCode
    pick: float | None = None
    best: float | None = None


@dataclass(frozen=True)
class Recommendation:
    """The pick, the candidates tied with the best, the test's figures and how sure to be."""

    metric: str
    margin: float
    prefer: str
    alpha: float = ALPHA
    scale: JsonObject | None = None  # the team's scale as [scale] gave it (Scale's fields)
    pick: str | None = None
    best: str | None = None
    value: float | None = None  # the pick's metric
    ci: tuple[float, float] | None = None  # its 95% bootstrap interval
    tied: tuple[str, ...] = ()  # tied with the best, the best left out
    p_value: float | None = None  # the pick against the best, Holm-corrected; None when the pick is the best
    n_questions: int | None = None
    questions_needed: int | None = None
    monthly_cost_usd: float | None = None
    monthly_cost_includes: tuple[str, ...] | None = None
    comparisons: tuple[Comparison, ...] = ()
    against: str | None = None  # whom the reason and the questions needed compare the best with
    why: Why | None = None
    separation: Separation | None = None
    advantage: Advantage | None = None
    cost_key: str = COST_KEY
    test: str = TEST
    selection: Selection | None = None  # what picking the best this way scores on questions not used to pick
    equivalence: float | None = None  # the margin's share of the best's figure; None: a run before it was tested
    margin_value: float | None = None  # the margin in the metric's units
    undecided: tuple[str, ...] = ()  # neither worse nor shown equivalent

    def comparison(self, candidate: str | None) -> Comparison | None:
        return next((c for c in self.comparisons if c.candidate == candidate), None)

    def to_dict(self) -> JsonObject:
        """The figures as summary.json stores them (no sentences; ``decision_text`` adds those)."""
        head: JsonObject = {
            "metric": self.metric,
            "margin": self.margin,
            "cost_key": self.cost_key,
            "prefer": self.prefer,
            "test": self.test,
            "alpha": self.alpha,
            **({"scale": self.scale} if self.scale is not None else {}),
        }
        if self.pick is None:
            return {**head, **dict.fromkeys(("pick", "best", "value", "p_value", "questions_needed"))}
        return {
            **head,
            "pick": self.pick,
            "best": self.best,
            "value": self.value,
            "ci": list(self.ci) if self.ci is not None else None,
            "tied": list(self.tied),
            "p_value": self.p_value,
            "n_questions": self.n_questions,
            "questions_needed": self.questions_needed,
            "monthly_cost_usd": self.monthly_cost_usd,
            "monthly_cost_includes": list(self.monthly_cost_includes) if self.monthly_cost_includes else None,
            "comparisons": [dataclasses.asdict(c) for c in self.comparisons],
            "against": self.against,
            "why": self.why,
            "separation": self.separation,
            "advantage": dataclasses.asdict(self.advantage) if self.advantage is not None else None,
            "selection": self.selection.to_dict() if self.selection is not None else None,
            **(
                {
                    "equivalence": self.equivalence,
                    "margin_value": self.margin_value,
                    "equivalence_test": EQUIVALENCE_TEST,
                    "undecided": list(self.undecided),
                }
                if self.equivalence is not None
                else {}
            ),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Recommendation | None:
        """The stored recommendation; None for a run written before these figures were kept (``why``)."""
        if "why" not in d and d.get("pick") is not None:
            return None
        ci, includes, advantage = d.get("ci"), d.get("monthly_cost_includes"), d.get("advantage")
        chosen = d.get("selection")
        return cls(
            metric=d["metric"],
            margin=d.get("margin", 0.0),
            prefer=d.get("prefer", "cost"),
            alpha=d.get("alpha", ALPHA),
            scale=d.get("scale"),
            pick=d.get("pick"),
            best=d.get("best"),
            value=d.get("value"),
            ci=(ci[0], ci[1]) if isinstance(ci, list) and len(ci) == 2 else None,
            tied=tuple(d.get("tied") or ()),
            p_value=d.get("p_value"),
            n_questions=d.get("n_questions"),
            questions_needed=d.get("questions_needed"),
            monthly_cost_usd=d.get("monthly_cost_usd"),
            monthly_cost_includes=tuple(includes) if isinstance(includes, list) else None,
            comparisons=tuple(Comparison.from_dict(c) for c in d.get("comparisons") or ()),
            against=d.get("against"),
            why=d.get("why"),
            separation=d.get("separation"),
            advantage=Advantage(**advantage) if isinstance(advantage, dict) else None,
            cost_key=d.get("cost_key", COST_KEY),
            test=d.get("test", TEST),
            selection=Selection.from_dict(chosen) if isinstance(chosen, dict) else None,
            equivalence=d.get("equivalence"),
            margin_value=d.get("margin_value"),
            undecided=tuple(d.get("undecided") or ()),
        )


def recommend(
    candidates: Sequence[CandidateResult],
    records: Sequence[QuestionRecord],
    k: int,
    margin: float,
    prefer: str = "cost",
    scale: Scale | None = None,
    equivalence: float | None = EQUIVALENCE,
    metric_name: str = "mrr",
) -> Recommendation:
    """The pick among the candidates tied with the best, why, and what the goldset can tell apart.

    ``candidates`` carry their ranks (``scoring.rank_candidates``); ``records`` their per-question
    metrics. ``margin`` is kept in the result for readers of older runs. ``equivalence`` is the
    equivalence margin's share of the best's figure; None decides ties as runs before it did (not
    significantly worse), for recomputing them. ``metric_name`` is what the candidates are ranked by
    first (nDCG in a run a relevance judge graded alone).
    """
    metric = metric_key(metric_name, k)
    empty = Recommendation(metric, margin, prefer, scale=dataclasses.asdict(scale) if scale is not None else None)
    ranked = sorted(candidates, key=lambda c: (math.inf if c.rank is None else c.rank, c.id))
    if not ranked:
        return empty
    values = _per_question(records, metric)
    best, others = ranked[0], ranked[1:]
    best_value = as_number(best.quality.get(metric)) or 0.0
    margin_value = abs(best_value) * equivalence if equivalence is not None else None
    rows = _classified([_compare(values, best.id, c.id, margin_value) for c in others], margin_value)
    by_id = {c.id: c for c in ranked}
    tied = tuple(row.candidate for row in rows if row.tied)
    undecided = tuple(row.candidate for row in rows if row.status == "undecided")
    pick = _pick([best, *(by_id[t] for t in tied)], prefer, metric)
    chosen, pick = pick, _without_unproven_technique(pick, rows, by_id)
    n = len(_present(values.get(best.id, {})))
    against = pick if pick is not best else (others[0] if others else None)
    row = next((r for r in rows if against is not None and r.candidate == against.id), None)
    pick_values = np.array(_present(values.get(pick.id, {})), dtype=float)
    ci = significance.bootstrap_ci(pick_values) if len(pick_values) else (math.nan, math.nan)
    separation, needed = _separation(row, n, margin_value)
    includes = pick.ops.cost.monthly_cost_includes
    return dataclasses.replace(
        empty,
        pick=pick.id,
        best=best.id,
        value=as_number(pick.quality.get(metric)),
        ci=(float(ci[0]), float(ci[1])),
        tied=tied,
        p_value=row.p_holm if row is not None and pick is not best else None,
        n_questions=n,
        questions_needed=needed,
        monthly_cost_usd=_monthly(pick),
        monthly_cost_includes=tuple(includes) if isinstance(includes, list) else None,
        comparisons=tuple(rows),
        against=against.id if against is not None else None,
        why="technique_unproven" if pick is not chosen else _why(best, pick, row, tied, prefer, undecided),
        separation=separation,
        advantage=_advantage(pick, best, prefer) if pick is not best else None,
        selection=_selection(values, records, ranked, k, metric, as_number(best.quality.get(metric))),
        equivalence=equivalence,
        margin_value=margin_value,
        undecided=undecided,
    )


def _classified(rows: list[Comparison], margin_value: float | None) -> list[Comparison]:
    """Each comparison Holm-corrected and told worse, equivalent or undecided (before equivalence was
    tested, ``margin_value`` None: tied when not significantly worse)."""
    holm = significance.holm([r.p for r in rows])
    if margin_value is None:
        return [dataclasses.replace(r, p_holm=float(h), tied=float(h) >= ALPHA) for r, h in zip(rows, holm)]
    holm_equivalence = significance.holm([r.p_equivalence for r in rows])
    out = []
    for row, h, e in zip(rows, holm, holm_equivalence):
        status: Status = "worse" if h < ALPHA else "equivalent" if e < ALPHA else "undecided"
        out.append(
            dataclasses.replace(
                row, p_holm=float(h), p_equivalence_holm=float(e), status=status, tied=status == "equivalent"
            )
        )
    return out


def _selection(
    primary: dict[str, dict[str, float | None]],
    records: Sequence[QuestionRecord],
    ranked: Sequence[CandidateResult],
    k: int,
    metric: str,
    naive: float | None,
) -> Selection | None:
    """The best's figure against what picking the best this way scores on held-out questions, from
    the per-question ``metric`` (``primary``) and recall@k; None for a single candidate (nothing is
    selected) or without per-question figures."""
    if len(ranked) < 2 or naive is None:
        return None
    secondary = _per_question(records, metric_key("recall", k))
    ids = sorted(c.id for c in ranked)  # the ranking's last tie-break
    questions = list(dict.fromkeys(q for c in ids for q in primary.get(c, {})))
    if len(questions) < 2:
        return None

    def matrix(values: dict[str, dict[str, float | None]]) -> np.ndarray:
        rows = [[values.get(c, {}).get(q) for c in ids] for q in questions]
        return np.array([[math.nan if v is None else v for v in row] for row in rows], dtype=float)

    return selection(metric, ids, matrix(primary), matrix(secondary), naive)


# --- the tests -----------------------------------------------------------------------------------


def _per_question(records: Sequence[QuestionRecord], metric: str) -> dict[str, dict[str, float | None]]:
    """Candidate id → question id → the metric's value (None where the record has none)."""
    out: dict[str, dict[str, float | None]] = {}
    for rec in records:
        out.setdefault(rec.candidate, {})[rec.question_id] = as_number(rec.metrics.get(metric))
    return out


def _present(values: dict[str, float | None]) -> list[float]:
    return [v for v in values.values() if v is not None]


def _paired(values: dict, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    """The two candidates' values on the questions both have, in ``a``'s order."""
    va, vb = values.get(a, {}), values.get(b, {})
    both = [q for q, v in va.items() if v is not None and vb.get(q) is not None]
    return np.array([va[q] for q in both], dtype=float), np.array([vb[q] for q in both], dtype=float)


def _compare(values: dict, best: str, other: str, margin_value: float | None) -> Comparison:
    """The best against one candidate, before Holm's correction."""
    a, b = _paired(values, best, other)
    tests = significance.paired_tests(a, b, permutations=0)  # only Wilcoxon's p is read here
    d = np.round(a - b, 12)
    return Comparison(
        candidate=other,
        n=int(tests["n"]),
        mean_diff=float(tests["mean_diff"]),
        sd_diff=float(d.std(ddof=1)) if len(d) > 1 else 0.0,
        p=float(tests["wilcoxon_p"]),
        p_equivalence=tost_p(d, margin_value) if margin_value is not None else math.nan,
    )


def questions_needed(mean_diff: float, sd_diff: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Questions at which a mean paired difference ``mean_diff`` with standard deviation ``sd_diff``
    is significant at ``alpha`` (two-sided) with ``power``: ``n = ((z(1 − alpha/2) + z(power)) ×
    sd / mean)²``, rounded up (at least 2). None when the mean difference is 0: no number of such
    questions separates them."""
    if mean_diff == 0 or not math.isfinite(mean_diff):
        return None
    z = float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))
    return max(2, math.ceil((z * sd_diff / abs(mean_diff)) ** 2 - 1e-9))


def _separation(row: Comparison | None, n: int, margin_value: float | None) -> tuple[Separation | None, int | None]:
    """What the goldset says of the best against the pick (else the runner-up), worth saying when it
    cannot decide or is small; and how many questions would: to show the difference, or (for an
    undecided one) whichever comes first of the difference and equivalence."""
    if row is None:
        return None, None
    if row.status == "undecided":
        found = [questions_needed(row.mean_diff, row.sd_diff)]
        if margin_value is not None:
            found.append(questions_for_equivalence(row.mean_diff, row.sd_diff, margin_value))
        known = [f for f in found if f is not None]
        return "undecided", min(known) if known else None
    if row.status == "equivalent" or not (n < SMALL_GOLDSET or (row.tied and not row.status)):
        return None, None
    needed = questions_needed(row.mean_diff, row.sd_diff)
    if needed is None:
        return "no_difference", None
    return ("tied" if row.tied else "narrow"), needed


# --- the preference ------------------------------------------------------------------------------


def _pick(group: list[CandidateResult], prefer: str, metric: str) -> CandidateResult:
    """The preferred candidate of ``group`` (best first). Each figure of the preference in turn keeps
    the candidates within its tolerance of the lowest (a figure nobody knows is passed over, one
    somebody knows keeps only those who know it); the higher mrr@k, then the rank, decides the rest.
    Measured seconds vary from run to run: a difference inside the tolerance is noise, not a reason
    to give up quality."""
    figures: list[tuple[Callable[[CandidateResult], float | None], float]] = []
    if prefer == "cost":
        figures = [(_monthly, COST_TOLERANCE), (_per_1k, COST_TOLERANCE), (costs.latency_ms, LATENCY_TOLERANCE)]
    elif prefer == "latency":
        figures = [(costs.latency_ms, LATENCY_TOLERANCE)]
    left = list(group)
    for figure, tolerance in figures:
        known = [(v, c) for c in left if (v := figure(c)) is not None]
        if known:
            lowest = min(v for v, _ in known)
            left = [c for v, c in known if v <= lowest * (1 + tolerance) + 1e-12]
    return min(left, key=lambda c: (-(as_number(c.quality.get(metric)) or 0.0), _rank(c)))


def _without_unproven_technique(
    pick: CandidateResult, rows: list[Comparison], by_id: Mapping[str, CandidateResult]
) -> CandidateResult:
    """The pipeline ``pick`` adds a technique to (a rewrite of the questions, a context on the chunks),
    in turn, while the run holds it and it is not significantly worse than the best: a technique costs
    more, so it is picked only where the goldset shows that it helps. Runs written before the rule (whose
    pipelines name neither a rewrite nor a plain chunker) are decided as they were."""
    while (
        (pick.pipeline.query is not None or pick.pipeline.plain_chunker is not None)
        and (found := pipeline_gains.technique(pick)) is not None
        and found[0] in by_id
    ):
        row = next((r for r in rows if r.candidate == found[0]), None)
        if row is None or row.status == "worse" or (not row.status and not row.tied):
            break
        pick = by_id[found[0]]
    return pick


def _why(
    best: CandidateResult,
    pick: CandidateResult,
    row: Comparison | None,
    tied: tuple[str, ...],
    prefer: str,
    undecided: tuple[str, ...],
) -> Why:
    if row is None:
        return "only"
    if pick is not best:
        return "tied_pick"
    if not tied:
        return "undecided" if undecided else "all_worse"
    return "none_cheaper" if prefer == "cost" else "none_faster" if prefer == "latency" else "kept"


def _advantage(pick: CandidateResult, best: CandidateResult, prefer: str) -> Advantage:
    """What the pick does better than the best: the first figure of the preference that differs."""
    if prefer == "cost":
        for figure, code in ((_monthly, "monthly"), (_per_1k, "per_query")):
            a, b = figure(pick), figure(best)
            if a is not None and b is not None and b > a * (1 + COST_TOLERANCE):
                return Advantage(code, a, b)  # type: ignore[arg-type]
            if a is not None and b is None:
                return Advantage(f"{code}_known", a, None)  # type: ignore[arg-type]
    a, b = costs.latency_ms(pick), costs.latency_ms(best)
    if a is not None and b is not None and b > a * (1 + LATENCY_TOLERANCE):
        return Advantage("latency", a, b)
    return Advantage("same")


# --- small readers -------------------------------------------------------------------------------


def _monthly(c: CandidateResult) -> float | None:
    return as_number(c.ops.cost.monthly_cost_usd)


def _per_1k(c: CandidateResult) -> float | None:
    return as_number(c.ops.cost.cost_per_1k_queries_usd)


def _rank(c: CandidateResult) -> float:
    return math.inf if c.rank is None else c.rank
