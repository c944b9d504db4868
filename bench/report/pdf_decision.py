"""Page 1 of report.pdf: the decision. What to use, its metric with the 95% interval, the candidates
tied with the best and the test that tied them, the languages of the corpus and the questions
(with a warning for each model that does not read them), why this one, the pick against the best and the
cheapest (metric, monthly cost, p95 end-to-end latency, queries per second, index size), the
scale it was priced at, the next things to try, and how sure to be.

It reads the run's recommendation figures (summary.json) and says the pick's reason from them
(``bench.report.decision_text``); for a run stored before those figures it fills in the rest: the
tied group from the all-pairs tests, the interval from the bootstrap, the reason as the run wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.core.findings import ChunkersApart, Finding
from bench.core.measures import metric_key
from bench.core.sections import as_number
from bench.core.summary import CandidateResult, Manifest, RunSummary
from bench.evaluation.costs import best_candidate
from bench.evaluation.decision import Recommendation
from bench.evaluation.findings import RUN
from bench.evaluation.judged import JUDGE_ONLY
from bench.formatting import p_value, with_ci
from bench.report import decision_text, ops_view
from bench.report.answers_view import headline as answers_headline
from bench.report.findings_text import finding_text
from bench.report.judge_text import judge_lines
from bench.report.pdf_layout import GREY, Para, Section, Table
from bench.text.languages import describe

ALPHA = 0.05
STEPS = 3  # next things to try on page 1
LANGUAGE_WARNINGS = 3  # warnings about languages on page 1; the rest are in the manifest


@dataclass(frozen=True)
class Decision:
    pick: CandidateResult
    metric: str
    value: float
    ci: tuple[float, float] | None  # the pick's 95% interval
    best: CandidateResult
    tied: list[str]  # tied with the best, the best itself left out; None-free
    tested: bool  # whether a paired test decided the tied group
    test: str
    alpha: float
    n: int | None
    reason: str
    questions_needed: int | None
    p_value: float | None
    undecided: list[str] | None = None  # neither worse nor shown equivalent; None: a run before equivalence was tested
    within: str = ""  # the equivalence margin, "(within ±0.036, 5% of the best's)"


def decide(summary: RunSummary, manifest: Manifest, stats: dict) -> Decision | None:
    """The recommendation as the run stored its figures; an older run's completed from its statistics."""
    if not summary.candidates:
        return None
    stored = summary.recommendation or {}
    rec = Recommendation.from_dict(stored) if isinstance(stored.get("metric"), str) else None
    ids = {c.id: c for c in summary.candidates}
    if rec is None or rec.pick not in ids or rec.best not in ids:
        return _older(summary, manifest, stats, stored)
    metric = _metric(summary, rec.metric)
    pick, best = ids[rec.pick], ids[rec.best]
    pairs = (stats.get("pairs") or {}).get(metric) or []
    n = rec.n_questions or (pairs[0]["n"] if pairs else (manifest.goldset or {}).get("questions"))
    ci = rec.ci if rec.ci is not None else (stats.get("cis") or {}).get(pick.id, {}).get(metric)
    return Decision(
        pick=pick,
        metric=metric,
        value=rec.value if rec.value is not None else pick.quality.get(metric, float("nan")),
        ci=_interval(ci),
        best=best,
        tied=[t for t in rec.tied if t != best.id and t in ids],
        tested=True,
        test=rec.test,
        alpha=rec.alpha,
        n=n if isinstance(n, int) else None,
        reason=" ".join(x for x in (decision_text.reason(rec, ids), decision_text.technique_line(rec, ids)) if x),
        questions_needed=rec.questions_needed,
        p_value=as_number(rec.p_value),
        undecided=[u for u in rec.undecided if u in ids] if rec.equivalence is not None else None,
        within=decision_text.within(rec),
    )


