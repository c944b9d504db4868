"""The recommendation in words: the sentences summary.json keeps (``line``, ``reason``) and the
terminal and report.pdf show, rendered from ``bench.evaluation.decision.Recommendation``'s figures
and the candidates they name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bench.core.records import QuestionRecord
from bench.core.sections import JsonObject, as_number
from bench.core.summary import CandidateResult, RunSummary
from bench.evaluation import pipeline_gains
from bench.evaluation.decision import (
    ALPHA,
    COST_TOLERANCE,
    EQUIVALENCE,
    LATENCY_TOLERANCE,
    POWER,
    SMALL_GOLDSET,
    Advantage,
    Recommendation,
    recommend,
)
from bench.evaluation.scale import Scale
from bench.formatting import usd

Candidates = Mapping[str, CandidateResult]


def recommendation(
    candidates: Sequence[CandidateResult],
    records: Sequence[QuestionRecord],
    k: int,
    margin: float,
    prefer: str = "cost",
    scale: Scale | None = None,
    equivalence: float | None = EQUIVALENCE,
    metric_name: str = "mrr",
) -> JsonObject:
    """The run's recommendation as summary.json keeps it: ``recommend``'s figures and their sentences."""
    return stored(recommend(candidates, records, k, margin, prefer, scale, equivalence, metric_name), candidates)


def stored(rec: Recommendation, candidates: Sequence[CandidateResult]) -> JsonObject:
    """``rec`` as summary.json keeps it, ``line`` after the pick and ``reason`` after the questions."""
    figures = rec.to_dict()
    if rec.pick is None:
        return {**figures, "line": line(rec, {})}
    by_id = {c.id: c for c in candidates}
    out: JsonObject = {}
    for key, value in figures.items():
        out[key] = value
        if key == "pick":
            out["line"] = line(rec, by_id)
        elif key == "n_questions":
            out["reason"] = reason(rec, by_id)
    return out


def recommendation_line(summary: RunSummary) -> str:
    """The line the terminal prints: rendered from the stored figures, or as an older run wrote it."""
    stored_rec = summary.recommendation or {}
    rec = Recommendation.from_dict(stored_rec) if "metric" in stored_rec else None
    if rec is None:
        return str(stored_rec.get("line", ""))
    return line(rec, {c.id: c for c in summary.candidates})


def line(rec: Recommendation, candidates: Candidates) -> str:
    """The reason, the pick's monthly cost and, where worth saying, the questions that would separate."""
    if rec.pick is None:
        return f"no recommendation: no candidate has a {rec.metric} score"
    pick = candidates[rec.pick]
    chosen = selection_line(rec) if rec.selection is not None and rec.selection.large else ""
    parts = (
        reason(rec, candidates), technique_line(rec, candidates), monthly_line(pick), needed_line(rec, candidates),
        chosen,
    )  # fmt: skip
    return " ".join(part for part in parts if part)


def technique_line(rec: Recommendation, candidates: Candidates) -> str:
    """What the pick's technique (a question rewrite, a context header) gains over the same pipeline
    without it, by the run's test where the pick is the best, and what it adds to latency and cost."""
    assert rec.pick is not None
    pick = candidates[rec.pick]
    found = pipeline_gains.technique(pick)
    if found is None or found[0] not in candidates:
        return ""
    base_id, words = found
    base, metric = candidates[base_id], rec.metric
    gain = _score(pick, metric) - _score(base, metric)
    row = rec.comparison(base_id) if rec.pick == rec.best else None
    test = f", {_p(row.p_holm)} after Holm" if row is not None else ""
    tied = " (tied with it: the technique is not shown to help)" if base_id in rec.tied else ""
    extra = []
    if (rewrite := as_number(pick.ops.latency.rewrite_ms_p50)) is not None:
        extra.append(f"+{rewrite:,.0f} ms p50 per query")
    after, before = as_number(pick.ops.cost.monthly_cost_usd), as_number(base.ops.cost.monthly_cost_usd)
    if after is not None and before is not None:
        extra.append(f"{'+' if after >= before else '−'}{usd(abs(after - before))} a month")
    cost = f", for {' and '.join(extra)}" if extra else ""
    return (
        f"It {words}: {metric} {pipeline_gains.signed(gain)} over {base_id} ({_score(base, metric):.3f}{test})"
        f"{tied}{cost}."
    )


