"""The diagnosis rules (``bench.evaluation.findings`` runs them): each names a pattern in a run's figures and
returns a ``Finding`` with the figures behind it, one frozen dataclass per rule (``bench.core.findings``);
``bench.report.findings_text`` says it and what to try.

Precision@k counts relevant units over k, so with one or two relevant units per question it is low by
construction. Rules judge it against its ceiling, the mean over questions of min(k, |E(q)|) / k: exact from the
records' ``expected`` lists, else estimated as min(1, precision / recall), which is exact when every question has
the same number of relevant units.

Rules (severity) and thresholds (module constants):

* too_conservative (info): recall@k < LOW_RECALL (0.5) while precision@k ≥ FULL_PRECISION_SHARE (0.8) of its
  ceiling. The top k is full of relevant units, yet most are missed: questions have more relevant units than k.
* too_broad (info): recall@k ≥ HIGH_RECALL (0.8) while precision@k < BROAD_PRECISION (0.5). Coverage is solved,
  but most of what reaches the LLM is filler; the text says how much of that the ceiling makes unavoidable at k.
* mismatch (warning): recall@k < LOW_RECALL and precision@k < LOW_PRECISION_SHARE (0.5) of its ceiling (the
  retriever misses more than it finds), or a single dense model does no better on recall@k than plain BM25 on the
  same chunker (neither fused nor reranked: a pipeline's recall is not the model's).
* wrong_order (info): the relevant units are retrieved but ranked low. Either (a) hit_rate@k ≥ ORDER_MIN_HIT_RATE
  (0.5) and mrr@k / hit_rate@k sits in the lower ORDER_SHARE (a third) of the way from random order within the top
  k (H_k / k, 0.46 at k = 5) to perfect (1.0); or (b) hit rate gains ≥ LATE_HIT_SHARE (0.2) between k and depth.
* near_duplicates (info, needs records): ≥ NEAR_DUPLICATE_SHARE (15%) of questions have |score gap| below
  NEAR_ZERO_GAP (0.005 cosine); for BM25, cross-encoders and rerank APIs the bound is NEAR_ZERO_GAP_LEXICAL (1%)
  of the mean relevant score; silent for fusions, whose scores are fused ranks or rescaled lists.
* truncation: truncated chunks ≥ TRUNCATED_CHUNK_SHARE (10%) or never-embedded tokens ≥ TRUNCATED_TOKEN_SHARE
  (1%); a warning from TRUNCATED_TOKEN_WARNING (2%) of the tokens lost, info below.
* misses (warning): ≥ MISS_SHARE (20%) of questions have no relevant unit even within depth.
* no_relevant_unit (warning): any question whose evidence no unit satisfies; it scores 0 whatever the retriever.
* chunkers_apart (run, info): same model and index, span_precision@k ≥ SPAN_PRECISION_RATIO (1.5×) another
  chunker's at recall@k no more than RECALL_TOLERANCE (0.05) lower.
* missed_by_all (run, info, needs records): questions that no candidate gets a relevant unit into the top k for.
* pipelines (run, info): each fusion against its best part and each reranked candidate against its first stage.

Where a finding suggests a reranker or a fusion, its words add what the run measured of one built on this
candidate (``bench.evaluation.pipeline_gains``), or the bench.toml line that would measure it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench.core.findings import (
    CandidateEvidence,
    ChunkerFigures,
    ChunkersApart,
    Finding,
    LateHits,
    Mismatch,
    MissedByAll,
    Misses,
    NearDuplicates,
    NoRelevantUnit,
    OrderInTopK,
    PipelineGain,
    Pipelines,
    Severity,
    TooBroad,
    TooConservative,
    Truncation,
    WrongOrder,
)
from bench.core.measures import metric_key
from bench.core.records import QuestionRecord
from bench.core.scores import Diagnostics
from bench.core.summary import CandidateResult, RunSummary
from bench.evaluation import pipeline_gains

# Below this recall@k the retriever misses more relevant units than it finds.
LOW_RECALL = 0.5
# From this recall@k four relevant units in five reach the top k: coverage is solved, noise is what is left.
HIGH_RECALL = 0.8
# Precision@k at this share of its ceiling means the top k is (nearly) full of relevant units.
FULL_PRECISION_SHARE = 0.8
# Below this share of its ceiling, fewer than half the slots relevant units could fill are filled.
LOW_PRECISION_SHARE = 0.5
# Below this precision@k, more than half of the units handed on are not relevant.
BROAD_PRECISION = 0.5
# Under this hit rate the problem is finding the evidence at all (mismatch), not its order.
ORDER_MIN_HIT_RATE = 0.5
# mrr/hit_rate in the lower third between random order in the top k and perfect order: order is barely used.
ORDER_SHARE = 1 / 3
# A fifth of the questions first finding a relevant unit between k and depth is worth a reranker.
LATE_HIT_SHARE = 0.2
# Cosine gaps this small are what near-identical texts give; about 1% of a typical 0.5 relevant score.
NEAR_ZERO_GAP = 0.005
# BM25 scores have no fixed scale: the near-zero band is this share of the mean relevant score.
NEAR_ZERO_GAP_LEXICAL = 0.01
# Smooth gap distributions put well under a tenth of questions in the band; this share is a pile-up.
NEAR_DUPLICATE_SHARE = 0.15
# Too few gaps make any share noise.
MIN_GAP_QUESTIONS = 10
# One chunk in ten cut at the model's limit is enough to lose evidence regularly.
TRUNCATED_CHUNK_SHARE = 0.10
# One corpus token in a hundred never embedded.
TRUNCATED_TOKEN_SHARE = 0.01
# One token in fifty lost: evidence in chunk tails is being lost, not risked.
TRUNCATED_TOKEN_WARNING = 0.02
# A fifth of the questions with nothing relevant within depth: no reranker can recover them.
MISS_SHARE = 0.2
# Recall differences under this are within noise on a goldset of a couple of hundred questions.
RECALL_TOLERANCE = 0.05
# 1.5x the span precision: the LLM reads a third less text for each character of evidence.
SPAN_PRECISION_RATIO = 1.5


@dataclass(frozen=True)
class CandidateView:
    """One candidate's figures, with what the rules derive from the records or the run."""

    data: CandidateResult
    k: int
    depth: int
    unit: str
    records: list[QuestionRecord]
    ceiling: float | None  # achievable precision@k
    units: float | None  # mean relevant units per question
    baseline: CandidateResult | None  # plain BM25 on the same chunker, for a single dense model
    # for a candidate whose questions a chat model rewrites, whether the run holds it asked as written,
    # whose findings speak for its model and chunks (the rewrite's own effect is a pipeline finding)
    twin_in_run: bool = False

    @classmethod
    def of(cls, summary: RunSummary, data: CandidateResult, records: list[QuestionRecord]) -> CandidateView:
        """``data`` as the rules see it; ``records`` are its own (none: the ceiling is estimated)."""
        k = summary.k
        ceiling, units = _ceiling(k, records, data.quality.of("precision", k), data.quality.of("recall", k))
        return cls(
            data=data,
            k=k,
            depth=summary.depth,
            unit=summary.unit,
            records=records,
            ceiling=ceiling,
            units=units,
            baseline=_baseline(summary.candidates, data),
            twin_in_run=pipeline_gains.as_written(data) in {c.id for c in summary.candidates},
        )

    def metric(self, name: str) -> float | None:
        return self.data.quality.of(name, self.k)

    def curve(self, k: int) -> float | None:
        return self.data.curve.hit_rate(k)

    @property
    def diagnostics(self) -> Diagnostics:
        return self.data.diagnostics

    def finding(self, severity: Severity, evidence: CandidateEvidence) -> Finding:
        return Finding(severity, (self.data.id,), evidence)


