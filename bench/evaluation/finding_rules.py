"""The diagnosis rules (``bench.evaluation.findings`` runs them): each names a pattern in a run's figures
and what to try, in plain words.

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

Where a rule suggests a reranker or a fusion, ``bench.evaluation.pipelines`` adds what the run measured of one
built on this candidate, or the bench.toml line that would measure it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from bench.core.measures import metric_key
from bench.core.operating import Operating
from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult, RunSummary
from bench.evaluation import pipelines
from bench.formatting import brief_decimal as _f
from bench.formatting import brief_percent as _pct
from bench.formatting import ratio as _ratio

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
# Question ids quoted in a sentence before "and N more".
MAX_IDS = 5


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Literal["warning", "info"]
    text: str
    evidence: dict


@dataclass(frozen=True)
class CandidateView:
    """One candidate's figures, with what the rules derive from the records or the run."""

    data: CandidateResult
    k: int
    depth: int
    unit: str
    min_overlap: float | None
    records: list[QuestionRecord]
    ceiling: float | None  # achievable precision@k
    units: float | None  # mean relevant units per question
    baseline: CandidateResult | None  # plain BM25 on the same chunker, for a single dense model
    candidates: list[CandidateResult] = field(default_factory=list)  # the whole run: pipelines built on this one

    def metric(self, name: str) -> float | None:
        return self.data.quality.get(metric_key(name, self.k))

    def curve(self, k: int) -> float | None:
        return self.data.curve.get(metric_key("hit_rate", k))

    @property
    def diagnostics(self) -> dict:
        return self.data.diagnostics or {}

    @property
    def ops(self) -> Operating:
        return self.data.ops

    @property
    def noun(self) -> str:
        """What a unit is called in sentences: a chunk or a document."""
        return _noun(self.unit)

    @property
    def lexical(self) -> bool:
        return self.data.lexical

    def advice(self, *, rerank: bool = False, fuse: bool = False) -> str:
        return pipelines.advice(self.data, self.candidates, self.k, rerank=rerank, fuse=fuse)


# ---------------------------------------------------------------------------------------------------
# Candidate rules


def _too_conservative(c: CandidateView) -> Finding | None:
    recall, precision = c.metric("recall"), c.metric("precision")
    if recall is None or precision is None or not c.ceiling:
        return None
    if recall >= LOW_RECALL or precision < FULL_PRECISION_SHARE * c.ceiling:
        return None
    fix = "Raise k." if c.unit == "document" else "Raise k, or use bigger chunks so the evidence spans fewer of them."
    text = (
        f"Recall@{c.k} is {_f(recall)} while precision@{c.k} is {_f(precision)} of an achievable "
        f"{_f(c.ceiling)}: what it returns is relevant, but questions have {c.units:.1f} relevant {c.noun}s "
        f"on average and only {c.k} fit. {fix}"
    )
    return Finding(
        "too_conservative",
        "info",
        text,
        {"recall": recall, "precision": precision, "precision_ceiling": c.ceiling, "relevant_units": c.units},
    )


def _too_broad(c: CandidateView) -> Finding | None:
    recall, precision = c.metric("recall"), c.metric("precision")
    if recall is None or precision is None or recall < HIGH_RECALL or precision >= BROAD_PRECISION:
        return None
    span = c.metric("span_precision")
    noise = f" (span_precision@{c.k} {_f(span)}: {_pct(1 - span)} of the text is not evidence)" if span else ""
    if c.ceiling is not None and c.units is not None:
        why = (
            f"questions have {c.units:.1f} relevant {c.noun}s on average, so precision@{c.k} can reach at most "
            f"{_f(c.ceiling)} (it is {_f(precision)})"
        )
    else:
        why = f"precision@{c.k} is {_f(precision)}"
    fix = f"pass fewer {c.noun}s to the LLM" + ("" if c.unit == "document" else ", or use smaller chunks")
    fix = f"{fix[0].upper()}{fix[1:]}." if c.data.pipeline.get("reranker") else f"Rerank and {fix}."
    text = f"Recall@{c.k} is {_f(recall)}, but {why}: most of the {c.k} {c.noun}s handed on are filler{noise}. {fix}"
    text += c.advice(rerank=True)
    return Finding(
        "too_broad",
        "info",
        text,
        {"recall": recall, "precision": precision, "precision_ceiling": c.ceiling, "span_precision": span},
    )