def _older(summary: RunSummary, manifest: Manifest, stats: dict, rec: dict) -> Decision:
    """A run stored before the recommendation's figures: what it has, the rest from its statistics
    (the tied group from the all-pairs tests, the interval from the bootstrap), its reason as written."""
    ids = {c.id: c for c in summary.candidates}
    metric = _metric(summary, rec.get("metric"))
    pick = ids.get(rec.get("pick") or "", summary.candidates[0])
    best = ids.get(rec.get("best") or "") or best_candidate(summary.candidates, metric) or summary.candidates[0]
    alpha = as_number(rec.get("alpha")) or ALPHA
    pairs = (stats.get("pairs") or {}).get(metric) or []
    if isinstance(rec.get("tied"), list):
        tied, tested = [t for t in rec["tied"] if t != best.id and t in ids], True
    else:
        tied, tested = _tied(best.id, pairs, alpha), bool(pairs)
    n = rec.get("n_questions") or (pairs[0]["n"] if pairs else (manifest.goldset or {}).get("questions"))
    test = rec.get("test") or (
        f"Wilcoxon signed-rank, Holm-corrected over the {len(pairs)} pairs on {metric}" if pairs else "not tested"
    )
    value = as_number(rec.get("value"))
    ci = rec.get("ci") if isinstance(rec.get("ci"), list) else (stats.get("cis") or {}).get(pick.id, {}).get(metric)
    needed = rec.get("questions_needed")
    return Decision(
        pick=pick,
        metric=metric,
        value=value if value is not None else pick.quality.get(metric, float("nan")),
        ci=_interval(ci),
        best=best,
        tied=tied,
        tested=tested,
        test=test,
        alpha=alpha,
        n=n if isinstance(n, int) else None,
        reason=rec.get("reason") or rec.get("line") or "",
        questions_needed=needed if isinstance(needed, int) and not isinstance(needed, bool) else None,
        p_value=as_number(rec.get("p_value")),
    )


def _metric(summary: RunSummary, stored: object) -> str:
    """The stored metric where the candidates carry it, else mrr@k."""
    present = isinstance(stored, str) and stored in summary.candidates[0].quality
    return stored if isinstance(stored, str) and present else metric_key("mrr", summary.k)


def _tied(best: str, pairs: list[dict], alpha: float) -> list[str]:
    """Candidates whose paired test against the best is not significant at ``alpha`` (Holm-corrected Wilcoxon)."""
    out = []
    for p in pairs:
        if best in (p["a"], p["b"]) and p["wilcoxon_p_holm"] >= alpha:
            out.append(p["b"] if p["a"] == best else p["a"])
    return out


def cheapest(summary: RunSummary) -> CandidateResult | None:
    """The cheapest candidate a month (per 1,000 queries where the run has no monthly cost); equal
    costs: the better-ranked."""
    money = ops_view.monthly if ops_view.priced(summary) else (lambda c: as_number(c.ops.cost.cost_per_1k_queries_usd))
    known = [(cost, i, c) for i, c in enumerate(summary.candidates) if (cost := money(c)) is not None]
    return min(known, key=lambda t: (t[0], t[1]))[2] if known else None


def decision_section(
    summary: RunSummary, manifest: Manifest, stats: dict, findings: dict[str, list[Finding]], title: str
) -> Section:
    d = decide(summary, manifest, stats)
    if d is None:
        return Section(title, [Para("This run has no candidates: nothing to decide.", size=11)], listed=False)
    blocks: list = [Para(_lead(summary, manifest), size=9, colour=GREY, space_after=10)]
    blocks += _languages(manifest)
    interval = f" (95% interval {d.ci[0]:.3f} to {d.ci[1]:.3f})" if d.ci else ""
    blocks.append(Para(f"Use {d.pick.id}: {d.metric} {d.value:.3f}{interval}.", size=14, bold=True, space_after=8))
    chosen = _selection(summary)
    if chosen:
        blocks.append(Para(chosen, size=9.5, space_after=8))
    blocks.append(Para(_tied_line(d), size=9.5))
    if d.reason:
        blocks.append(Para(f"Why this one: {_sentence(d.reason)}", size=9.5, space_after=10))
    blocks.append(_versus(summary, d, stats.get("cis") or {}))
    blocks.append(Para(ops_view.scale_line(summary, manifest), size=8.5, colour=GREY, space_after=10))
    blocks += [
        Para(_sentence(note[0].upper() + note[1:]), size=8.5, colour=GREY, space_after=10)
        for note in ops_view.timing_notes(summary)
    ]
    answers = stats.get("answers")
    if answers is not None:  # the answer layer beside retrieval, never folded into the decision's metric
        blocks.append(Para(answers_headline(answers.summary), size=9.5, space_after=10))
    steps = next_steps(summary, findings, d)
    if steps:
        blocks.append(Para("Next things to try", size=11, bold=True, keep_next=True, space_after=3))
        blocks += [Para(s, size=9, bullet="•", space_after=3) for s in steps]
        blocks[-1].space_after = 10
    blocks.append(Para("How sure", size=11, bold=True, keep_next=True, space_after=3))
    blocks.append(Para(_how_sure(summary, d), size=9.5))
    return Section(title, blocks, listed=False)


