"""The diagnosis in words: each finding (``bench.evaluation.finding_rules``) as the sentence the terminal,
report.pdf and the inspector show, rendered from its figures, the candidate it names and the run's settings;
where it suggests a reranker or a fusion, what the run measured of one (``bench.evaluation.pipeline_gains``)."""

from __future__ import annotations

from bench.core.findings import (
    CandidateEvidence,
    ChunkersApart,
    Finding,
    Mismatch,
    MissedByAll,
    Misses,
    NearDuplicates,
    NoRelevantUnit,
    Pipelines,
    TooBroad,
    TooConservative,
    Truncation,
    WrongOrder,
)
from bench.core.summary import CandidateResult, RunSummary
from bench.evaluation import pipeline_gains
from bench.evaluation.findings import RUN
from bench.evaluation.judged import JUDGE_ONLY
from bench.formatting import brief_decimal as _f
from bench.formatting import brief_percent as _pct
from bench.formatting import ratio as _ratio

# Question ids quoted in a sentence before "and N more".
MAX_IDS = 5


NO_GOLDSET_WORDS = (
    "run: no goldset: below, a relevant unit and the evidence are what the relevance judge graded 2 or 3 "
    "(uncalibrated), not what a person marked."
)


def findings_lines(findings: dict[str, list[Finding]], summary: RunSummary) -> list[str]:
    """One plain line per finding, run-level first, warnings marked: ``minilm/md256/flat: ...``."""
    order = [RUN, *(key for key in findings if key != RUN)]
    lines = []
    for key in order:
        who = "run" if key == RUN else key
        for f in findings.get(key, []):
            mark = "warning: " if f.severity == "warning" else ""
            lines.append(f"{who}: {mark}{finding_text(f, summary)}")
    if lines and (summary.judge or {}).get("mode") == JUDGE_ONLY:
        lines.insert(0, NO_GOLDSET_WORDS)
    return lines


def finding_text(f: Finding, summary: RunSummary) -> str:
    """The finding's sentences: what the figures show and what to try."""
    match e := f.evidence:
        case ChunkersApart():
            return _chunkers_apart(e, summary.k)
        case MissedByAll():
            return _missed_by_all(e, summary)
        case Pipelines():
            return _pipelines(summary)
        case _:
            return _candidate_text(_Said(summary, summary.candidate(f.candidates[0])), e)


class _Said:
    """What a candidate's sentences need beside the finding's figures: the run's settings, the candidate."""

    def __init__(self, summary: RunSummary, data: CandidateResult) -> None:
        self.summary, self.data = summary, data
        self.k, self.depth, self.unit = summary.k, summary.depth, summary.unit
        self.noun = _noun(summary.unit)

    def advice(self, *, rerank: bool = False, fuse: bool = False) -> str:
        return pipeline_gains.advice(self.data, self.summary.candidates, self.k, rerank=rerank, fuse=fuse)


# ---------------------------------------------------------------------------------------------------
# A candidate's findings


def _candidate_text(c: _Said, e: CandidateEvidence) -> str:
    match e:
        case TooConservative():
            return _too_conservative(c, e)
        case TooBroad():
            return _too_broad(c, e)
        case Mismatch():
            return _mismatch(c, e)
        case WrongOrder():
            return _wrong_order(c, e)
        case NearDuplicates():
            return _near_duplicates(c, e)
        case Truncation():
            return _truncation(c, e)
        case Misses():
            return _misses(c, e)
        case NoRelevantUnit():
            return _no_relevant_unit(c, e)


def _too_conservative(c: _Said, e: TooConservative) -> str:
    fix = "Raise k." if c.unit == "document" else "Raise k, or use bigger chunks so the evidence spans fewer of them."
    return (
        f"Recall@{c.k} is {_f(e.recall)} while precision@{c.k} is {_f(e.precision)} of an achievable "
        f"{_f(e.precision_ceiling)}: what it returns is relevant, but questions have {e.relevant_units:.1f} "
        f"relevant {c.noun}s on average and only {c.k} fit. {fix}"
    )


def _too_broad(c: _Said, e: TooBroad) -> str:
    precision, span, ceiling, units = e.precision, e.span_precision, e.precision_ceiling, e.relevant_units
    noise = f" (span_precision@{c.k} {_f(span)}: {_pct(1 - span)} of the text is not evidence)" if span else ""
    if ceiling is not None and units is not None:
        why = (
            f"questions have {units:.1f} relevant {c.noun}s on average, so precision@{c.k} can reach at most "
            f"{_f(ceiling)} (it is {_f(precision)})"
        )
    else:
        why = f"precision@{c.k} is {_f(precision)}"
    fix = f"pass fewer {c.noun}s to the LLM" + ("" if c.unit == "document" else ", or use smaller chunks")
    fix = f"{fix[0].upper()}{fix[1:]}." if c.data.pipeline.reranker else f"Rerank and {fix}."
    filler = f"most of the {c.k} {c.noun}s handed on are filler{noise}"
    return f"Recall@{c.k} is {_f(e.recall)}, but {why}: {filler}. {fix}" + c.advice(rerank=True)


def _mismatch(c: _Said, e: Mismatch) -> str:
    k, chunker, recall, precision, base = c.k, c.data.chunker, e.recall, e.precision, e.bm25_recall
    ceiling = f" of an achievable {_f(e.precision_ceiling)}" if e.precision_ceiling is not None else ""
    hits = f" (hit_rate@{k} {_f(e.hit_rate)})" if e.hit_rate is not None else ""
    if c.data.lexical:
        return (
            f"Recall@{k} is {_f(recall)} and precision@{k} {_f(precision)}{ceiling}{hits}: questions share few "
            f"words with their evidence. A dense model, or hybrid with one, should do better.{c.advice(fuse=True)}"
        )
    against = f"BM25 on the same {chunker} chunks reaches recall@{k} {_f(base)}" if base is not None else ""
    if not e.low:
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


