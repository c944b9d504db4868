"""A diagnosis finding as plain data: how serious, the candidates it concerns and the figures behind it,
one frozen dataclass per rule whose class names the rule's code. No sentences: the rules that find them
are in ``bench.evaluation.finding_rules``, the words in ``bench.report.findings_text``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal, TypeAlias

Severity = Literal["warning", "info"]


@dataclass(frozen=True)
class Finding:
    """One pattern a rule found: how serious, the candidates it concerns (the one judged first) and the
    figures behind it, whose type names the rule; no sentences."""

    severity: Severity
    candidates: tuple[str, ...]
    evidence: Evidence

    @property
    def rule(self) -> str:
        """The rule's code: too_broad, truncation, chunkers_apart, …"""
        return self.evidence.rule


@dataclass(frozen=True, kw_only=True)
class TooConservative:
    rule: ClassVar[str] = "too_conservative"
    recall: float
    precision: float
    precision_ceiling: float
    relevant_units: float  # mean per question


@dataclass(frozen=True, kw_only=True)
class TooBroad:
    rule: ClassVar[str] = "too_broad"
    recall: float
    precision: float
    precision_ceiling: float | None
    span_precision: float | None
    relevant_units: float | None


@dataclass(frozen=True, kw_only=True)
class Mismatch:
    rule: ClassVar[str] = "mismatch"
    recall: float
    precision: float
    precision_ceiling: float | None
    hit_rate: float | None
    bm25_recall: float | None  # plain BM25 on the same chunker, for a single dense model
    low: bool  # recall and precision both low; else BM25 does as well


@dataclass(frozen=True, kw_only=True)
class OrderInTopK:
    """The first relevant unit found within k, but low: mrr/hit_rate against random order's."""

    hit_rate: float
    mrr: float
    mrr_hit_ratio: float
    ratio_bound: float  # below this the ratio counts as low
    random_ratio: float  # mrr/hit_rate if the first hit sat anywhere in the top k
    rank_1_hit_rate: float | None


@dataclass(frozen=True, kw_only=True)
class LateHits:
    """Hit rate at k and at depth: the questions whose first relevant unit ranks past k."""

    hit_rate_at_k: float
    hit_rate_at_depth: float
    late_share: float


@dataclass(frozen=True, kw_only=True)
class WrongOrder:
    rule: ClassVar[str] = "wrong_order"
    in_top: OrderInTopK | None
    late: LateHits | None


@dataclass(frozen=True, kw_only=True)
class NearDuplicates:
    rule: ClassVar[str] = "near_duplicates"
    near_zero_share: float  # of the questions with a score gap
    band: float  # |gap| below this is near zero
    questions: int  # with a score gap


@dataclass(frozen=True, kw_only=True)
class Truncation:
    rule: ClassVar[str] = "truncation"
    truncated_chunks: int
    n_chunks: int
    chunk_share: float
    token_share: float  # of the corpus tokens, never embedded


@dataclass(frozen=True, kw_only=True)
class Misses:
    rule: ClassVar[str] = "misses"
    missed: int  # questions with no relevant unit within depth
    n_questions: int
    share: float


@dataclass(frozen=True, kw_only=True)
class NoRelevantUnit:
    rule: ClassVar[str] = "no_relevant_unit"
    questions: int  # whose evidence no unit satisfies
    n_questions: int | None


@dataclass(frozen=True, kw_only=True)
class ChunkerFigures:
    chunker: str
    recall: float
    span_precision: float


@dataclass(frozen=True, kw_only=True)
class ChunkersApart:
    rule: ClassVar[str] = "chunkers_apart"
    model: str
    index: str  # the rest of the candidate id after model and chunker: index, query setting, reranker
    preferred: ChunkerFigures
    beaten: tuple[ChunkerFigures, ...]


@dataclass(frozen=True, kw_only=True)
class MissedByAll:
    rule: ClassVar[str] = "missed_by_all"
    question_ids: tuple[str, ...]
    n_candidates: int  # with records, all of which miss them
    n_questions: int


@dataclass(frozen=True, kw_only=True)
class PipelineGain:
    """A pipeline (a reranked candidate or a fusion) against what it is built on, on the ranking metric."""

    pipeline: str
    against: str  # its first stage, or a fusion's best part
    before: float
    after: float

    @property
    def gain(self) -> float:
        return self.after - self.before


@dataclass(frozen=True, kw_only=True)
class Pipelines:
    rule: ClassVar[str] = "pipelines"
    metric: str  # mrr@k
    gains: tuple[PipelineGain, ...]  # best gain first


CandidateEvidence: TypeAlias = (
    TooConservative | TooBroad | Mismatch | WrongOrder | NearDuplicates | Truncation | Misses | NoRelevantUnit
)

RunEvidence: TypeAlias = ChunkersApart | MissedByAll | Pipelines

# What a finding's figures can be: the type says which rule found it.
Evidence: TypeAlias = CandidateEvidence | RunEvidence
