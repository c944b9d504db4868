"""summary.json as typed values: the run's settings and each candidate ranked, with its quality and
its operating figures (bench.core.operating); manifest.json, where a run came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from bench.core.operating import Operating
from bench.core.pipeline import Pipeline
from bench.core.records import Record
from bench.core.scores import Curve, Diagnostics, Quality
from bench.core.sections import JsonObject

# The index name of lexical (BM25) candidates, which rank with their own inverted index; runs
# written before `lexical` was stored are told by it.
LEXICAL_INDEX = "inverted"


@dataclass(frozen=True, kw_only=True)
class CandidateResult(Record):
    """A candidate in summary.json: what it is, its rank, mean quality, and operating figures."""

    _typed: ClassVar[dict[str, type]] = {
        "pipeline": Pipeline,
        "quality": Quality,
        "curve": Curve,
        "diagnostics": Diagnostics,
        "ops": Operating,
    }

    id: str
    model: str
    chunker: str
    index: str
    search: str | None
    lexical: bool = False  # ranks with the BM25 inverted index rather than vectors
    # What the candidate is made of: kind ("dense", "lexical", "fusion"), parts (ids of its
    # single-model first stages), fusion settings, reranker and first_stage; empty in older runs.
    pipeline: Pipeline = field(default_factory=lambda: Pipeline.read({}))
    rank: int | None = None
    quality: Quality = field(default_factory=Quality)
    curve: Curve = field(default_factory=Curve)  # hit rate at every cutoff 1..depth
    diagnostics: Diagnostics = field(default_factory=lambda: Diagnostics.read({}))
    ops: Operating = field(default_factory=Operating)
    extra: JsonObject = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: JsonObject) -> CandidateResult:
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
    # the recommendation's figures as bench.evaluation.decision writes them (Recommendation.to_dict)
    recommendation: JsonObject | None = None
    chunkers: JsonObject | None = None  # size distributions per chunker
    # unjudged units that reached many candidates' top k, biggest first (bench.evaluation.holes)
    holes: list[JsonObject] | None = None
    # a relevance judge's labels of the holes and what they change (bench.evaluation.judged); in a run
    # with questions only, the judge's grades are the run's relevance ("mode": "judge only")
    judge: JsonObject | None = None
    extra: JsonObject = field(default_factory=dict)

    def candidate(self, cid: str) -> CandidateResult:
        return next(c for c in self.candidates if c.id == cid)


@dataclass(frozen=True, kw_only=True)
class Manifest(Record):
    """manifest.json: where a run came from. Runs written by older versions may lack fields (None).
    Its parts are kept as the JSON the run wrote (JsonObject): they record what was, for people and
    for comparing runs, and only ``languages``, ``config`` and the fingerprints are read back."""

    run_id: str | None = None
    bench_version: str | None = None
    config: JsonObject | None = None
    config_hash: str | None = None
    config_path: str | None = None
    corpus: JsonObject | None = None
    goldset: JsonObject | None = None
    locked: bool | None = None
    lock: JsonObject | None = None
    versions: JsonObject | None = None
    machine: JsonObject | None = None
    started: str | None = None
    finished: str | None = None
    peak_rss_mb: float | None = None
    prices: JsonObject | None = None
    percentile_method: str | None = None
    engine: str | None = None
    # The corpus's and the questions' languages, and what each model reads of them (docs/design.md).
    languages: JsonObject | None = None
    # How latency was timed (one thread, rounds), the machine's cores, and how contended it was:
    # ``busy`` when a timing was taken on a busy machine (bench.measure.TimingLog).
    timing: JsonObject | None = None
    # The vector stores other than FAISS the run used: where each ran (a server bench started, a
    # team's own by its connection string without password), its version and settings.
    stores: JsonObject | None = None
    phases: list[JsonObject] = field(default_factory=list)
    extra: JsonObject = field(default_factory=dict)

    def fingerprint(self, what: str) -> str | None:
        """The sha256 of ``corpus`` or ``goldset``, where the manifest has one."""
        part = getattr(self, what)
        return part.get("sha256") if isinstance(part, dict) else None