def _mismatch(c: CandidateView) -> Finding | None:
    recall, precision = c.metric("recall"), c.metric("precision")
    if recall is None or precision is None:
        return None
    share = precision / c.ceiling if c.ceiling else (0.0 if precision == 0 else None)
    low = recall < LOW_RECALL and share is not None and share < LOW_PRECISION_SHARE
    base = c.baseline.quality.get(metric_key("recall", c.k)) if c.baseline else None
    beaten = base is not None and base >= recall
    if not (low or beaten):
        return None
    evidence = {
        "recall": recall,
        "precision": precision,
        "precision_ceiling": c.ceiling,
        "hit_rate": c.metric("hit_rate"),
        "bm25_recall": base,
    }
    return Finding("mismatch", "warning", _mismatch_text(c, recall, precision, low, base), evidence)


def _mismatch_text(c: CandidateView, recall: float, precision: float, low: bool, base: float | None) -> str:
    k, chunker = c.k, c.data.chunker
    ceiling = f" of an achievable {_f(c.ceiling)}" if c.ceiling is not None else ""
    hit = c.metric("hit_rate")
    hits = f" (hit_rate@{k} {_f(hit)})" if hit is not None else ""
    if c.lexical:
        return (
            f"Recall@{k} is {_f(recall)} and precision@{k} {_f(precision)}{ceiling}{hits}: questions share few "
            f"words with their evidence. A dense model, or hybrid with one, should do better.{c.advice(fuse=True)}"
        )
    against = f"BM25 on the same {chunker} chunks reaches recall@{k} {_f(base)}" if base is not None else ""
    if not low:
        return (
            f"{against} against {_f(recall)} for this model: keyword search does as well or better, a sign the "
            f"model does not fit this domain or language. Try another model, fine-tune it, or go "
            f"hybrid.{c.advice(fuse=True)}"
        )
    tail = f" {against} against its {_f(recall)}." if base is not None else ""
    return (
        f"Recall@{k} is {_f(recall)} and precision@{k} {_f(precision)}{ceiling}{hits}: the model misses most "
        f"of the evidence, a sign it does not fit this domain or language. Try another model or fine-tune "
        f"it.{tail}"
    )


def _wrong_order(c: CandidateView) -> Finding | None:
    in_top = _order_in_top_k(c)
    late = _late_hits(c)
    if in_top is None and late is None:
        return None
    parts = [p[0] for p in (in_top, late) if p]
    evidence = {**(in_top[1] if in_top else {}), **(late[1] if late else {})}
    rr = pipelines.reranker(c.data)
    if rr:
        first = pipelines.first_stage(c.data)
        fix = (
            f"{rr.get('name')} already reranks the top {rr.get('top')} of {first}: a stronger reranker (a "
            f"cross-encoder) may do better."
        )
    elif late:
        hybrid = pipelines.is_single(c.data, "lexical")
        how = ", or fuse BM25 with a dense retriever (hybrid)" if hybrid else ""
        fix = f"A reranker over the top {c.depth} can lift them into the top {c.k}{how}."
        fix += c.advice(rerank=True, fuse=hybrid)
    else:
        fix = f"A reranker over the top {c.k} can put it first.{c.advice(rerank=True)}"
    text = " ".join(parts + [fix])
    return Finding("wrong_order", "info", text, evidence)


def _order_in_top_k(c: CandidateView) -> tuple[str, dict] | None:
    hit, mrr = c.metric("hit_rate"), c.metric("mrr")
    if hit is None or mrr is None or hit < ORDER_MIN_HIT_RATE or c.k < 2:
        return None
    random = sum(1 / r for r in range(1, c.k + 1)) / c.k  # mrr/hit if the first hit sat anywhere in the top k
    bound = random + ORDER_SHARE * (1 - random)
    if mrr / hit >= bound:
        return None
    first = c.curve(1)
    at_one = f", and only {_pct(first / hit)} of those have it at rank 1" if first is not None else ""
    text = (
        f"{_pct(hit)} of questions get a relevant {c.noun} in the top {c.k} (hit_rate@{c.k} {_f(hit)}), but "
        f"mrr@{c.k} is only {_f(mrr)}: mrr/hit_rate {_f(mrr / hit)}, where random order within the top {c.k} "
        f"gives {_f(random)}{at_one}. The first relevant {c.noun} lands low."
    )
    return text, {"hit_rate": hit, "mrr": mrr, "mrr_hit_ratio": mrr / hit, "ratio_bound": bound}