def _selection(summary: RunSummary) -> str:
    """The selection-adjusted estimate in a sentence, for runs that stored it."""
    rec = Recommendation.from_dict(summary.recommendation) if summary.recommendation else None
    return decision_text.selection_line(rec) if rec is not None else ""


def _lead(summary: RunSummary, manifest: Manifest) -> str:
    corpus, goldset = manifest.corpus or {}, manifest.goldset or {}
    return (
        f"{corpus.get('documents', '?')} documents, {goldset.get('questions', '?')} questions ({summary.unit} unit), "
        f"{len(summary.candidates)} candidates compared at k = {summary.k}. Contents on page 2, terms in the glossary."
    )


def _languages(manifest: Manifest, most: int = LANGUAGE_WARNINGS) -> list[Para]:
    """The corpus's and the questions' languages in one line, and the run's warnings about models
    that do not read them; nothing for a run that did not record its languages."""
    found = manifest.languages
    if not isinstance(found, dict) or not isinstance(found.get("corpus"), dict):
        return []
    line = f"Corpus: {describe(found['corpus'])}"
    if isinstance(found.get("questions"), dict) and found["questions"].get("shares"):
        line += f" · questions: {describe(found['questions'])}"
    warnings = [w for w in found.get("warnings") or [] if isinstance(w, str)]
    blocks = [Para(line + ".", size=9, colour=GREY, space_after=6 if warnings else 10)]
    blocks += [Para(f"warning: {_sentence(w)}", size=9, bullet="•", space_after=3) for w in warnings[:most]]
    if len(warnings) > most:
        blocks.append(Para(f"{len(warnings) - most} more in manifest.json (languages).", size=9, colour=GREY))
    blocks[-1].space_after = 10
    return blocks


def _tied_line(d: Decision) -> str:
    n = f", n = {d.n}" if d.n else ""
    if not d.tested:
        return f"The best on {d.metric} is {_best_text(d)}; no paired test was run, so no tie is known."
    who = ", ".join(d.tied) if d.tied else "none"
    best = "It is the best" if d.pick.id == d.best.id else f"The best is {_best_text(d)}"
    p = (
        f"; the pick against the best: p = {p_value(d.p_value)}"
        if d.p_value is not None and d.pick.id != d.best.id
        else ""
    )
    if d.undecided is not None:
        undecided = ", ".join(d.undecided) if d.undecided else "none"
        return (
            f"{best} on {d.metric}. Equivalent to the best {d.within}: {who} (two one-sided paired t-tests, "
            f"Holm, p < {d.alpha:g}{n}). Undecided, too few questions to tell either way: {undecided}{p}."
        )
    return f"{best} on {d.metric}. Tied with the best: {who} ({d.test}, p ≥ {d.alpha:g}{n}){p}."


def _best_text(d: Decision) -> str:
    return f"{d.best.id} ({d.best.quality.get(d.metric, float('nan')):.3f})"


def _versus(summary: RunSummary, d: Decision, cis: dict[str, dict[str, list[float]]]) -> Table:
    """The pick, the best and the cheapest side by side; one row per candidate, its roles named."""
    roles: dict[str, list[str]] = {}
    for role, c in (("pick", d.pick), ("best", d.best), ("cheapest", cheapest(summary))):
        if c is not None:
            roles.setdefault(c.id, []).append(role)
    monthly = ops_view.priced(summary)
    header = [
        "role",
        "candidate",
        f"{d.metric} [95% interval]",
        "monthly cost" if monthly else "$ / 1k queries",
        "p95 ms end to end (parts)",
        "queries / s, 1 thread",
        "index size",
    ]
    rows = []
    for cid, named in roles.items():
        c = summary.candidate(cid)
        rows.append(
            [
                " · ".join(named),
                cid,
                with_ci(c.quality.get(d.metric, float("nan")), cis.get(cid, {}).get(d.metric)),
                ops_view.monthly_text(c) if monthly else ops_view.cost_per_1k_text(c),
                ops_view.latency_text(c),
                ops_view.qps_text(c),
                ops_view.index_text(c),
            ]
        )
    return Table(header, rows, size=8.5, row_height=1.9, bold=frozenset({(0, 0), (0, 1)}), space_after=6)