def selection_line(rec: Recommendation) -> str:
    """What picking the best this way scores on questions not used to pick it, beside its figure here
    (the winner's curse), and how often the best won a fold; "" when the run did not estimate it."""
    chosen = rec.selection
    if chosen is None or rec.best is None:
        return ""
    share = chosen.picked.get(rec.best, 0.0)
    estimate = (
        f"picking the best this way scores {chosen.metric} {chosen.adjusted:.3f} on questions not used to pick it "
        f"(cross-validated over {chosen.folds} folds × {chosen.repeats} splits), against {chosen.naive:.3f} on all "
        f"of them; {rec.best} won {share:.0%} of the folds."
    )
    if chosen.large:
        many = f"{chosen.candidates} candidates on these {chosen.questions} questions"
        return f"The best of {many} flatters itself: {estimate}"
    return estimate[0].upper() + estimate[1:]


def reason(rec: Recommendation, candidates: Candidates) -> str:
    """One sentence: why this candidate, with the test's p-value and the number of questions."""
    assert rec.pick is not None and rec.best is not None
    best, pick, metric, n = candidates[rec.best], candidates[rec.pick], rec.metric, rec.n_questions
    pref = f'prefer = "{rec.prefer}"'
    row = rec.comparison(rec.against)
    if rec.why == "only" or row is None:
        return f"{best.id} is the only candidate ({metric} {_score(best, metric):.3f}, n = {n}); {pref}."
    test = f"{_p(row.p_holm)} after Holm, n = {n}"
    margin = within(rec)
    if rec.why == "technique_unproven":
        found = pipeline_gains.technique(best)
        what = f" (it {found[1]})" if found is not None and found[0] == pick.id else ""
        status = "not significantly worse" if row.status != "equivalent" else f"equivalent {margin}"
        return (
            f"{best.id} has the best {metric} ({_score(best, metric):.3f}), but the technique it adds to "
            f"{pick.id}{what} is not shown to help: "
            f"{pick.id} scores {_score(pick, metric):.3f}, {status} ({test}); a technique costs more, so the "
            f"pipeline without it is picked, which {_advantage(rec.advantage, rec.prefer)}; {pref}."
        )
    if rec.why == "tied_pick":
        versus = f"{metric} {_score(pick, metric):.3f} vs {_score(best, metric):.3f}, {test}"
        advantage = _advantage(rec.advantage, rec.prefer)
        if margin:
            versus = (
                f"{metric} {_score(pick, metric):.3f} vs {_score(best, metric):.3f}, equivalent {margin}: "
                f"{_p(row.p_equivalence_holm)} after Holm, n = {n}"
            )
            return f"{pick.id} is equivalent to the best, {best.id} ({versus}), and {advantage}; {pref}."
        return f"{pick.id} is tied with the best, {best.id} ({versus}), and {advantage}; {pref}."
    lead = f"{best.id} has the best {metric} ({_score(best, metric):.3f})"
    closest = f"the runner-up, {row.candidate} {_score(candidates[row.candidate], metric):.3f}, {test}"
    if rec.why == "all_worse":
        return f"{lead} and every other candidate is significantly worse ({closest}); {pref}."
    if rec.why == "undecided":
        many = len(rec.undecided)
        who = f"{many} candidate{'s' if many > 1 else ''}"
        return (
            f"{lead}; the goldset shows neither a difference nor equivalence {margin} for {who} ({closest}): "
            f"undecided, too few questions, so the best is kept whatever it costs; {pref}."
        )
    many = len(rec.tied)
    some = f"the {many} candidate{'s' if many > 1 else ''}"
    group = f"{some} tied with it ({closest})"
    if margin and rec.margin_value is not None and rec.equivalence is not None:  # one parenthesis, not two
        share = f"{rec.equivalence:.0%} of the best's"
        group = f"{some} equivalent to it within ±{rec.margin_value:.3f} ({share}; {closest})"
    if rec.why == "none_cheaper":
        return f"{lead} and none of {group} is {COST_TOLERANCE:.0%} or more cheaper; {pref}."
    if rec.why == "none_faster":
        return f"{lead} and none of {group} is {LATENCY_TOLERANCE:.0%} or more faster at p95; {pref}."
    return f"{lead}, which {pref} keeps over {group}."