def _late_hits(c: CandidateView) -> tuple[str, dict] | None:
    at_k, at_depth = c.curve(c.k), c.curve(c.depth)
    if c.depth <= c.k or at_k is None or at_depth is None or at_depth - at_k < LATE_HIT_SHARE:
        return None
    text = (
        f"Hit rate climbs from {_f(at_k)} at {c.k} to {_f(at_depth)} at {c.depth}: for {_pct(at_depth - at_k)} "
        f"of questions the first relevant {c.noun} ranks {c.k + 1}–{c.depth}."
    )
    return text, {
        metric_key("hit_rate", c.k): at_k,
        metric_key("hit_rate", c.depth): at_depth,
        "late_share": at_depth - at_k,
    }


def _near_duplicates(c: CandidateView) -> Finding | None:
    gaps = [g for r in c.records if (g := (r.diagnostics or {}).get("score_gap")) is not None]
    band = _gap_band(c)
    if len(gaps) < MIN_GAP_QUESTIONS or band is None:
        return None
    share = sum(abs(g) < band for g in gaps) / len(gaps)
    if share < NEAR_DUPLICATE_SHARE:
        return None
    text = (
        f"{_pct(share)} of questions have a score gap within ±{band:.3g} between their best relevant {c.noun} and "
        f"the best distractor: near-duplicate {c.noun}s compete for the same ranks. Deduplicate the corpus (old "
        f"versions of documents) or filter by metadata."
    )
    return Finding("near_duplicates", "info", text, {"near_zero_share": share, "band": band, "questions": len(gaps)})


def _gap_band(c: CandidateView) -> float | None:
    scale = pipelines.score_scale(c.data)
    if scale == "fused":
        return None
    if scale == "cosine":
        return NEAR_ZERO_GAP
    mean = c.diagnostics.get("mean_relevant_score")
    return NEAR_ZERO_GAP_LEXICAL * abs(mean) if mean else None


def _truncation(c: CandidateView) -> Finding | None:
    n, cut = c.ops.indexing.n_chunks, c.ops.indexing.truncated_chunks
    lost = c.ops.indexing.truncated_token_share or 0.0
    if not n or cut is None:
        return None
    share = cut / n
    if share < TRUNCATED_CHUNK_SHARE and lost < TRUNCATED_TOKEN_SHARE:
        return None
    severity: Literal["warning", "info"] = "warning" if lost >= TRUNCATED_TOKEN_WARNING else "info"
    text = (
        f"{cut} of {n} chunks ({_pct(share)}) are longer than {c.data.model} reads and {_pct(lost)} of "
        f"the corpus tokens are never embedded: evidence at the end of those chunks cannot be found. Use smaller "
        f"chunks (sized in the model's own tokens) or a longer-context model."
    )
    return Finding(
        "truncation",
        severity,
        text,
        {"truncated_chunks": cut, "n_chunks": n, "chunk_share": share, "token_share": lost},
    )


def _misses(c: CandidateView) -> Finding | None:
    n = c.diagnostics.get("n_questions")
    missed = (c.diagnostics.get("first_relevant_rank") or {}).get("miss")
    if not n or missed is None or missed / n < MISS_SHARE:
        return None
    other = (
        "other models in the fusion" if pipelines.kind(c.data) == "fusion" else "another model or a hybrid retriever"
    )
    text = (
        f"For {missed} of {n} questions ({_pct(missed / n)}) no relevant {c.noun} appears even in the top "
        f"{c.depth}, so no reranker can recover them. Try {other}, and check those questions' evidence."
        f"{c.advice(fuse=True)}"
    )
    return Finding("misses", "warning", text, {"missed": missed, "n_questions": n, "share": missed / n})


