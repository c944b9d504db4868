"""One candidate asks every question: rankings with grades, the expected units scored, and the
candidate's operating figures (sizes, speed, latency, money). No metric is computed here."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from bench import measure
from bench.chunking.table import ChunkTable
from bench.config import Candidate
from bench.embedders import QUERY
from bench.evaluation import costs
from bench.evaluation.relevance import Judgment
from bench.inputs.goldset import CHUNK, Goldset
from bench.results.schema import OPS_KEYS, EvidenceSpan, RankedUnit, Retrieved, recall_vs_exact_key
from bench.retrieval.faiss_index import compression_ratio
from bench.retrieval.retrievers import BuildStats, Retriever


def run_candidate(
    cand: Candidate,
    retriever: Retriever,
    build: BuildStats,
    table: ChunkTable,
    goldset: Goldset,
    judgments: list[Judgment],
    depth: int,
    query_latency: dict,
    price,
    latency_samples: int,
    phases: measure.Phases,
) -> tuple[list[Retrieved], dict]:
    """Every question's ranking and expected units, and the candidate's operating figures."""
    questions = [q.text for q in goldset.questions]
    with phases(f"search {cand.id}"):
        queries = retriever.encode(questions)
        doc_unit = goldset.unit != CHUNK
        rankings = (
            _document_rankings(retriever, queries, table, depth) if doc_unit else retriever.search(queries, depth)
        )
    with phases(f"collect rankings {cand.id}"):
        records = []
        for qi, (question, judgment, (units, scores)) in enumerate(zip(goldset.questions, judgments, rankings)):
            expected_scores = _expected_scores(retriever, queries, qi, judgment, table, doc_unit)
            records.append(
                Retrieved(
                    candidate=cand.id,
                    question_id=question.id,
                    question=question.text,
                    tags=list(question.tags),
                    ranking=_entries(units, scores, judgment.grade_of(units), table, doc_unit),
                    expected=_entries(judgment.units, expected_scores, judgment.grades, table, doc_unit),
                    evidence=[
                        EvidenceSpan(
                            doc=e.doc,
                            start=e.start,
                            end=e.end,
                            grade=e.grade,
                            extra={"pages": e.pages} if e.pages else {},
                        )
                        for e in question.evidence
                    ],
                )
            )
    query_stats = retriever.query_stats
    with phases(f"recall vs exact {cand.id}"):
        recall = retriever.recall_against_exact(queries, depth)
    tokens: dict[str, Any] = {"index_tokens": None, "question_tokens_mean": None}
    if build.chunk_tokens is not None:
        tokens = measure.token_figures(build.chunk_tokens, retriever.spec.max_tokens)
        counted = retriever.count_tokens(questions, QUERY)
        tokens["question_tokens_mean"] = float(np.mean(counted)) if questions and counted is not None else None
        share = build.embed.embedded / len(table) if len(table) else 0.0
        tokens["tokens_per_second"] = (
            round(tokens["index_tokens"] * share / build.embed_seconds, 1)
            if build.embed.embedded and build.embed_seconds > 0
            else None
        )
    with phases(f"time searches {cand.id}"):
        search_latency = _search_latency(retriever, queries, min(len(questions), latency_samples), depth)
    query_ms = query_latency["query_embed_ms_mean"]
    usage = costs.Usage(
        n_chunks=len(table),
        index_tokens=tokens.get("index_tokens"),
        question_tokens_mean=tokens.get("question_tokens_mean"),
        chunks_embedded=build.embed.embedded,
        questions_embedded=query_stats.embedded if query_stats else 0,
        embed_seconds=build.embed_seconds,
        reported_tokens=None if build.billed_tokens is None else build.billed_tokens + (retriever.query_billed or 0),
        query_ms_mean=None if query_ms is None else query_ms + (search_latency["search_ms_mean"] or 0.0),
    )
    figures = {
        "n_chunks": len(table),
        "dims": build.dims,
        "vector_bytes": len(table) * build.dims * 4 if build.dims else None,
        "index_bytes": build.index_bytes,
        "index_factory": build.factory,
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
        "index_build_seconds": round(build.index_build_seconds, 4),
        "index_memory_mb": build.index_memory_mb,
        recall_vs_exact_key(depth): recall,
        **tokens,
        **costs.candidate_costs(price, usage, costs.hourly_usd(retriever.spec)),
        **query_latency,
        **search_latency,
        "latency_samples": min(len(questions), latency_samples),
        "peak_rss_mb": round(measure.peak_rss_mb(), 1),
    }
    for key in OPS_KEYS:  # every candidate carries every figure; None where it does not apply
        figures.setdefault(key, None)
    return records, figures


def _document_rankings(retriever: Retriever, queries, table: ChunkTable, depth: int):
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
    retriever: Retriever, queries, qi: int, judgment: Judgment, table: ChunkTable, doc_unit: bool
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


def _search_latency(retriever: Retriever, queries, n: int, depth: int) -> dict:
    """Each query searched alone against the built index, as a service would, after a warm-up search."""
    if not n:
        return measure.latency_summary("search", [])
    with retriever.one_query_at_a_time():
        retriever.search(queries[:1], depth)
        seconds = []
        for i in range(n):
            t0 = time.perf_counter()
            retriever.search(queries[i : i + 1], depth)
            seconds.append(time.perf_counter() - t0)
    return measure.latency_summary("search", seconds)