def _wrong_order(c: _Said, e: WrongOrder) -> str:
    parts = []
    if e.in_top is not None:
        top = e.in_top
        hit, first = top.hit_rate, top.rank_1_hit_rate
        at_one = f", and only {_pct(first / hit)} of those have it at rank 1" if first is not None else ""
        parts.append(
            f"{_pct(hit)} of questions get a relevant {c.noun} in the top {c.k} (hit_rate@{c.k} {_f(hit)}), but "
            f"mrr@{c.k} is only {_f(top.mrr)}: mrr/hit_rate {_f(top.mrr_hit_ratio)}, where random order within the "
            f"top {c.k} gives {_f(top.random_ratio)}{at_one}. The first relevant {c.noun} lands low."
        )
    if e.late is not None:
        late = e.late
        parts.append(
            f"Hit rate climbs from {_f(late.hit_rate_at_k)} at {c.k} to {_f(late.hit_rate_at_depth)} at {c.depth}: "
            f"for {_pct(late.late_share)} of questions the first relevant {c.noun} ranks {c.k + 1}–{c.depth}."
        )
    rr = pipeline_gains.reranker(c.data)
    if rr:
        first_stage = pipeline_gains.first_stage(c.data)
        fix = (
            f"{rr.get('name')} already reranks the top {rr.get('top')} of {first_stage}: a stronger reranker (a "
            f"cross-encoder) may do better."
        )
    elif e.late is not None:
        hybrid = pipeline_gains.is_single(c.data, "lexical")
        how = ", or fuse BM25 with a dense retriever (hybrid)" if hybrid else ""
        fix = f"A reranker over the top {c.depth} can lift them into the top {c.k}{how}."
        fix += c.advice(rerank=True, fuse=hybrid)
    else:
        fix = f"A reranker over the top {c.k} can put it first.{c.advice(rerank=True)}"
    return " ".join(parts + [fix])


def _near_duplicates(c: _Said, e: NearDuplicates) -> str:
    return (
        f"{_pct(e.near_zero_share)} of questions have a score gap within ±{e.band:.3g} between their best "
        f"relevant {c.noun} and the best distractor: near-duplicate {c.noun}s compete for the same ranks. "
        f"Deduplicate the corpus (old versions of documents) or filter by metadata."
    )


def _truncation(c: _Said, e: Truncation) -> str:
    return (
        f"{e.truncated_chunks} of {e.n_chunks} chunks ({_pct(e.chunk_share)}) are longer than "
        f"{c.data.model} reads and {_pct(e.token_share)} of the corpus tokens are never embedded: evidence at "
        f"the end of those chunks cannot be found. Use smaller chunks (sized in the model's own tokens) or a "
        f"longer-context model."
    )


def _misses(c: _Said, e: Misses) -> str:
    fusion = pipeline_gains.kind(c.data) == "fusion"
    other = "other models in the fusion" if fusion else "another model or a hybrid retriever"
    return (
        f"For {e.missed} of {e.n_questions} questions ({_pct(e.share)}) no relevant {c.noun} appears "
        f"even in the top {c.depth}, so no reranker can recover them. Try {other}, and check those questions' "
        f"evidence.{c.advice(fuse=True)}"
    )


def _no_relevant_unit(c: _Said, e: NoRelevantUnit) -> str:
    n = e.n_questions
    of = f" of {n}" if n else ""
    if c.unit == "document":
        fix = "their evidence documents are not in the index. Check the goldset against the corpus."
    else:
        min_overlap = c.summary.min_overlap
        overlap = f" (min_overlap {min_overlap:g})" if min_overlap is not None else ""
        fix = (
            f"no {c.data.chunker} chunk overlaps their evidence enough to count{overlap}. Lower "
            f"min_overlap or use bigger chunks."
        )
    return f"{e.questions}{of} questions score 0 whatever the retriever does: {fix}"


# ---------------------------------------------------------------------------------------------------
# The run's findings


def _chunkers_apart(e: ChunkersApart, k: int) -> str:
    sp, rc = e.preferred.span_precision, e.preferred.recall
    others = ", ".join(f"{b.chunker} {_f(b.span_precision)} ({_ratio(sp, b.span_precision)})" for b in e.beaten)
    recalls = ", ".join(f"{b.chunker} {_f(b.recall)}" for b in e.beaten)
    prefer = e.preferred.chunker
    return (
        f"For {e.model} on {e.index}, {prefer} has span_precision@{k} {_f(sp)} against {others}, at "
        f"similar or better recall@{k} ({_f(rc)} against {recalls}): it hands the LLM less noise for as much "
        f"evidence. Prefer {prefer}."
    )


def _missed_by_all(e: MissedByAll, summary: RunSummary) -> str:
    missed = e.question_ids
    shown = ", ".join(missed[:MAX_IDS]) + (f" and {len(missed) - MAX_IDS} more" if len(missed) > MAX_IDS else "")
    return (
        f"{len(missed)} of {e.n_questions} questions ({shown}) get no relevant {_noun(summary.unit)} into "
        f"the top {summary.k} from any of the {e.n_candidates} candidates: read their evidence in the "
        f"goldset; either it is wrong or these are the hard cases to tune on."
    )


def _pipelines(summary: RunSummary) -> str:
    return pipeline_gains.measured_text(pipeline_gains.measured(summary.candidates, summary.k), summary.k)


def _noun(unit: str) -> str:
    """What a unit is called in sentences: a chunk or a document."""
    return "document" if unit == "document" else "chunk"