def _no_relevant_unit(c: CandidateView) -> Finding | None:
    lost = c.diagnostics.get("questions_without_relevant_unit")
    n = c.diagnostics.get("n_questions")
    if not lost:
        return None
    of = f" of {n}" if n else ""
    if c.unit == "document":
        fix = "their evidence documents are not in the index. Check the goldset against the corpus."
    else:
        overlap = f" (min_overlap {c.min_overlap:g})" if c.min_overlap is not None else ""
        fix = (
            f"no {c.data.chunker} chunk overlaps their evidence enough to count{overlap}. Lower "
            f"min_overlap or use bigger chunks."
        )
    text = f"{lost}{of} questions score 0 whatever the retriever does: {fix}"
    return Finding("no_relevant_unit", "warning", text, {"questions": lost, "n_questions": n})


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
        if (
            c.quality.get(metric_key("recall", k)) is not None
            and c.quality.get(metric_key("span_precision", k)) is not None
        ):
            # like with like: the same first stage, query setting and reranker, chunkers apart
            groups[(c.model, c.id.split("/", 2)[2])].append(c)
    return [f for (model, index), cands in groups.items() for f in _apart_in_group(model, index, cands, k)]


def _apart_in_group(model: str, index: str, cands: list[CandidateResult], k: int) -> list[Finding]:
    """Each chunker, best span precision first, against those it beats at similar or better recall."""

    def get(c: CandidateResult, name: str) -> float:
        return c.quality[metric_key(name, k)]

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
            out.append(_apart_finding(model, index, a, beaten, get, k))
    return out


def _apart_finding(
    model: str, index: str, a: CandidateResult, beaten: list[CandidateResult], get: Callable, k: int
) -> Finding:
    sp, rc = get(a, "span_precision"), get(a, "recall")
    others = ", ".join(
        f"{b.chunker} {_f(get(b, 'span_precision'))} ({_ratio(sp, get(b, 'span_precision'))})" for b in beaten
    )
    recalls = ", ".join(f"{b.chunker} {_f(get(b, 'recall'))}" for b in beaten)
    text = (
        f"For {model} on {index}, {a.chunker} has span_precision@{k} {_f(sp)} against {others}, at similar "
        f"or better recall@{k} ({_f(rc)} against {recalls}): it hands the LLM less noise for as much evidence. "
        f"Prefer {a.chunker}."
    )
    evidence = {
        "model": model,
        "index": index,
        "prefer": a.chunker,
        "chunkers": {
            c.chunker: {"recall": get(c, "recall"), "span_precision": get(c, "span_precision")} for c in [a, *beaten]
        },
    }
    return Finding("chunkers_apart", "info", text, evidence)


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
    missed = [q for q, hit in found.items() if not hit]
    if not missed:
        return []
    shown = ", ".join(missed[:MAX_IDS]) + (f" and {len(missed) - MAX_IDS} more" if len(missed) > MAX_IDS else "")
    noun = _noun(summary.unit)
    text = (
        f"{len(missed)} of {len(found)} questions ({shown}) get no relevant {noun} into the top {k} from any "
        f"of the {len(ids)} candidates: read their evidence in the goldset; either it is wrong or these are the "
        f"hard cases to tune on."
    )
    return [Finding("missed_by_all", "info", text, {"question_ids": missed, "candidates": len(ids)})]


def _pipelines(summary: RunSummary, by_candidate: dict[str, list[QuestionRecord]]) -> list[Finding]:
    found = pipelines.measured(summary.candidates, summary.k)
    if not found:
        return []
    k = summary.k
    return [Finding("pipelines", "info", pipelines.measured_text(found, k), pipelines.measured_evidence(found, k))]


RUN_RULES: tuple[Callable[[RunSummary, dict[str, list[QuestionRecord]]], list[Finding]], ...] = (
    _pipelines,
    _chunkers_apart,
    _missed_by_all,
)


# ---------------------------------------------------------------------------------------------------
# Wording


def _noun(unit: str) -> str:
    return "document" if unit == "document" else "chunk"