def next_steps(summary: RunSummary, findings: dict[str, list[Finding]], d: Decision, limit: int = STEPS) -> list[str]:
    """The few findings most worth acting on, most useful first: warnings about the pick, the pick's
    own findings, then the run's pipeline and chunker findings, questions every candidate misses,
    warnings about the candidates tied with it, and the other warnings."""
    pick, tied = d.pick.id, set(d.tied) | {d.best.id}
    run = findings.get(RUN, [])
    apart = [(f, e) for f in run if isinstance(e := f.evidence, ChunkersApart)]
    index = d.pick.id.split("/", 2)[-1]
    ours = sorted(  # the pick's own model and index first, then its model
        ((f, e) for f, e in apart if e.model == d.pick.model),
        key=lambda fe: fe[1].index != index,
    )
    ordered: list[tuple[str, Finding]] = [
        *((pick, f) for f in findings.get(pick, []) if f.severity == "warning"),
        *((pick, f) for f in findings.get(pick, []) if f.severity != "warning"),
        *((RUN, f) for f in run if f.rule == "pipelines"),
        *((RUN, f) for f, _ in (ours or apart)[:1]),
        *((RUN, f) for f in run if f.rule not in ("pipelines", "chunkers_apart")),
        *(
            (cid, f)
            for cid in findings
            if cid in tied and cid != pick
            for f in findings[cid]
            if f.severity == "warning"
        ),
        *(
            (cid, f)
            for cid in findings
            if cid not in tied and cid not in (pick, RUN)
            for f in findings[cid]
            if f.severity == "warning"
        ),
    ]
    out: list[str] = []
    seen: set[str] = set()
    for who, f in ordered:
        text = finding_text(f, summary)
        if text in seen:
            continue
        seen.add(text)
        prefix = "" if who == RUN else "The pick: " if who == pick else f"{who}: "
        out.append(prefix + ("warning: " if f.severity == "warning" else "") + text)
        if len(out) == limit:
            break
    return out


def _how_sure(summary: RunSummary, d: Decision) -> str:
    n = d.n
    text = f"{n} questions, each answered by every candidate, compared question by question." if n else ""
    if d.ci:
        text += f" The pick's {d.metric} lies between {d.ci[0]:.3f} and {d.ci[1]:.3f} in 95% of bootstrap resamples."
    if d.tested and d.tied and d.undecided is not None:
        text += (
            f" {len(d.tied)} candidate{'s are' if len(d.tied) > 1 else ' is'} shown equivalent to the best "
            f"{d.within}: among them, cost and latency decide, as they decided the pick."
        )
    elif d.tested and d.tied:
        text += (
            f" These questions cannot tell the best from the {len(d.tied)} tied with it: among them, cost and "
            "latency decide, as they decided the pick."
        )
    if d.undecided:
        text += (
            f" For {len(d.undecided)} candidate{'s' if len(d.undecided) > 1 else ''} these questions show neither "
            "a difference from the best nor equivalence: undecided, never picked over the best."
        )
    if d.questions_needed is not None:
        who = "the best and the runner-up" if d.pick.id == d.best.id else "the pick and the best"
        text += (
            f" About {d.questions_needed:,} questions would be needed to tell {who} apart at the difference "
            f"observed (p < {d.alpha:g}, 80% power)" + (f"; the goldset has {n}." if n else ".")
        )
    text += _judged(summary, d)
    timed = max((c.ops.latency.latency_samples or 0 for c in summary.candidates), default=0)
    if timed and n and timed < n:
        text += f" Latency is timed on single queries, some candidates on only the first {timed} questions."
    return text.strip()


def _judged(summary: RunSummary, d: Decision) -> str:
    """How much of the pick's top k a person judged, and the holes, for runs that counted them."""
    said = " " + " ".join(judge_lines(summary)) if summary.judge else ""
    judged = d.pick.diagnostics.judged_at_k
    if judged is None or (summary.judge or {}).get("mode") == JUDGE_ONLY:
        return said
    text = (
        f" A person's evidence covers {judged:.0%} of the pick's top {summary.k} (judged@{summary.k}): the rest counts "
        "as not relevant, though some of it may answer too."
    )
    if summary.holes:
        top = summary.holes[0]
        text += (
            f" The biggest hole: {top['unit']} reached the top {summary.k} of {top['candidates']} candidates for "
            f"{top['question_id']} and no evidence covers it; summary.json lists the {len(summary.holes)} "
            "biggest (holes)."
        )
    return text + said


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith(".") else text + "."


def _interval(ci: object) -> tuple[float, float] | None:
    """``[lo, hi]`` as numbers; None when missing or undefined (NaN)."""
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return None
    lo, hi = as_number(ci[0]), as_number(ci[1])
    return None if lo is None or hi is None else (lo, hi)
