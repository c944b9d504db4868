"""The run as typed values: what ``summary.json``, ``per_question.jsonl``, ``texts.jsonl`` and
``manifest.json`` hold (docs/design.md, "Results on disk"), and their one reading and writing.

Every reader of a run — reports, recompute, history, compare, the gate, exports, the Python API —
goes through :func:`load_run`; the run writes through :func:`save_run`. ``from_dict`` keeps keys
it does not know in ``extra`` and ``to_dict`` writes them back, so a run written by a newer bench
loses nothing when an older one rewrites it. Keys are never renamed or dropped here; a figure that
does not apply to a candidate is ``None`` (``null``), so every candidate carries the same keys.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, cast

from bench import files
from bench.errors import BenchError
from bench.inputs.corpus import pages_label
from bench.results.store import (
    ANSWERS_PER_QUESTION,
    ANSWERS_SUMMARY,
    MANIFEST,
    PER_QUESTION,
    SUMMARY,
    TEXTS,
    load_json,
    load_jsonl,
)

# The index name of lexical (BM25) candidates, which rank with their own inverted index; runs
# written before `lexical` was stored are told by it.
LEXICAL_INDEX = "inverted"

# Operating figures every candidate carries, null where one does not apply (BM25 has no vectors,
# a local model no price). ``recall_vs_exact@<depth>`` joins them, named for the run's depth.
OPS_KEYS = (
    "n_chunks", "dims", "vector_bytes", "index_bytes", "index_factory", "compression_ratio",
    "embed_seconds", "chunks_per_second", "chunks_embedded", "chunks_from_cache",
    "questions_embedded", "questions_from_cache", "index_build_seconds", "index_memory_mb",
    "index_tokens", "truncated_chunks", "truncated_token_share", "question_tokens_mean", "tokens_per_second",
    "price_per_mtok", "price_source", "price_date", "cost_estimate", "index_cost_usd",
    "cost_per_1k_queries_usd", "billed_tokens", "run_cost_usd",
    "query_embed_ms_mean", "query_embed_ms_p50", "query_embed_ms_p95", "query_embed_ms_p99",
    "query_embed_measured", "query_embed_from_cache",
    "search_ms_mean", "search_ms_p50", "search_ms_p95", "search_ms_p99",
    "latency_samples", "peak_rss_mb",
    "rerank_top", "rerank_ms_mean", "rerank_ms_p50", "rerank_ms_p95", "rerank_ms_p99",
    "rerank_price_source", "rerank_cost_per_1k_queries_usd", "rerank_run_cost_usd",
    "corpus_embed_seconds",
    "end_to_end_ms_p50", "end_to_end_ms_p95", "qps_single_thread", "cpu_seconds_per_1k_queries",
    "index_hours_at_scale", "storage_gb_at_scale", "monthly_embedding_usd", "monthly_storage_usd",
    "monthly_compute_usd", "monthly_cost_usd", "monthly_cost_includes",
    "lexical_tokenizer",
)  # fmt: skip


def recall_vs_exact_key(depth: int) -> str:
    return f"recall_vs_exact@{depth}"


class _Record:
    """``from_dict``/``to_dict`` for a dataclass whose JSON keys are its field names, plus ``extra``."""

    _nested: ClassVar[dict[str, type]] = {}  # field → the record type of each element of its list

    @classmethod
    def from_dict(cls, d: dict[str, Any]):
        names = [f.name for f in dataclasses.fields(cls) if f.name != "extra"]  # type: ignore[arg-type]
        values = {}
        for name in names:
            if name not in d:
                continue
            value = d[name]
            if name in cls._nested and value is not None:
                value = [cls._nested[name].from_dict(v) for v in value]  # type: ignore[attr-defined]
            values[name] = value
        extra = {key: value for key, value in d.items() if key not in names}
        return cast(Any, cls)(**values, extra=extra)  # cls is one of the dataclasses below

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if f.name in self._nested and value is not None:
                value = [v.to_dict() for v in value]
            out[f.name] = value
        out.update(self.extra)  # type: ignore[attr-defined]
        return out


@dataclass(frozen=True, kw_only=True)
class RankedUnit(_Record):
    """A unit in a ranking or an expected list: a chunk (``id`` = chunk id) or, in document-unit
    goldsets, a document (``id == doc_id``, ``start``/``end`` the extent of its chunks)."""

    id: str
    doc_id: str
    start: int
    end: int
    score: float | None  # None: the retriever could not score it (BM25 shares no term)
    grade: int
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class EvidenceSpan(_Record):
    doc: str
    start: int | None  # None with ``end``: the whole document is the evidence (document unit)
    end: int | None
    grade: int
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Retrieved(_Record):
    """One question as one candidate answered it: the stored raw result, before any metric."""

    _nested: ClassVar[dict[str, type]] = {"ranking": RankedUnit, "expected": RankedUnit, "evidence": EvidenceSpan}

    candidate: str
    question_id: str
    question: str
    tags: list[str]
    ranking: list[RankedUnit]
    expected: list[RankedUnit]  # every relevant unit, scored even when not retrieved
    evidence: list[EvidenceSpan]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class QuestionRecord(Retrieved):
    """A line of per_question.jsonl: the retrieved result with its metrics and diagnostics."""

    first_relevant_rank: int | None = None  # 1-based; None: no relevant unit within depth
    metrics: dict[str, float] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class CandidateResult(_Record):
    """A candidate in summary.json: what it is, its rank, mean quality, and operating figures."""

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
    ops: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CandidateResult:
        if "lexical" not in d:  # stored before the field existed: BM25 was the one inverted index
            d = {**d, "lexical": d.get("index") == LEXICAL_INDEX}
        return super().from_dict(d)


@dataclass(frozen=True, kw_only=True)
class RunSummary(_Record):
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
class Manifest(_Record):
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


@dataclass(frozen=True, kw_only=True)
class UnitText(_Record):
    """A line of texts.jsonl: the text of one unit, so reports need no corpus. Units of documents with
    pages (PDFs, slides) also carry ``pages`` ([first, last], 1-based) and ``page_label`` in ``extra``."""

    doc_id: str
    start: int
    end: int
    text: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def pages_label(self) -> str:
        """The pages a unit lies on ("p. 4–5", "slide 2"); empty for documents without pages."""
        pages, label = self.extra.get("pages"), self.extra.get("page_label")
        if not (isinstance(pages, list) and len(pages) == 2 and isinstance(label, str)):
            return ""
        return pages_label(label, (int(pages[0]), int(pages[1])))


def unit_pages(texts: list[UnitText]) -> dict[tuple[str, int, int], str]:
    """(doc_id, start, end) → the pages of each unit that has them ("p. 4–5")."""
    return {(t.doc_id, t.start, t.end): t.pages_label for t in texts if t.pages_label}


@dataclass(frozen=True)
class StoredRun:
    """A finished run read back from its folder."""

    path: Path
    summary: RunSummary
    manifest: Manifest
    records: list[QuestionRecord]
    texts: list[UnitText]

    @property
    def run_id(self) -> str:
        return self.manifest.run_id or self.path.name

    def records_of(self, cid: str) -> list[QuestionRecord]:
        return [r for r in self.records if r.candidate == cid]


def load_summary(folder: Path) -> RunSummary:
    return _parsed(folder / SUMMARY, RunSummary, load_json(folder / SUMMARY))


def load_manifest(folder: Path) -> Manifest:
    path = folder / MANIFEST
    return _parsed(path, Manifest, load_json(path)) if path.is_file() else Manifest()


def load_records(folder: Path) -> list[QuestionRecord]:
    path = folder / PER_QUESTION
    return [_parsed(f"{path}:{n}", QuestionRecord, row) for n, row in enumerate(load_jsonl(path), start=1)]


def load_texts(folder: Path) -> list[UnitText]:
    path = folder / TEXTS
    if not path.is_file():  # runs before texts.jsonl existed
        return []
    return [_parsed(f"{path}:{n}", UnitText, row) for n, row in enumerate(load_jsonl(path), start=1)]


def load_answers_summary(folder: Path) -> dict[str, Any] | None:
    """The answer layer's summary (`bench answers score`), None when the run's answers were never scored."""
    path = folder / ANSWERS_SUMMARY
    return load_json(path) if path.is_file() else None


def load_answer_rows(folder: Path) -> list[dict[str, Any]]:
    """The answer layer's figures per question; empty when the run's answers were never scored."""
    path = folder / ANSWERS_PER_QUESTION
    return load_jsonl(path) if path.is_file() else []


def load_run(folder: Path) -> StoredRun:
    """Every file of a finished run folder (see ``store.find_run`` for turning a reference into one)."""
    return StoredRun(folder, load_summary(folder), load_manifest(folder), load_records(folder), load_texts(folder))


def save_run(folder: Path, run: StoredRun) -> None:
    """Write the run's result files atomically, each on its own (reports come later, from these)."""
    files.write_jsonl(folder / PER_QUESTION, (r.to_dict() for r in run.records))
    files.write_jsonl(folder / TEXTS, (t.to_dict() for t in run.texts))
    files.write_json(folder / SUMMARY, run.summary.to_dict())
    save_manifest(folder, run.manifest)


def save_manifest(folder: Path, manifest: Manifest) -> None:
    files.write_json(folder / MANIFEST, manifest.to_dict())


def _parsed(where, cls, row):
    if not isinstance(row, dict):
        raise BenchError(f"{where}: not a JSON object; the run folder is damaged")
    try:
        return cls.from_dict(row)
    except TypeError as e:  # a required key is missing
        raise BenchError(f"{where}: {e}; the run folder is damaged") from None