def _ceiling(
    k: int, records: list[QuestionRecord], precision: float | None, recall: float | None
) -> tuple[float | None, float | None]:
    """Achievable precision@k and mean relevant units per question: exact from records, else estimated."""
    if records:
        sizes = [len(r.expected) for r in records]
        return sum(min(k, n) for n in sizes) / (k * len(sizes)), sum(sizes) / len(sizes)
    if not precision or not recall:
        return None, None
    return min(1.0, precision / recall), k * precision / recall


def _baseline(candidates: Sequence[CandidateResult], data: CandidateResult) -> CandidateResult | None:
    """Plain BM25 on the same chunker: the only recall a single dense model can be fairly held against. A
    reranked BM25 is not keyword search, and a fused or reranked candidate's recall is not its model's."""
    if not pipeline_gains.is_single(data, "dense"):
        return None
    return next((c for c in candidates if pipeline_gains.is_single(c, "lexical") and c.chunker == data.chunker), None)


# ---------------------------------------------------------------------------------------------------
# Candidate rules, each after the figures it finds


def _too_conservative(c: CandidateView) -> Finding | None:
    recall, precision = c.metric("recall"), c.metric("precision")
    if recall is None or precision is None or not c.ceiling or c.units is None:
        return None
    if recall >= LOW_RECALL or precision < FULL_PRECISION_SHARE * c.ceiling:
        return None
    evidence = TooConservative(recall=recall, precision=precision, precision_ceiling=c.ceiling, relevant_units=c.units)
    return c.finding("info", evidence)


