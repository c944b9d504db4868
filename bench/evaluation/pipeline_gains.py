"""What a candidate's pipeline is made of, and what the run measured of the pipelines built on it.

A candidate is a single-model first stage (dense or lexical), a fusion of several, or either with a reranker
re-scoring its top N; over a contextual chunker (``md256+ctx``), a first stage is measured against the same
one over the plain chunker, and one asked questions a chat model rewrote (``~hyde``) against itself asked
them as written. The diagnosis recommends a reranker or a fusion from measurement: when the run holds one
built on a candidate, its change on the ranking metric (mrr@k) is quoted; when not, the bench.toml line that
would measure it. Runs written before ``pipeline`` was stored leave it empty: the candidate is then its own one
part, lexical or dense, with no reranker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bench.chunking.context import CONTEXT_SUFFIX
from bench.core.measures import metric_key
from bench.core.pipeline import Fusion, Reranker
from bench.core.summary import CandidateResult
from bench.formatting import ms, usd

# The metric a reranker or a fusion is judged on: both exist to put the first relevant unit higher.
RANKING_METRIC = "mrr"
# Changes within this on mrr@k are noise on a goldset of a couple of hundred questions: "did not help".
GAIN_TOLERANCE = 0.005
# Pipelines named in the run-level summary before "and N more" (a convex weight sweep makes many).
MAX_SHOWN = 6


# ---------------------------------------------------------------------------------------------------
# What a candidate is


def kind(c: CandidateResult) -> str:
    """``dense``, ``lexical`` or ``fusion``: of the first stage, whether or not a reranker follows."""
    return c.pipeline.get("kind") or ("lexical" if c.lexical else "dense")


def reranker(c: CandidateResult) -> Reranker | None:
    return c.pipeline.reranker or None


def is_reranked(c: CandidateResult) -> bool:
    return reranker(c) is not None


def first_stage(c: CandidateResult) -> str | None:
    """The id of the candidate a reranker re-scores; None when nothing reranks this one."""
    return c.pipeline.get("first_stage") if is_reranked(c) else None


def parts(c: CandidateResult) -> list[str]:
    """The ids of the single-model first stages it is made of (itself, when it is one)."""
    return list(c.pipeline.get("parts") or [c.id])


def is_single(c: CandidateResult, which: str) -> bool:
    """One model of kind ``which`` ("dense" or "lexical"), no reranker, the questions as written: a pure first stage."""
    return kind(c) == which and not is_reranked(c) and as_written(c) is None


def as_written(c: CandidateResult) -> str | None:
    """The id of the same pipeline asked the questions as written, for one whose questions a chat model rewrites."""
    return c.pipeline.get("as_written") if c.pipeline.get("query") else None


def score_scale(c: CandidateResult) -> Literal["cosine", "relative", "fused"]:
    """What its scores are: cosines (a dense model, a bi-encoder reranker), scores of no fixed scale (BM25,
    cross-encoders, APIs), or fused ranks and rescaled lists, whose gaps say nothing of how alike texts are."""
    rr = reranker(c)
    if rr is not None:
        return "cosine" if rr.kind == "bi-encoder" else "relative"
    return {"fusion": "fused", "lexical": "relative"}.get(kind(c), "cosine")  # type: ignore[return-value]


def _fusion_models(c: CandidateResult) -> list[str]:
    return list((c.pipeline.get("fusion") or {}).get("models") or [])


# ---------------------------------------------------------------------------------------------------
# What the run measured


@dataclass(frozen=True)
class Measured:
    """A pipeline against what it is built on (its first stage, or a fusion's part), on mrr@k."""

    pipeline: CandidateResult
    base: CandidateResult
    before: float
    after: float

    @property
    def gain(self) -> float:
        return self.after - self.before


def score(c: CandidateResult, k: int) -> float | None:
    return c.quality.get(metric_key(RANKING_METRIC, k))


def reranked_over(c: CandidateResult, candidates: Sequence[CandidateResult]) -> list[CandidateResult]:
    """Reranked candidates whose first stage is ``c``."""
    return [r for r in candidates if first_stage(r) == c.id]


def fused_with(c: CandidateResult, candidates: Sequence[CandidateResult]) -> list[CandidateResult]:
    """Fusions (not reranked) with ``c`` among their parts, or with its model on its chunker (another index)."""
    return [
        f
        for f in candidates
        if is_single(f, "fusion") and (c.id in parts(f) or (f.chunker == c.chunker and c.model in _fusion_models(f)))
    ]


def _measured(base: CandidateResult, pipelines: list[CandidateResult], k: int) -> list[Measured]:
    before = score(base, k)
    if before is None:
        return []
    out = [Measured(p, base, before, after) for p in pipelines if (after := score(p, k)) is not None]
    return sorted(out, key=lambda m: -m.gain)


def plain_twin(c: CandidateResult) -> str | None:
    """The id of the same candidate over the plain chunker, for a single stage over a contextual one
    (a header's, ``md256+ctx``, or a chat model's, ``md256+situated``; runs that predate
    ``plain_chunker`` name only the first)."""
    plain = c.pipeline.plain_chunker
    if plain is None and c.chunker.endswith(CONTEXT_SUFFIX):
        plain = c.chunker.removesuffix(CONTEXT_SUFFIX)
    if plain is None or is_reranked(c) or kind(c) == "fusion":
        return None
    return c.id.replace(f"/{c.chunker}/", f"/{plain}/", 1)


def technique(c: CandidateResult) -> tuple[str, str] | None:
    """For a pipeline that adds a technique to another in the run's grid (a rewrite of its questions, a
    context on its chunks): that pipeline's id, and the technique in words."""
    query = c.pipeline.query
    if (written := as_written(c)) is not None and query is not None:
        return written, f"rewrites each question with a chat model ({query.kind}, [query.{query.name}])"
    if (twin := plain_twin(c)) is None:
        return None
    if c.chunker.endswith(CONTEXT_SUFFIX):
        return twin, "indexes each chunk with its context header (title, headings, pages)"
    situated = c.chunker.rsplit("+", 1)[-1]
    return twin, f"indexes each chunk with a context a chat model wrote ([context.{situated}])"


def measured(candidates: Sequence[CandidateResult], k: int) -> list[Measured]:
    """Every reranked candidate against its first stage, every fusion against its best part and every
    contextual chunker's candidate against its plain twin, best gain first."""
    by_id = {c.id: c for c in candidates}
    out = []
    for p in candidates:
        after = score(p, k)
        if after is None:
            continue
        if is_reranked(p):
            bases = [by_id[s] for s in [first_stage(p)] if s in by_id]
        elif (written := as_written(p)) is not None:
            bases = [by_id[written]] if written in by_id else []
        elif kind(p) == "fusion":
            bases = [by_id[s] for s in parts(p) if s in by_id]
        elif (twin := plain_twin(p)) is not None:
            bases = [by_id[twin]] if twin in by_id else []
        else:
            continue
        scored = [(s, b) for b in bases if (s := score(b, k)) is not None]
        if scored:
            before, base = max(scored, key=lambda sb: sb[0])
            out.append(Measured(p, base, before, after))
    return sorted(out, key=lambda m: -m.gain)


# ---------------------------------------------------------------------------------------------------
# Wording


def advice(c: CandidateResult, candidates: Sequence[CandidateResult], k: int, *, rerank: bool, fuse: bool) -> str:
    """What the run measured of reranking or fusing ``c``, or how to measure it, each with a leading space."""
    said = [rerank_advice(c, candidates, k) if rerank else "", fusion_advice(c, candidates, k) if fuse else ""]
    return "".join(f" {s}" for s in said if s)


def rerank_advice(c: CandidateResult, candidates: Sequence[CandidateResult], k: int) -> str:
    """What reranking ``c`` measured, or how to measure it; empty for a candidate already reranked, or
    one whose questions a chat model rewrites (the grid reranks first stages as asked)."""
    if is_reranked(c) or as_written(c) is not None:
        return ""
    built = reranked_over(c, candidates)
    done = _measured(c, built, k)
    if done:
        m = done[0]
        rr = reranker(m.pipeline) or Reranker()
        top = rr.top or m.pipeline.ops.latency.rerank_top
        lead = f"Reranking the top {top} with {rr.name}" if top else f"Reranking with {rr.name}"
        return _measured_sentence(lead, m, len(done), k, _rerank_cost(m.pipeline))
    return "" if built else _rerank_not_tried(c, candidates, k)


def fusion_advice(c: CandidateResult, candidates: Sequence[CandidateResult], k: int) -> str:
    """What fusing ``c`` with another model measured, or how to measure it; empty unless ``c`` is a pure first
    stage."""
    if not (is_single(c, "dense") or is_single(c, "lexical")):
        return ""
    built = fused_with(c, candidates)
    done = _measured(c, built, k)
    if done:
        m = done[0]
        settings = m.pipeline.pipeline.fusion or Fusion()
        others = [x for x in _fusion_models(m.pipeline) if x != c.model] or [x for x in parts(m.pipeline) if x != c.id]
        return _measured_sentence(f"Fusing with {' and '.join(others)}{_method(settings)}", m, len(done), k, "")
    return "" if built else _fusion_not_tried(c, candidates, k)


def _measured_sentence(lead: str, m: Measured, n: int, k: int, cost: str) -> str:
    best = f" (best of {n})" if n > 1 else ""
    gain = round(m.gain, 9)  # 0.505 - 0.5 is not quite 0.005 in floating point
    if gain < -GAIN_TOLERANCE:
        verdict = " It did not help: a loss."
    elif gain <= GAIN_TOLERANCE:
        verdict = f" It did not help (within ±{GAIN_TOLERANCE:g})."
    else:
        verdict = ""
    return (
        f"{lead} ({m.pipeline.id}) was measured{best}: {metric_key(RANKING_METRIC, k)} {m.before:.3f} → "
        f"{m.after:.3f} ({signed(m.gain)}){cost}.{verdict}"
    )


def signed(x: float) -> str:
    """A change with its sign, ``+0.232`` or ``−0.020`` (a minus sign, as in running text)."""
    x = round(x, 3)
    return f"+{x:.3f}" if x >= 0 else f"−{-x:.3f}"


def _method(settings: Fusion) -> str:
    method, weights = settings.method, settings.weights
    if method == "convex" and weights:
        return " by convex weights " + "/".join(f"{w:g}" for w in weights)
    return f" by {method}" if method else ""


def _rerank_cost(p: CandidateResult) -> str:
    latency, money = p.ops.latency.rerank_ms_p50, p.ops.cost.rerank_cost_per_1k_queries_usd
    out = f" for +{ms(latency)} ms p50 per query" if latency is not None else ""
    if money:
        out += f"{' and' if out else ' for'} +{usd(money)} per 1k queries"
    return out


def _rerank_not_tried(c: CandidateResult, candidates: Sequence[CandidateResult], k: int) -> str:
    """Name a reranker the run already has when it could rerank ``c``, else a dense model that outranks ``c``
    (a bi-encoder needs no extra weights; a model rescoring its own exact results changes nothing), else a
    cross-encoder."""
    ran = [rr for p in candidates if (rr := reranker(p))]
    usable = [rr for rr in ran if rr.kind != "bi-encoder" or rr.model != c.model]
    if usable:
        name = usable[0].name
        return f'Reranking with {name} was not tried here: add "{c.id}" to over in [reranker.{name}] (bench.toml).'
    own = score(c, k)
    better = [
        d
        for d in candidates
        if is_single(d, "dense") and d.model != c.model and (s := score(d, k)) is not None and (own is None or s > own)
    ]
    if better:
        model = max(better, key=lambda d: score(d, k) or 0.0).model
        return (
            f"Reranking with {model} was not tried: {_add('rerankers', model, bool(ran))} (a bi-encoder reranker "
            f"needs no extra weights)."
        )
    return (
        "Reranking was not tried, and no dense model in the run outranks this one to rerank with: add a "
        'cross-encoder to rerankers ([reranker.NAME] with kind = "cross-encoder" and its source) in bench.toml.'
    )


def _fusion_not_tried(c: CandidateResult, candidates: Sequence[CandidateResult], k: int) -> str:
    """Name the run's best dense model for a lexical candidate, the run's lexical model (else BM25) for a dense one."""
    has_fusions = any(kind(f) == "fusion" for f in candidates)
    if kind(c) == "lexical":
        dense = [d for d in candidates if is_single(d, "dense")]
        if not dense:
            return f'Fusing with a dense model was not tried: add one to models and "MODEL+{c.model}" to fusions.'
        model = max(dense, key=lambda d: score(d, k) or 0.0).model
        return f"Fusing with {model} was not tried: {_add('fusions', f'{model}+{c.model}', has_fusions)}."
    lexical = next((x.model for x in candidates if is_single(x, "lexical")), "bm25")
    return f"Fusing with {lexical} was not tried: {_add('fusions', f'{c.model}+{lexical}', has_fusions)}."


def _add(key: str, name: str, listed: bool) -> str:
    """The bench.toml change: a new list, or one more name in the list the run already has."""
    return f'add "{name}" to {key} in bench.toml' if listed else f'add {key} = ["{name}"] to bench.toml'


def _built_on(p: CandidateResult) -> str:
    if is_reranked(p):
        return "first stage"
    if as_written(p) is not None:
        return "as written"
    return "best part" if kind(p) == "fusion" else "plain chunker"


def _extra_cost(m: Measured) -> str:
    """What a context header (more tokens embedded) or a rewrite (a chat call per query) adds to the
    monthly cost at [scale], and a rewrite to the latency, where both are known."""
    if plain_twin(m.pipeline) is None and as_written(m.pipeline) is None:
        return ""
    slower = ""
    if as_written(m.pipeline) is not None and (rewrite := m.pipeline.ops.latency.rewrite_ms_p50) is not None:
        slower = f", +{ms(rewrite)} ms p50"
    after, before = m.pipeline.ops.cost.monthly_cost_usd, m.base.ops.cost.monthly_cost_usd
    if after is None or before is None:
        return slower
    extra = after - before
    return f"{slower}, {'+' if extra >= 0 else '−'}{usd(abs(extra))} a month"


def measured_text(found: list[Measured], k: int) -> str:
    """The run-level summary: each pipeline against what it is built on, best gain first."""
    shown = "; ".join(
        f"{m.pipeline.id} {m.after:.3f} vs {_built_on(m.pipeline)} {m.base.id} {m.before:.3f} "
        f"({signed(m.gain)}{_extra_cost(m)})"
        for m in found[:MAX_SHOWN]
    )
    rest = found[MAX_SHOWN:]
    more = f"; and {len(rest)} more, down to {signed(rest[-1].gain)}" if rest else ""
    return f"Pipelines measured on {metric_key(RANKING_METRIC, k)}, best gain first: {shown}{more}."
