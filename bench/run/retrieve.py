"""One candidate asks every question: rankings with grades, the expected units scored, and the
candidate's operating figures (sizes, speed, latency, money). No metric is computed here."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TypeGuard, cast

import numpy as np

from bench import measure
from bench.chunking.table import ChunkTable
from bench.chunking.tokens import count_tokens
from bench.config import Candidate
from bench.core.operating import OPERATING_KEYS, Figure, Figures, recall_vs_exact_key
from bench.core.records import EvidenceSpan, RankedUnit, Retrieved
from bench.core.sections import as_number
from bench.embedders import QUERY
from bench.evaluation import costs
from bench.evaluation.prices import Price, hourly_usd
from bench.evaluation.relevance import Judgment
from bench.inputs.goldset import CHUNK, Goldset, Question
from bench.retrieval import rerankers
from bench.retrieval.faiss_index import compression_ratio
from bench.retrieval.pipelines import FusedRetriever, RerankedRetriever, RerankQueries
from bench.retrieval.rerankers import RerankerSpec
from bench.retrieval.retrievers import BuildStats, DenseRetriever, Queries, Retriever
from bench.run.stages import Part


@dataclass(frozen=True)
class RunContext:
    """What every candidate of a run shares: the questions, how deep retrieval goes, and the phases
    its time is recorded in."""

    goldset: Goldset
    depth: int
    phases: measure.Phases
    timing: measure.TimingLog  # how contended the machine was for each timing taken


@dataclass(frozen=True)
class CandidateRun:
    """One candidate as the run asks it: its pipeline (``retriever``) and the built single-model first
    stages it is made of (``parts``, whose sizes, tokens and money add up to the pipeline's), over its
    chunk table, with the table's relevance judgments, and what its figures are timed and priced with."""

    cand: Candidate
    retriever: Retriever
    parts: list[Part]
    table: ChunkTable
    judgments: list[Judgment]
    query_latency: Figures  # query encoding, timed by ModelPool.query_latency
    latency_samples: int  # how many questions are searched one at a time, timed
    reranker: RerankerSpec | None = None
    reranker_model_price: Price | None = None  # a bi-encoder reranker's model's price per token
    corpus_embed_seconds: list[float | None] | None = None  # per part, embedding the whole corpus; None: unknown


def run_candidate(candidate: CandidateRun, run: RunContext) -> tuple[list[Retrieved], Figures]:
    """Every question's ranking and expected units, and the candidate's operating figures (a
    reranker's own cost is added on top of its first stage's: a bi-encoder's from its model's price
    per token)."""
    cand, retriever, parts, table = candidate.cand, candidate.retriever, candidate.parts, candidate.table
    goldset, depth, phases = run.goldset, run.depth, run.phases
    questions = [q.text for q in goldset.questions]
    with phases(f"search {cand.id}"):
        queries = retriever.encode(questions)
        doc_unit = goldset.unit != CHUNK
        rankings = (
            _document_rankings(retriever, queries, table, depth) if doc_unit else retriever.search(queries, depth)
        )
    with phases(f"collect rankings {cand.id}"):
        records = [
            _record(
                cand.id,
                question,
                question.text,
                judgment,
                ranked,
                _expected_scores(retriever, queries, qi, judgment, table, doc_unit),
                table,
                doc_unit,
            )
            for qi, (question, judgment, ranked) in enumerate(zip(goldset.questions, candidate.judgments, rankings))
        ]
    with phases(f"recall vs exact {cand.id}"):
        recall = retriever.recall_against_exact(queries, depth)
    n_timed = min(len(questions), candidate.latency_samples)
    with phases(f"time searches {cand.id}"):
        timed = _search_latency(retriever, queries, n_timed, depth)
    run.timing.add(f"searches {cand.id}", timed.search)
    search_latency = timed.figures()
    total_ms = _machine_ms(candidate.query_latency, search_latency)
    whole = candidate.corpus_embed_seconds or [None] * len(parts)
    stages = [_stage_figures(part, table, questions, total_ms, s) for part, s in zip(parts, whole)]
    figures = {
        **(stages[0] if len(stages) == 1 else combine_stages(stages)),
        recall_vs_exact_key(depth): recall,
        **candidate.query_latency,
        **search_latency,
        "latency_samples": n_timed,
        "timing_cores": measure.cores(),
        **_contention(candidate.query_latency, timed.search),
    }
    if candidate.reranker is not None and isinstance(retriever, RerankedRetriever):
        rerank = _rerank_figures(candidate.reranker, retriever, queries, timed, n_timed, candidate.reranker_model_price)
        figures.update(rerank)
        figures["cost_per_1k_queries_usd"] = _plus(
            figures["cost_per_1k_queries_usd"], rerank["rerank_cost_per_1k_queries_usd"]
        )
        figures["run_cost_usd"] = _plus(figures["run_cost_usd"], rerank["rerank_run_cost_usd"])
    figures["peak_rss_mb"] = round(measure.peak_rss_mb(), 1)
    for key in OPERATING_KEYS:  # every candidate carries every figure; None where it does not apply
        figures.setdefault(key, None)
    return records, figures


def run_perturbed(candidate: CandidateRun, run: RunContext, asked: dict[str, list[str]]) -> dict[str, list[Retrieved]]:
    """Every question asked again in each perturbed form (``asked``: kind → the questions as typed),
    ranked and graded as the originals are; expected units unscored (only the metrics are kept)."""
    cand, retriever, table = candidate.cand, candidate.retriever, candidate.table
    doc_unit = run.goldset.unit != CHUNK
    out: dict[str, list[Retrieved]] = {}
    for kind, texts in asked.items():
        with run.phases(f"search {kind} {cand.id}"):
            queries = retriever.encode(texts)
            rankings = (
                _document_rankings(retriever, queries, table, run.depth)
                if doc_unit
                else retriever.search(queries, run.depth)
            )
        unscored = [np.full(len(judgment.units), np.nan) for judgment in candidate.judgments]
        out[kind] = [
            _record(cand.id, question, text, judgment, ranked, none, table, doc_unit)
            for question, text, judgment, none, ranked in zip(
                run.goldset.questions, texts, candidate.judgments, unscored, rankings
            )
        ]
    return out


def _record(
    cid: str,
    question: Question,
    text: str,
    judgment: Judgment,
    ranked: tuple[np.ndarray, np.ndarray],
    expected_scores: np.ndarray,
    table: ChunkTable,
    doc_unit: bool,
) -> Retrieved:
    """One question as asked (``text``: as written, or a perturbed form) and ranked (``ranked``: units and
    their scores), graded by its judgment."""
    units, scores = ranked
    return Retrieved(
        candidate=cid,
        question_id=question.id,
        question=text,
        tags=list(question.tags),
        ranking=_entries(units, scores, judgment.grade_of(units), table, doc_unit),
        expected=_entries(judgment.units, expected_scores, judgment.grades, table, doc_unit),
        evidence=[
            EvidenceSpan(
                doc=e.doc,
                start=e.start,
                end=e.end,
                grade=e.grade,
                extra={
                    **({"pages": e.pages} if e.pages else {}),
                    **({"matched": e.matched, "similarity": e.similarity} if e.matched else {}),
                },
            )
            for e in question.evidence
        ],
    )


def _stage_figures(
    part: Part, table: ChunkTable, questions: list[str], query_ms: float | None, corpus_seconds: float | None
) -> Figures:
    """Sizes, build speed, tokens and money of one single-model first stage."""
    retriever, build = part.retriever, part.build
    query_stats = retriever.query_stats
    tokens: Figures = {"index_tokens": None, "question_tokens_mean": None}
    index_tokens: int | None = None
    question_tokens: float | None = None
    if build.chunk_tokens is not None:
        tokens = dict(measure.token_figures(build.chunk_tokens, retriever.spec.max_tokens))
        index_tokens = int(build.chunk_tokens.sum())
        counted = retriever.count_tokens(questions, QUERY)
        question_tokens = float(np.mean(counted)) if questions and counted is not None else None
        tokens["question_tokens_mean"] = question_tokens
        share = build.embed.embedded / len(table) if len(table) else 0.0
        tokens["tokens_per_second"] = (
            round(index_tokens * share / build.embed_seconds, 1)
            if build.embed.embedded and build.embed_seconds > 0
            else None
        )
    usage = costs.Usage(
        n_chunks=len(table),
        index_tokens=index_tokens,
        question_tokens_mean=question_tokens,
        chunks_embedded=build.embed.embedded,
        questions_embedded=query_stats.embedded if query_stats else 0,
        embed_seconds=build.embed_seconds,
        reported_tokens=None if build.billed_tokens is None else build.billed_tokens + (retriever.query_billed or 0),
        query_ms_mean=query_ms,
        corpus_embed_seconds=corpus_seconds,
    )
    return {
        "n_chunks": len(table),
        "dims": build.dims,
        "vector_bytes": len(table) * build.dims * 4 if build.dims else None,
        "index_bytes": build.index_bytes,
        "index_factory": build.factory,
        **_store_figures(retriever, build),
        "compression_ratio": round(compression_ratio(build.index_bytes, len(table), build.dims), 3)
        if build.index_bytes and build.dims
        else None,
        "embed_seconds": round(build.embed_seconds, 4),
        "chunks_per_second": round(build.embed.embedded / build.embed_seconds, 1)
        if build.embed.embedded and build.embed_seconds > 0
        else None,
        "chunks_embedded": build.embed.embedded,
        "chunks_from_cache": build.embed.cached,
        "questions_embedded": query_stats.embedded if query_stats else None,
        "questions_from_cache": query_stats.cached if query_stats else None,
        "corpus_embed_seconds": None if corpus_seconds is None else round(corpus_seconds, 4),
        "index_build_seconds": round(build.index_build_seconds, 4),
        "index_build_cpu_seconds": round(build.index_build_cpu_seconds, 4),
        "index_memory_mb": build.index_memory_mb,
        "lexical_tokenizer": build.tokenizer,  # which language, segmenter and stopwords BM25 indexed with
        **tokens,
        **cast(Figures, costs.candidate_costs(part.price, usage, hourly_usd(retriever.spec))),  # figures by their keys
    }


def _store_figures(retriever: Retriever, build: BuildStats) -> Figures:
    """Which vector store a dense stage searched, its version, and its settings as it reports them."""
    store = build.store
    if store is None:
        return {}
    searched = retriever.search_settings if isinstance(retriever, DenseRetriever) else {}
    built = ", ".join(f"{k}={v}" for k, v in store.settings.items())
    search = ", ".join(f"{k}={v}" for k, v in searched.items())
    return {
        "store": store.store,
        "store_version": store.version,
        "store_settings": "; ".join(part for part in (built, search) if part) or None,
        "store_index_bytes": store.index_bytes,
    }


# How a fusion's figures follow from its parts': sizes and counts add up (a part without one, BM25's
# vectors say, adds nothing); money, and the time to embed the corpus, add up but stay unknown when any
# part's is; figures about how a model reads text come from the first part that has them.
_ADDED = (
    "vector_bytes", "index_bytes", "embed_seconds", "chunks_embedded", "chunks_from_cache",
    "questions_embedded", "questions_from_cache", "index_build_seconds", "index_build_cpu_seconds", "index_memory_mb",
    "index_tokens", "truncated_chunks", "billed_tokens",
)  # fmt: skip
_MONEY = ("index_cost_usd", "cost_per_1k_queries_usd", "run_cost_usd", "corpus_embed_seconds")


def combine_stages(stages: list[Figures]) -> Figures:
    """One pipeline's figures from those of its single-model first stages (see ``_ADDED``)."""
    out: Figures = {}
    for key in dict.fromkeys(k for stage in stages for k in stage):  # in the parts' order: the same every run
        values = [stage.get(key) for stage in stages]
        present = [v for v in values if v is not None]
        numbers = [v for v in present if _is_number(v)]
        if key in _ADDED:
            out[key] = sum(numbers) if present else None
        elif key in _MONEY:
            out[key] = None if len(present) < len(values) else sum(numbers)
        elif key == "index_factory":
            out[key] = " + ".join(map(str, present)) or None
        elif key == "price_source":
            out[key] = "; ".join(dict.fromkeys(map(str, present)))
        elif key == "cost_estimate":
            out[key] = any(present)
        elif key == "price_per_mtok":
            priced = {v for v in values if v != 0}
            out[key] = 0.0 if not priced else (priced.pop() if len(priced) == 1 else None)
        else:
            out[key] = present[0] if present else None
    return out


def _rerank_figures(
    spec: RerankerSpec,
    retriever: RerankedRetriever,
    queries: RerankQueries,
    timed: SearchTiming,
    n_timed: int,
    model_price: Price | None,
) -> Figures:
    """The reranker's latency (each timed search's re-scoring of ``top`` results) and its cost,
    added to the pipeline's cost per 1,000 queries and to what this run was billed."""
    latency: Figures = {
        **measure.latency_summary("rerank", timed.rerank_wall),
        "rerank_cpu_ms_mean": float(np.mean(timed.rerank_cpu)) * 1000 if timed.rerank_cpu else None,
    }
    sample = [units for units, _ in retriever.first.search(queries.first[:n_timed], retriever.top)]
    texts_tokens = [
        count_tokens(queries.texts[i]) + sum(count_tokens(retriever.table.text(int(u))) for u in units)
        for i, units in enumerate(sample)
    ]
    per_search = float(np.mean(texts_tokens)) if texts_tokens else None
    cpu_ms = as_number(latency["rerank_cpu_ms_mean"])
    machine_ms = cpu_ms / measure.cores() if cpu_ms is not None else as_number(latency["rerank_ms_mean"])
    priced = rerankers.reranker_costs(spec, tokens_per_search=per_search, ms_mean=machine_ms)
    cost, source = priced["rerank_cost_per_1k_queries_usd"], priced["rerank_price_source"]
    if spec.kind == "bi-encoder" and model_price is not None and model_price.price_per_mtok != 0:
        # the model's price per token, on the query and the `top` texts it embeds per search
        cost = costs.cost_per_1k_queries_usd(per_search, model_price.price_per_mtok)
        source = model_price.source
    run_cost = 0.0 if cost == 0 else None
    if spec.price_per_1k_searches is not None:
        run_cost = retriever.searches / 1000 * spec.price_per_1k_searches
    elif spec.price_per_mtok is not None:
        run_cost = costs.run_cost_usd(retriever.billed_tokens, spec.price_per_mtok)
    elif spec.kind == "bi-encoder" and model_price is not None and model_price.price_per_mtok != 0:
        run_cost = None  # what its texts cost is billed by the embedding cache's misses, not counted here
    return {
        **latency,
        "rerank_top": retriever.top,
        "rerank_price_source": source,
        "rerank_cost_per_1k_queries_usd": cost,
        "rerank_run_cost_usd": run_cost,
    }


def _machine_ms(query: Figures, search: Figures) -> float | None:
    """Machine milliseconds per query of embedding the question and searching, for a compute price:
    CPU time on one thread shared by the machine's cores (wall time, as older runs stored, where
    CPU time is not known)."""
    cpu = [as_number(query.get("query_embed_cpu_ms_mean")), as_number(search.get("search_cpu_ms_mean"))]
    if cpu[0] is not None:
        return sum(c or 0.0 for c in cpu) / measure.cores()
    wall = as_number(query.get("query_embed_ms_mean"))
    return None if wall is None else wall + (as_number(search.get("search_ms_mean")) or 0.0)


def _contention(query: Figures, search: measure.Timings) -> Figures:
    """The most contended of the candidate's timings, and whether any was taken on a busy machine."""
    shares = [s for s in (as_number(query.get("timing_contention")), search.contention) if s is not None]
    return {
        "timing_contention": round(max(shares), 3) if shares else None,
        "timing_busy": bool(query.get("timing_busy")) or search.busy,
    }


def _plus(a: Figure, b: Figure) -> float | None:
    """A sum of money that stays unknown when either part is."""
    return a + b if _is_number(a) and _is_number(b) else None


def _is_number(value: Figure) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _document_rankings(
    retriever: Retriever, queries: Queries, table: ChunkTable, depth: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pool chunk hits into documents: a document scores its best chunk and takes that chunk's rank."""
    n_docs, n_chunks = len(table.doc_ids), len(table)
    rankings = []
    for qi in range(len(queries)):
        n = min(depth * 4, n_chunks)
        while True:  # search deeper until `depth` distinct documents came back, or nothing more can
            [(units, scores)] = retriever.search(queries[qi : qi + 1], n)
            docs = table.doc[units]
            first = np.sort(np.unique(docs, return_index=True)[1])
            if len(first) >= min(depth, n_docs) or n >= n_chunks or len(units) < n:
                break
            n = min(n * 2, n_chunks)
        first = first[:depth]
        rankings.append((docs[first].astype(np.int64), scores[first]))
    return rankings


def _expected_scores(
    retriever: Retriever, queries: Queries, qi: int, judgment: Judgment, table: ChunkTable, doc_unit: bool
) -> np.ndarray:
    if not doc_unit:
        return retriever.score(queries, qi, judgment.units)
    return np.array(
        [
            retriever.score(queries, qi, np.arange(r.start, r.stop)).max() if len(r) else np.nan
            for r in map(table.chunks_of, judgment.units.tolist())
        ]
    )


def _entries(
    units: np.ndarray, scores: np.ndarray, grades: np.ndarray, table: ChunkTable, doc_unit: bool
) -> list[RankedUnit]:
    out = []
    for unit, score, grade in zip(units.tolist(), np.asarray(scores).tolist(), np.asarray(grades).tolist()):
        if doc_unit:  # a document: its id, and the extent of its chunks
            doc_id = table.doc_ids[unit]
            r = table.chunks_of(unit)
            start, end = (int(table.start[r.start]), int(table.end[r.stop - 1])) if len(r) else (0, 0)
            out.append(
                RankedUnit(id=doc_id, doc_id=doc_id, start=start, end=end, score=_score(score), grade=int(grade))
            )
        else:
            out.append(
                RankedUnit(
                    id=table.ids[unit],
                    doc_id=table.doc_ids[int(table.doc[unit])],
                    start=int(table.start[unit]),
                    end=int(table.end[unit]),
                    score=_score(score),
                    grade=int(grade),
                )
            )
    return out


def _score(score: float) -> float | None:
    return None if score != score else float(score)


def _search_latency(retriever: Retriever, queries: Queries, n: int, depth: int) -> SearchTiming:
    """Each query searched alone against the built index, as a service would, on one thread, after a
    warm-up search; a reranked pipeline's re-scoring is timed apart (its wall and CPU seconds, the
    median of every time it ran) and not counted in the search's time."""
    if not n:
        return SearchTiming(measure.Timings([], []), [], [])
    reranked = retriever if isinstance(retriever, RerankedRetriever) else None
    rerank: list[list[tuple[float, float]]] = [[] for _ in range(n)]

    calls = [0]  # every search run while timing, warm-up and repeated rounds included

    def warm_up() -> None:
        calls[0] += 1
        retriever.search(queries[:1], depth)

    def search(i: int) -> None:
        calls[0] += 1
        retriever.search(queries[i : i + 1], depth)
        if reranked:
            rerank[i].append(reranked.rerank_seconds[-1])

    with retriever.one_query_at_a_time():
        server_before = _server_cpu(retriever)
        timings = measure.time_on_one_thread(warm_up, [functools.partial(search, i) for i in range(n)])
        server_after = _server_cpu(retriever)
    if server_before is not None and server_after is not None:
        # a server's CPU time is read for the whole timing (its clock ticks are coarse), shared by the calls
        per_call = (server_after - server_before) / calls[0]
        timings = measure.Timings(
            timings.wall, [cpu + per_call for cpu in timings.cpu], timings.contention, timings.retimed
        )
    if not reranked:
        return SearchTiming(timings, [], [])
    rerank_wall = [float(np.median([wall for wall, _ in r])) for r in rerank]
    rerank_cpu = [float(np.median([cpu for _, cpu in r])) for r in rerank]
    own = measure.Timings(
        [max(wall - r, 0.0) for wall, r in zip(timings.wall, rerank_wall)],
        [max(cpu - r, 0.0) for cpu, r in zip(timings.cpu, rerank_cpu)],
        timings.contention,
        timings.retimed,
    )
    return SearchTiming(own, rerank_wall, rerank_cpu)


def _server_cpu(retriever: Retriever) -> float | None:
    """CPU seconds used so far by the servers bench started for the pipeline's stores, if any."""
    first = retriever.first if isinstance(retriever, RerankedRetriever) else retriever
    parts = first.parts if isinstance(first, FusedRetriever) else [first]
    used = [p.store.server_cpu_seconds() for p in parts if isinstance(p, DenseRetriever)]
    known = [u for u in used if u is not None]
    return sum(known) if known else None


@dataclass(frozen=True)
class SearchTiming:
    """Single searches timed: the search's own seconds, and a reranker's per search (wall and CPU)."""

    search: measure.Timings
    rerank_wall: list[float]
    rerank_cpu: list[float]

    def figures(self) -> Figures:
        cpu = self.search.cpu
        return {
            **measure.latency_summary("search", self.search.wall),
            "search_cpu_ms_mean": float(np.mean(cpu)) * 1000 if cpu else None,
        }