def _too_broad(c: CandidateView) -> Finding | None:
    recall, precision = c.metric("recall"), c.metric("precision")
    if recall is None or precision is None or recall < HIGH_RECALL or precision >= BROAD_PRECISION:
        return None
    evidence = TooBroad(
        recall=recall,
        precision=precision,
        precision_ceiling=c.ceiling,
        span_precision=c.metric("span_precision"),
        relevant_units=c.units,
    )
    return c.finding("info", evidence)


def _mismatch(c: CandidateView) -> Finding | None:
    """Recall and precision both low (``low``), or a single dense model no better than BM25 on its chunker."""
    recall, precision = c.metric("recall"), c.metric("precision")
    if recall is None or precision is None or c.twin_in_run:
        return None
    share = precision / c.ceiling if c.ceiling else (0.0 if precision == 0 else None)
    low = recall < LOW_RECALL and share is not None and share < LOW_PRECISION_SHARE
    base = c.baseline.quality.of("recall", c.k) if c.baseline else None
    beaten = base is not None and base >= recall
    if not (low or beaten):
        return None
    evidence = Mismatch(
        recall=recall,
        precision=precision,
        precision_ceiling=c.ceiling,
        hit_rate=c.metric("hit_rate"),
        bm25_recall=base,
        low=low,
    )
    return c.finding("warning", evidence)


def _wrong_order(c: CandidateView) -> Finding | None:
    """The first relevant unit lands low in the top k (``in_top``), or past k (``late``)."""
    in_top, late = _order_in_top_k(c), _late_hits(c)
    if in_top is None and late is None:
        return None
    return c.finding("info", WrongOrder(in_top=in_top, late=late))


def _order_in_top_k(c: CandidateView) -> OrderInTopK | None:
    hit, mrr = c.metric("hit_rate"), c.metric("mrr")
    if hit is None or mrr is None or hit < ORDER_MIN_HIT_RATE or c.k < 2:
        return None
    random = sum(1 / r for r in range(1, c.k + 1)) / c.k  # mrr/hit if the first hit sat anywhere in the top k
    bound = random + ORDER_SHARE * (1 - random)
    if mrr / hit >= bound:
        return None
    return OrderInTopK(
        hit_rate=hit,
        mrr=mrr,
        mrr_hit_ratio=mrr / hit,
        ratio_bound=bound,
        random_ratio=random,
        rank_1_hit_rate=c.curve(1),
    )


def _late_hits(c: CandidateView) -> LateHits | None:
    at_k, at_depth = c.curve(c.k), c.curve(c.depth)
    if c.depth <= c.k or at_k is None or at_depth is None or at_depth - at_k < LATE_HIT_SHARE:
        return None
    return LateHits(hit_rate_at_k=at_k, hit_rate_at_depth=at_depth, late_share=at_depth - at_k)


def _near_duplicates(c: CandidateView) -> Finding | None:
    gaps = [g for r in c.records if (g := r.diagnostics.score_gap) is not None]
    band = _gap_band(c)
    if len(gaps) < MIN_GAP_QUESTIONS or band is None:
        return None
    share = sum(abs(g) < band for g in gaps) / len(gaps)
    if share < NEAR_DUPLICATE_SHARE:
        return None
    return c.finding("info", NearDuplicates(near_zero_share=share, band=band, questions=len(gaps)))


def _gap_band(c: CandidateView) -> float | None:
    scale = pipeline_gains.score_scale(c.data)
    if scale == "fused":
        return None
    if scale == "cosine":
        return NEAR_ZERO_GAP
    mean = c.diagnostics.mean_relevant_score
    return NEAR_ZERO_GAP_LEXICAL * abs(mean) if mean else None


def _truncation(c: CandidateView) -> Finding | None:
    indexing = c.data.ops.indexing
    n, cut = indexing.n_chunks, indexing.truncated_chunks
    lost = indexing.truncated_token_share or 0.0
    if not n or cut is None or c.twin_in_run:
        return None
    share = cut / n
    if share < TRUNCATED_CHUNK_SHARE and lost < TRUNCATED_TOKEN_SHARE:
        return None
    severity: Severity = "warning" if lost >= TRUNCATED_TOKEN_WARNING else "info"
    return c.finding(severity, Truncation(truncated_chunks=cut, n_chunks=n, chunk_share=share, token_share=lost))


