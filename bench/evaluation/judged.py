"""A relevance judge's grades beside the goldset's: what they change, and whether they can be trusted.

The judge grades units 0–3 (UMBRELA's scale: 3 answers, 2 answers in part, 1 relates, 0 does not);
grades 2 and 3 count as relevant — 3 as an answer (relevance grade 2), 2 as support (grade 1) — as in
the TREC RAG track. Metrics with the judge's grades are shown beside the goldset's, never merged
into them: a unit a person judged keeps the person's grade, a hole takes the judge's, and every
unit the judge found relevant in some candidate's top k joins the expected units of every candidate
with the same chunker, so recall counts what the pool found.

The judge is trusted only once calibrated: its grades of units a person judged (evidence they
overlap, or grade-0 spans) agree with the person's at Cohen's κ ≥ 0.6 over at least 30 units — the
answer layer's rule and its agreement figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from bench.core.measures import metric_key
from bench.core.records import EvidenceSpan, QuestionRecord, RankedUnit, Retrieved, UnitLabel
from bench.core.sections import JsonObject
from bench.core.summary import CandidateResult
from bench.evaluation.answers import MIN_CALIBRATION_CLAIMS, MIN_CALIBRATION_KAPPA, agreement, calibrates
from bench.evaluation.holes import covered
from bench.evaluation.scoring import RANK_ORDER, rank_candidates, score_candidate
from bench.inputs.goldset import DOCUMENT

JUDGE_GRADES = (0, 1, 2, 3)
RELEVANT_FROM = 2  # the lowest judge grade that counts as relevant
CALIBRATED, UNCALIBRATED = "calibrated", "uncalibrated"
JUDGE = "judge"  # who made a label, and the "by" of evidence the judge's grades added to a record
GOLDSET_AND_JUDGE, JUDGE_ONLY = "goldset + judge", "judge only"
# In a run with questions only, candidates rank by the judge's graded relevance of their top k.
JUDGE_ONLY_ORDER = ("ndcg", "precision")

Key = tuple[str, ...] | tuple[str, str, int, int]


def relevance_grade(judge_grade: int | None) -> int:
    """The goldset's grade a judge's grade stands for: 3 answers (2), 2 supports (1), else 0."""
    return 0 if judge_grade is None or judge_grade < RELEVANT_FROM else judge_grade - 1


def unit_key(question_id: str, unit: RankedUnit | UnitLabel, unit_kind: str) -> Key:
    """What a label is found by: the question and the unit's extent (its document in the document unit,
    where a document's extent differs between chunkers)."""
    doc = unit.doc_id
    return (question_id, doc) if unit_kind == DOCUMENT else (question_id, doc, unit.start, unit.end)


def by_key(labels: Sequence[UnitLabel], unit_kind: str) -> dict[Key, UnitLabel]:
    return {unit_key(label.question_id, label, unit_kind): label for label in labels}


def person_grade(unit: RankedUnit, evidence: Sequence[EvidenceSpan]) -> bool | None:
    """What a person judged of a unit: relevant (it overlaps evidence of grade ≥ 1), not relevant (it
    overlaps only grade-0 spans), or None (no person looked)."""
    if not covered(unit, evidence):
        return None
    return covered(unit, [e for e in evidence if e.grade > 0])


def judged_at_k(records: Sequence[Retrieved], labels: Mapping[Key, UnitLabel], k: int, unit_kind: str) -> float | None:
    """The mean share of a candidate's top k that a person or the judge (a grade given) judged."""
    shares = []
    for rec in records:
        top = rec.ranking[:k]
        if top:
            judged = 0
            for u in top:
                label = labels.get(unit_key(rec.question_id, u, unit_kind))
                judged += covered(u, rec.evidence) or (label is not None and label.grade is not None)
            shares.append(judged / len(top))
    return sum(shares) / len(shares) if shares else None


