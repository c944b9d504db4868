"""summary.json as typed values: the run's settings and each candidate ranked, with its quality and
its operating figures (bench.core.operating); manifest.json, where a run came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from bench.core.operating import Operating
from bench.core.records import Record

# The index name of lexical (BM25) candidates, which rank with their own inverted index; runs
# written before `lexical` was stored are told by it.
LEXICAL_INDEX = "inverted"


@dataclass(frozen=True, kw_only=True)
class CandidateResult(Record):
    """A candidate in summary.json: what it is, its rank, mean quality, and operating figures."""

    _typed: ClassVar[dict[str, type]] = {"ops": Operating}

    id: str
    model: str
    chunker: str
    index: str
    search: str | None
    lexical: bool = False  # ranks with the BM25 inverted index rather than vectors
    # What the candidate is made of: kind ("dense", "lexical", "fusion"), parts (ids of its
    # single-model first stages), fusion settings, reranker and first_stage; empty in older runs.
    pipeline: dict[str, Any] = field(default_factory=dict)
    rank: int | None = None
    quality: dict[str, float] = field(default_factory=dict)
    curve: dict[str, float] = field(default_factory=dict)  # hit rate at every cutoff 1..depth
    diagnostics: dict[str, Any] = field(default_factory=dict)
    ops: Operating = field(default_factory=Operating)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CandidateResult:
        if "lexical" not in d:  # stored before the field existed: BM25 was the one inverted index
            d = {**d, "lexical": d.get("index") == LEXICAL_INDEX}
        return super().from_dict(d)


@dataclass(frozen=True, kw_only=True)
class RunSummary(Record):
    """summary.json: the settings every figure depends on, and the candidates ranked."""

    _nested: ClassVar[dict[str, type]] = {"candidates": CandidateResult}

    k: int
    depth: int
    unit: str
    ndcg_gain: str
    min_overlap: float
    candidates: list[CandidateResult]
    recommendation: dict[str, Any] | None = None
    chunkers: dict[str, Any] | None = None  # size distributions per chunker
    extra: dict[str, Any] = field(default_factory=dict)

    def candidate(self, cid: str) -> CandidateResult:
        return next(c for c in self.candidates if c.id == cid)


@dataclass(frozen=True, kw_only=True)
class Manifest(Record):
    """manifest.json: where a run came from. Runs written by older versions may lack fields (None)."""

    run_id: str | None = None
    bench_version: str | None = None
    config: dict[str, Any] | None = None
    config_hash: str | None = None
    config_path: str | None = None
    corpus: dict[str, Any] | None = None
    goldset: dict[str, Any] | None = None
    locked: bool | None = None
    lock: dict[str, Any] | None = None
    versions: dict[str, Any] | None = None
    machine: dict[str, Any] | None = None
    started: str | None = None
    finished: str | None = None
    peak_rss_mb: float | None = None
    prices: dict[str, Any] | None = None
    percentile_method: str | None = None
    engine: str | None = None
    # The corpus's and the questions' languages, and what each model reads of them (docs/design.md).
    languages: dict[str, Any] | None = None
    phases: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def fingerprint(self, what: str) -> str | None:
        """The sha256 of ``corpus`` or ``goldset``, where the manifest has one."""
        part = getattr(self, what)
        return part.get("sha256") if isinstance(part, dict) else None