def within(rec: Recommendation) -> str:
    """ "(within ±0.036, 5% of the best's)" for a run that tested equivalence; "" otherwise."""
    if rec.equivalence is None or rec.margin_value is None:
        return ""
    return f"(within ±{rec.margin_value:.3f}, {rec.equivalence:.0%} of the best's)"


def _advantage(edge: Advantage | None, prefer: str) -> str:
    """What the pick does better than the best."""
    code, a, b = (edge.code, edge.pick, edge.best) if edge is not None else ("same", None, None)
    if code == "monthly" and a is not None and b is not None:
        return f"costs {usd(b - a)} a month less ({usd(a)} against {usd(b)})"
    if code == "monthly_known" and a is not None:
        return f"its monthly cost is known ({usd(a)}) where the best's is not"
    if code == "per_query" and a is not None and b is not None:
        return f"costs {usd((b - a) * 1000)} less per million queries"
    if code == "per_query_known" and a is not None:
        return f"its cost per query is known ({usd(a * 1000)} per million) where the best's is not"
    if code == "latency" and a is not None and b is not None:
        same = "costs the same and " if prefer == "cost" else ""
        return f"{same}answers in {a:.1f} ms at p95 against {b:.1f} ms"
    return "costs and answers the same"


def needed_line(rec: Recommendation, candidates: Candidates) -> str:
    """How many questions would separate the best from the pick (else the runner-up), said when the
    goldset cannot separate them or is small; "" otherwise."""
    row = rec.comparison(rec.against)
    if rec.separation is None or row is None:
        return ""
    n, needed = rec.n_questions or 0, rec.questions_needed
    pair = f"{rec.best} from {rec.against}"
    if rec.separation == "no_difference" or needed is None:
        return (
            f"The goldset cannot separate {pair}: their mean {rec.metric} differs by 0 over {n} questions, "
            f"so more questions like these would not either."
        )
    observed = f"the observed mean difference, {row.mean_diff:.3f} (sd {row.sd_diff:.3f})"
    power = f"at alpha {ALPHA:g} with {POWER:.0%} power"
    if rec.separation == "tied":
        few = f"With only {n} questions the goldset" if n < SMALL_GOLDSET else "The goldset"
        return f"{few} cannot separate {pair}: about {needed:,} questions would, at {observed}, {power}."
    if rec.separation == "undecided":
        return (
            f"Undecided: {n} questions show neither a difference between {rec.best} and {rec.against} nor that "
            f"they are equivalent {within(rec)}; about {needed:,} questions would decide, at {observed}, {power}."
        )
    return (
        f"With only {n} questions {rec.best} is separated from {rec.against}, but narrowly: about {needed:,} "
        f"questions would confirm {observed}, {power}."
    )


def monthly_line(pick: CandidateResult) -> str:
    """The pick's monthly cost at the team's scale, and what it adds up."""
    cost = pick.ops.cost
    monthly, includes = as_number(cost.monthly_cost_usd), cost.monthly_cost_includes
    if monthly is None:
        if not pick.ops.has("monthly_cost_usd"):
            return ""
        if as_number(cost.monthly_embedding_usd) is None:
            why = "a price it needs is missing (see its price_source)"
        elif as_number(pick.ops.storage.storage_gb_at_scale) is None:
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


def _score(c: CandidateResult, metric: str) -> float:
    return as_number(c.quality.get(metric)) or 0.0


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"