def regraded(
    records: Sequence[Retrieved], labels: Mapping[Key, UnitLabel], pool: Mapping[str, list[RankedUnit]], unit_kind: str
) -> list[Retrieved]:
    """Each record with the judge's grades of its unjudged ranked units, and the judge's relevant units
    of ``pool`` (by question: those some candidate with this chunker ranked) among its expected units
    and evidence; a unit a person judged keeps the person's grade."""
    out = []
    for rec in records:
        ranking = []
        for u in rec.ranking:
            label = labels.get(unit_key(rec.question_id, u, unit_kind))
            judge = relevance_grade(label.grade) if label is not None and not covered(u, rec.evidence) else 0
            ranking.append(dataclasses.replace(u, grade=max(u.grade, judge)) if judge > u.grade else u)
        known = {u.id for u in rec.expected}
        extra = [u for u in pool.get(rec.question_id, []) if u.id not in known and not covered(u, rec.evidence)]
        evidence = [
            EvidenceSpan(
                doc=u.doc_id,
                start=None if unit_kind == DOCUMENT else u.start,
                end=None if unit_kind == DOCUMENT else u.end,
                grade=u.grade,
                extra={"by": JUDGE},
            )
            for u in extra
        ]
        out.append(
            dataclasses.replace(
                rec, ranking=ranking, expected=[*rec.expected, *extra], evidence=[*rec.evidence, *evidence]
            )
        )
    return out


def relevant_pool(
    records: Sequence[Retrieved], labels: Mapping[Key, UnitLabel], unit_kind: str
) -> dict[str, list[RankedUnit]]:
    """By question, every unit of ``records``' rankings (one chunker's candidates) that the judge graded
    relevant and no person judged, once each, with its relevance grade and no score."""
    found: dict[str, dict[str, RankedUnit]] = {}
    for rec in records:
        for u in rec.ranking:
            label = labels.get(unit_key(rec.question_id, u, unit_kind))
            grade = relevance_grade(label.grade) if label is not None else 0
            if grade and not covered(u, rec.evidence):
                found.setdefault(rec.question_id, {}).setdefault(u.id, dataclasses.replace(u, grade=grade, score=None))
    return {q: list(units.values()) for q, units in found.items()}


def with_judge(  # noqa: PLR0913 - the run's scoring settings, one by one as score_candidate takes them
    candidates: Sequence[CandidateResult],
    records: Sequence[Retrieved],
    labels: Sequence[UnitLabel],
    *,
    k: int,
    depth: int,
    gain: str,
    unit: str,
    min_overlap: float,
    order: tuple[str, str] = RANK_ORDER,
) -> tuple[dict[str, list[QuestionRecord]], list[CandidateResult]]:
    """Every candidate's records regraded with the judge's labels and scored, and the candidates scored
    on them (judged@k counting the judge's labels) and ranked by ``order`` (mrr@k then recall@k, as
    the goldset's figures are, unless told otherwise)."""
    keyed = by_key(labels, unit)
    by_candidate: dict[str, list[Retrieved]] = {}
    for rec in records:
        by_candidate.setdefault(rec.candidate, []).append(rec)
    chunkers: dict[str, list[Retrieved]] = {}
    for cand in candidates:
        chunkers.setdefault(cand.chunker, []).extend(by_candidate.get(cand.id, []))
    pools = {name: relevant_pool(recs, keyed, unit) for name, recs in chunkers.items()}
    scored_records, scored = {}, []
    for cand in candidates:
        mine = regraded(by_candidate.get(cand.id, []), keyed, pools[cand.chunker], unit)
        scored_records[cand.id], scores = score_candidate(
            mine, k=k, depth=depth, gain=gain, unit=unit, min_overlap=min_overlap
        )
        diagnostics = dataclasses.replace(
            scores.diagnostics, judged_at_k=judged_at_k(scored_records[cand.id], keyed, k, unit)
        )
        scored.append(
            dataclasses.replace(cand, quality=scores.quality, curve=scores.curve, diagnostics=diagnostics, rank=None)
        )
    return scored_records, rank_candidates(scored, k, order)


