"""What a candidate is made of, as summary.json's ``pipeline`` describes it: its kind, the ids of
its single-model first stages, a fusion's settings and a reranker. Runs that predate it have an
empty one; readers fall back on the candidate's own fields (bench.evaluation.pipelines)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from bench.core.sections import Section


@dataclass(frozen=True, kw_only=True, eq=False)
class Fusion(Section):
    """How a fusion merges its parts' rankings."""

    method: str | None = None  # "rrf" or "convex"
    k: int | None = None  # rrf's constant
    weights: list[float] | None = None  # convex: one per part
    depth: int | None = None  # how deep each part's ranking is read
    models: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True, eq=False)
class Reranker(Section):
    """The reranker that re-scores the first stage's top units."""

    name: str | None = None
    kind: str | None = None  # "cross-encoder", "bi-encoder", an API's
    top: int | None = None
    model: str | None = None


@dataclass(frozen=True, kw_only=True, eq=False)
class QueryRewrite(Section):
    """How a chat model rewrites each question before it is searched ([query.NAME])."""

    name: str | None = None
    kind: str | None = None  # "hyde", "multi" or "rewrite"
    model: str | None = None
    prompt: str | None = None  # the prompt file's version
    n: int | None = None  # multi: rewrites of each question


@dataclass(frozen=True, kw_only=True, eq=False)
class Pipeline(Section):
    _nested: ClassVar[dict[str, type[Section]]] = {"fusion": Fusion, "reranker": Reranker, "query": QueryRewrite}

    kind: str | None = None  # "dense", "lexical" or "fusion"
    parts: list[str] = field(default_factory=list)
    fusion: Fusion | None = None
    reranker: Reranker | None = None
    first_stage: str | None = None
    query: QueryRewrite | None = None
    as_written: str | None = None  # a rewritten candidate: the same pipeline asked the questions as written
    plain_chunker: str | None = None  # a contextual chunker's (md256+ctx, md256+situated): md256, cutting its chunks