def _misses(c: CandidateView) -> Finding | None:
    n, missed = c.diagnostics.n_questions, c.diagnostics.missed
    if not n or missed is None or missed / n < MISS_SHARE or c.twin_in_run:
        return None
    return c.finding("warning", Misses(missed=missed, n_questions=n, share=missed / n))


def _no_relevant_unit(c: CandidateView) -> Finding | None:
    lost = c.diagnostics.questions_without_relevant_unit
    if not lost:
        return None
    return c.finding("warning", NoRelevantUnit(questions=lost, n_questions=c.diagnostics.n_questions))


CANDIDATE_RULES: tuple[Callable[[CandidateView], Finding | None], ...] = (
    _no_relevant_unit,
    _mismatch,
    _too_conservative,
    _too_broad,
    _wrong_order,
    _misses,
    _near_duplicates,
    _truncation,
)


# ---------------------------------------------------------------------------------------------------
# Run-level rules


def _chunkers_apart(summary: RunSummary, by_candidate: dict[str, list[QuestionRecord]]) -> list[Finding]:
    k = summary.k
    groups: dict[tuple, list[CandidateResult]] = defaultdict(list)
    for c in summary.candidates:
        if c.quality.of("recall", k) is not None and c.quality.of("span_precision", k) is not None:
            # like with like: the same first stage, query setting and reranker, chunkers apart
            groups[(c.model, c.id.split("/", 2)[2])].append(c)
    return [f for (model, index), cands in groups.items() for f in _apart_in_group(model, index, cands, k)]


def _apart_in_group(model: str, index: str, cands: list[CandidateResult], k: int) -> list[Finding]:
    """Each chunker, best span precision first, against those it beats at similar or better recall."""

    def get(c: CandidateResult, name: str) -> float:
        return c.quality[metric_key(name, k)]

    def figures(c: CandidateResult) -> ChunkerFigures:
        return ChunkerFigures(chunker=c.chunker, recall=get(c, "recall"), span_precision=get(c, "span_precision"))

    ordered = sorted(cands, key=lambda c: -get(c, "span_precision"))
    covered: set[str] = set()
    out = []
    for a in ordered:
        if a.id in covered:
            continue
        beaten = [
            b
            for b in ordered
            if b is not a
            and b.id not in covered
            and get(a, "span_precision") >= SPAN_PRECISION_RATIO * get(b, "span_precision")
            and get(a, "recall") >= get(b, "recall") - RECALL_TOLERANCE
        ]
        if beaten:
            covered.update(b.id for b in beaten)
            evidence = ChunkersApart(model=model, index=index, preferred=figures(a), beaten=tuple(map(figures, beaten)))
            out.append(Finding("info", (a.id, *(b.id for b in beaten)), evidence))
    return out


def _missed_by_all(summary: RunSummary, by_candidate: dict[str, list[QuestionRecord]]) -> list[Finding]:
    k = summary.k
    ids = [c.id for c in summary.candidates if by_candidate.get(c.id)]
    if len(ids) < 2:
        return []
    found: dict[str, bool] = {}
    for cid in ids:
        for r in by_candidate[cid]:
            rank = r.first_relevant_rank
            found[r.question_id] = found.get(r.question_id, False) or bool(rank and rank <= k)
    missed = tuple(q for q, hit in found.items() if not hit)
    if not missed:
        return []
    evidence = MissedByAll(question_ids=missed, n_candidates=len(ids), n_questions=len(found))
    return [Finding("info", tuple(ids), evidence)]


def _pipelines(summary: RunSummary, by_candidate: dict[str, list[QuestionRecord]]) -> list[Finding]:
    found = pipeline_gains.measured(summary.candidates, summary.k)
    if not found:
        return []
    ids = tuple(dict.fromkeys(c.id for m in found for c in (m.pipeline, m.base)))
    gains = tuple(
        PipelineGain(pipeline=m.pipeline.id, against=m.base.id, before=m.before, after=m.after) for m in found
    )
    evidence = Pipelines(metric=metric_key(pipeline_gains.RANKING_METRIC, summary.k), gains=gains)
    return [Finding("info", ids, evidence)]


RUN_RULES: tuple[Callable[[RunSummary, dict[str, list[QuestionRecord]]], list[Finding]], ...] = (
    _pipelines,
    _chunkers_apart,
    _missed_by_all,
)