def calibration_pairs(
    records: Sequence[Retrieved], labels: Mapping[Key, UnitLabel], unit_kind: str
) -> list[tuple[bool, bool]]:
    """(person, judge) relevance of every unit both judged, once each."""
    pairs: dict[Key, tuple[bool, bool]] = {}
    for rec in records:
        for u in rec.ranking:
            key = unit_key(rec.question_id, u, unit_kind)
            label = labels.get(key)
            person = person_grade(u, rec.evidence)
            if label is not None and label.grade is not None and person is not None:
                pairs.setdefault(key, (person, label.grade >= RELEVANT_FROM))
    return list(pairs.values())


def calibration(
    pairs: Sequence[tuple[bool, bool]],
    min_pairs: int = MIN_CALIBRATION_CLAIMS,
    min_kappa: float = MIN_CALIBRATION_KAPPA,
) -> JsonObject:
    """Whether the judge's grades may be trusted: Cohen's κ between person and judge (relevant or not)
    over the units both judged, with the confusion matrix."""
    out: JsonObject = {"status": UNCALIBRATED, "pairs": len(pairs), "min_pairs": min_pairs, "min_kappa": min_kappa}
    if not pairs:
        out["why"] = "no unit a person judged was graded by the judge"
        return out
    found = agreement(pairs)
    (tn, fp), (fn, tp) = found.confusion
    out |= {
        "agreement": found.agreement,
        "kappa": found.kappa,
        "confusion": {
            "person_relevant_judge_relevant": tp,
            "person_relevant_judge_not": fn,
            "person_not_judge_relevant": fp,
            "person_not_judge_not": tn,
        },
    }
    if not any(not person for person, _ in pairs):
        out["why"] = (
            "every unit a person judged is relevant, so agreement cannot be told from chance: mark passages "
            "judged not relevant (grade 0 evidence, or `bench goldset review`)"
        )
    elif calibrates(len(pairs), found.kappa, min_pairs, min_kappa):
        out["status"] = CALIBRATED
    else:
        kappa = "undefined" if found.kappa is None else f"{found.kappa:.2f}"
        out["why"] = f"κ = {kappa} on {len(pairs)} units; needs at least {min_pairs} at κ ≥ {min_kappa:g}"
    return out


def tallies(labels: Sequence[UnitLabel]) -> JsonObject:
    """How many units the judge was asked about, graded, and found relevant."""
    return {
        "labels": len(labels),
        "graded": sum(label.grade is not None for label in labels),
        "relevant": sum(relevance_grade(label.grade) > 0 for label in labels),
    }


def view(
    goldset_ranked: Sequence[CandidateResult],
    judged_ranked: Sequence[CandidateResult],
    labels: Sequence[UnitLabel],
    k: int,
) -> JsonObject:
    """summary.json's ``judge`` figures for a run with a goldset: each candidate's metrics, rank and
    judged@k with the judge's grades (``with_judge``), and the best both ways (whether they differ)."""
    mrr, recall = metric_key("mrr", k), metric_key("recall", k)
    best_goldset = goldset_ranked[0].id if goldset_ranked else None
    best_judged = judged_ranked[0].id if judged_ranked else None
    return {
        "mode": GOLDSET_AND_JUDGE,
        **tallies(labels),
        "candidates": {
            c.id: {"rank": c.rank, "quality": c.quality.to_dict(), "judged_at_k": c.diagnostics.judged_at_k}
            for c in judged_ranked
        },
        "headline": [mrr, recall],
        "best": best_judged,
        "best_goldset": best_goldset,
        "picks_differ": best_judged != best_goldset,
    }


def graded_holes(holes: Sequence[JsonObject], labels: Mapping[Key, UnitLabel], unit_kind: str) -> list[JsonObject]:
    """summary.json's holes, each with the judge's grade (None where it gave none): the queue people
    confirm into the goldset."""
    out = []
    for hole in holes:
        qid, doc = str(hole["question_id"]), str(hole["doc_id"])
        key: Key = (qid, doc) if unit_kind == DOCUMENT else (qid, doc, int(hole["start"]), int(hole["end"]))
        label = labels.get(key)
        out.append({**hole, "judge_grade": None if label is None else label.grade})
    return out
