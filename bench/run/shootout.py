"""Runs the candidate grid and stores raw results (rankings with scores and grades); no metric math here."""

from __future__ import annotations

import hashlib
import json
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from bench import __version__, files, measure
from bench.chunking.sizes import chunk_sizes
from bench.chunking.table import ChunkTable
from bench.config import Candidate, Config
from bench.embedders import PASSAGE, Embedder, load_embedder, paths
from bench.embedders.cache import EmbeddingCache, NoCache
from bench.embedders.engine import Engine, LocalEngine
from bench.embedders.static import needs_distillation
from bench.engines import make_engine
from bench.errors import BenchError
from bench.evaluation import costs
from bench.evaluation.relevance import Judgment, judge
from bench.evaluation.scoring import rank_candidates, recommendation, score_candidate
from bench.inputs.corpus import Corpus, load_corpus
from bench.inputs.goldset import CHUNK, Goldset, load_goldset
from bench.inputs.lock import check_lock
from bench.report import terminal
from bench.results import store
from bench.retrieval.faiss_index import compression_ratio
from bench.retrieval.retrievers import BM25Retriever, BuildStats, DenseRetriever, Retriever


@dataclass
class RunOutcome:
    path: Path
    summary: dict
    manifest: dict
    records: list[dict]


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM (``kill``, a CI timeout, a container stop) like Ctrl-C while a run is going, so the
    staging folder is removed and the cache closed. Only in the main thread, where Python runs signal
    handlers, and only over the default action: a handler someone installed is left alone."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@_terminate_as_interrupt()
def run_shootout(
    config: Config,
    console: Console | None = None,
    use_cache: bool = True,
    allow_unlocked: bool = False,
    only: tuple[str, ...] = (),
    skip: tuple[str, ...] = (),
    remeasure: bool = False,
    reports: bool = True,
    engine: str = "local",
) -> RunOutcome:
    """Index the corpus under every candidate, ask every question, write results/<run_id>/.

    A goldset whose lock no longer matches (goldset or corpus changed) is refused unless
    ``allow_unlocked``; a goldset with no lock runs with a warning. The manifest says which.
    ``remeasure`` times query encoding again even where this machine's timings are cached.
    ``reports`` writes plots, report.pdf and inspector.html once the results are safely in place.
    ``engine`` says where corpus embedding runs (see ``bench.engines``).
    """
    console = console or terminal.console(stderr=True)
    started = datetime.now(UTC)
    phases = measure.Phases()
    with phases("load corpus"):
        corpus = load_corpus(config.corpus)
    with phases("load goldset"):
        goldset = load_goldset(config.goldset, corpus)
    with phases("check lock"):
        lock = check_lock(goldset, corpus)
    if lock.problem and not allow_unlocked:
        raise BenchError(lock.problem)
    if not lock.locked and not lock.problem:
        console.print(
            f"[yellow]warning:[/] {goldset.path} is not locked; "
            f"lock the reviewed goldset with `bench goldset lock {goldset.path}`"
        )
    elif lock.problem:
        console.print(f"[yellow]warning:[/] running unlocked: {lock.problem}")
    candidates = config.candidates(only, skip)
    if not candidates:
        raise BenchError(f"{config.path}: no candidate is left after exclude, --only and --skip; loosen them")
    run_id = store.new_run_id(config.results, config.hash, started)
    depth = config.retrieval_depth
    root = paths.cache_root(config.cache_dir, config.cache_override)
    cache = EmbeddingCache(paths.embeddings_dir(root)) if use_cache else NoCache()
    models = ModelPool(
        config,
        cache,
        paths.models_dir(root),
        console,
        remeasure=remeasure,
        measured_at=started.isoformat(timespec="seconds"),
        engine=make_engine(engine, paths.models_dir(root), config.batch_size),
    )
    console.print(
        f"[bold]bench run[/] {run_id}: {len(corpus)} documents, {len(goldset.questions)} questions "
        f"({goldset.unit} unit), {len(candidates)} candidates, k={config.k}"
    )

    with store.run_folder(config.results, run_id) as staging, _progress(console) as progress:
        needed = {c.chunker for c in candidates}
        tables = _chunk_all(config, corpus, progress, models, needed, phases)
        with phases("judge relevance"):
            judgments = {name: judge(goldset, table, config.min_overlap) for name, table in tables.items()}
        summaries, records = [], []
        built: tuple[tuple[str, str, str], Retriever, BuildStats] | None = None
        timed = [q.text for q in goldset.questions[: config.latency_samples]]  # latency samples
        for cand in candidates:
            table = tables[cand.chunker]
            key = (cand.model, cand.chunker, cand.index)
            if built is None or built[0] != key:  # one build serves every query setting of an index
                built = None  # release the previous index before building the next
                retriever = models.retriever(cand)
                verb = "indexing" if config.model(cand.model).lexical else "embedding"
                task = progress.add_task(f"{verb} {cand.model}/{cand.chunker}/{cand.index}", total=len(table))
                t0 = time.perf_counter()
                built = (key, retriever, retriever.build(table, lambda n, t=task: progress.advance(t, n)))
                _record_build(phases, "/".join(key), built[2], time.perf_counter() - t0)
                _warn_truncation(console, cand, config.model(cand.model).max_tokens, built[2])
            _, retriever, build = built
            retriever.set_search(_search_params(config, cand))
            with phases(f"time queries {cand.model}"):
                latency = models.query_latency(cand.model, retriever, timed)
            cand_records, ops_figures = _run_candidate(
                cand,
                retriever,
                build,
                table,
                goldset,
                judgments[cand.chunker],
                depth,
                latency,
                config.price(cand.model),
                config.latency_samples,
                phases,
            )
            with phases(f"score {cand.id}"):
                scored = score_candidate(
                    cand_records,
                    k=config.k,
                    depth=depth,
                    gain=config.ndcg_gain,
                    unit=goldset.unit,
                    min_overlap=config.min_overlap,
                )
            summary = {
                "id": cand.id,
                "model": cand.model,
                "chunker": cand.chunker,
                "index": cand.index,
                "search": cand.search,
                "rank": None,
                **scored,
                "ops": ops_figures,
            }
            summaries.append(summary)
            records.extend(cand_records)
        ranked = rank_candidates(summaries, config.k)
        with phases("measure chunk sizes"):
            sizes = {name: chunk_sizes(table) for name, table in tables.items()}
        summary_doc = {
            "k": config.k,
            "depth": depth,
            "unit": goldset.unit,
            "ndcg_gain": config.ndcg_gain,
            "min_overlap": config.min_overlap,
            "candidates": ranked,
            "recommendation": recommendation(ranked, config.k, config.recommend_margin),
            "chunkers": sizes,
        }
        manifest = {
            "run_id": run_id,
            "bench_version": __version__,
            "config": config.resolved(),
            "config_hash": config.hash,
            "config_path": str(config.path),
            "corpus": {"path": str(config.corpus), "sha256": corpus.fingerprint, "documents": len(corpus)},
            "goldset": {
                "path": str(config.goldset),
                "sha256": goldset.fingerprint,
                "questions": len(goldset.questions),
                "unit": goldset.unit,
            },
            "locked": lock.locked,
            "lock": lock.as_manifest(),
            "versions": measure.versions(),
            "machine": measure.machine(),
            "started": started.isoformat(timespec="seconds"),
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "peak_rss_mb": round(measure.peak_rss_mb(), 1),
            "prices": {name: vars(config.price(name)) for name in config.models},
            "percentile_method": measure.PERCENTILE_METHOD,
            "engine": engine,
            "phases": phases.rows,
        }
        with phases("write results"):
            files.write_jsonl(staging / store.PER_QUESTION, records)
            files.write_jsonl(staging / store.TEXTS, store.referenced_texts(records, corpus))
            files.write_json(staging / store.SUMMARY, summary_doc)
            manifest["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
            manifest["peak_rss_mb"] = round(measure.peak_rss_mb(), 1)
            files.write_json(staging / store.MANIFEST, manifest)
    path = config.results / run_id
    if reports:
        try:
            from bench.report.writer import write_reports

            with console.status("writing rank_matrix.csv, plots, report.pdf and inspector.html"):
                t0 = time.perf_counter()
                write_reports(path, summary_doc, records)
                _record_reports(path, manifest, time.perf_counter() - t0)
        except KeyboardInterrupt:  # the results are whole already; only the reports are missing
            console.print(
                f"interrupted while writing reports; the results in {path} are complete: "
                f"`bench report {path}` writes the reports"
            )
            raise
    return RunOutcome(path, summary_doc, manifest, records)


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description:<34}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def _chunk_all(
    config: Config, corpus: Corpus, progress: Progress, models: ModelPool, needed: set[str], phases: measure.Phases
) -> dict[str, ChunkTable]:
    tables = {}
    for spec in config.chunkers:
        if spec.name not in needed:
            continue
        task = progress.add_task(f"chunking {spec.name}", total=len(corpus))
        chunker = spec.build(embed=models.passage_embedding(spec.model) if spec.model else None)
        with phases(f"chunk {spec.name}"):
            tables[spec.name] = ChunkTable.chunk_corpus(corpus, chunker, lambda n, t=task: progress.advance(t, n))
    return tables


def _record_build(phases: measure.Phases, name: str, build: BuildStats, seconds: float) -> None:
    """A build as its parts: embedding (dense models), the index, and the rest (token counts)."""
    table = name.rsplit("/", 1)[0]
    if build.dims is not None:
        phases.add(f"embed {table}", build.embed_seconds, build.rss_mb.get("embed"))
    phases.add(f"index {name}", build.index_build_seconds, build.rss_mb.get("index"))
    rest = seconds - build.embed_seconds - build.index_build_seconds
    if build.dims is not None:
        phases.add(f"count tokens {table}", rest, build.rss_mb.get("count tokens"))


def _record_reports(path: Path, manifest: dict, seconds: float) -> None:
    """The reports come after the results are safe; their time joins the manifest's phases then."""
    manifest["phases"].append(
        {
            "phase": "reports",
            "seconds": round(seconds, 3),
            "rss_mb": round(measure.rss_mb(), 1),
            "peak_rss_mb": round(measure.peak_rss_mb(), 1),
        }
    )
    files.write_json(path / store.MANIFEST, manifest)


def _cost_figures(price, tokens: dict, build: BuildStats, query_stats, query_billed: int | None, n_chunks: int) -> dict:
    """Money, from tokens and the price: indexing, per 1k queries, and what this run billed.

    Billed tokens count only texts sent to the model in this run (cache hits are free); an API's
    reported usage is used when it gives one, else the model's own tokenizer.
    """
    p = price.price_per_mtok
    billed = None
    if tokens.get("index_tokens") is not None and n_chunks:
        per_chunk = tokens["index_tokens"] / n_chunks
        per_question = tokens["question_tokens_mean"] or 0.0
        queried = query_stats.embedded if query_stats else 0
        billed = round(per_chunk * build.embed.embedded + per_question * queried)
    if build.billed_tokens is not None:
        billed = build.billed_tokens + (query_billed or 0)
    figures = {
        "price_per_mtok": p,
        "price_source": price.source,
        "price_date": price.date,
        "cost_estimate": price.estimate,
        "index_cost_usd": costs.index_cost_usd(tokens.get("index_tokens"), p),
        "cost_per_1k_queries_usd": costs.cost_per_1k_queries_usd(tokens.get("question_tokens_mean"), p),
        "billed_tokens": billed,
        "run_cost_usd": costs.run_cost_usd(billed, p) if billed is not None else (0.0 if p == 0 else None),
    }
    if p == 0:  # free whatever the token counts (BM25 has none)
        figures.update(index_cost_usd=0.0, cost_per_1k_queries_usd=0.0, run_cost_usd=0.0)
    if price.estimate:  # an hourly compute price: cost follows measured seconds
        rate = build.hourly_usd
        per_chunk_s = build.embed_seconds / build.embed.embedded if build.embed.embedded else None
        figures["index_cost_usd"] = costs.compute_cost_usd(per_chunk_s * n_chunks if per_chunk_s else None, rate)
        figures["run_cost_usd"] = costs.compute_cost_usd(build.embed_seconds, rate)
    return figures


def _warn_truncation(console: Console, cand: Candidate, max_tokens: int | None, build: BuildStats) -> None:
    """Chunks longer than the model reads lose their tail silently; say so, with the share lost."""
    if build.chunk_tokens is None or not max_tokens:
        return
    figures = measure.token_figures(build.chunk_tokens, max_tokens)
    if figures["truncated_chunks"]:
        console.print(
            f"[yellow]warning:[/] {cand.model}/{cand.chunker}: {figures['truncated_chunks']} of "
            f"{len(build.chunk_tokens)} chunks exceed {cand.model}'s {max_tokens} tokens; "
            f"{figures['truncated_token_share']:.1%} of the corpus tokens are never embedded "
            f"(use smaller chunks)"
        )


def _search_params(config: Config, cand: Candidate) -> dict:
    if config.model(cand.model).lexical:
        return {}
    return dict(next(p for label, p in config.index(cand.index).variants() if label == cand.search))


class ModelPool:
    """Loads each model's weights once per run and hands out retrievers over the shared cache."""

    def __init__(
        self,
        config: Config,
        cache: EmbeddingCache,
        models_dir: Path,
        console: Console,
        remeasure: bool = False,
        measured_at: str = "",
        engine: Engine | None = None,
    ) -> None:
        self.config, self.cache, self.models_dir, self.console = config, cache, models_dir, console
        self.remeasure, self.measured_at = remeasure, measured_at
        self.engine = engine or LocalEngine()
        self._embedders: dict[str, Embedder] = {}
        self._latency: dict[str, dict] = {}

    def embedder(self, name: str) -> Embedder:
        if name not in self._embedders:
            spec = self.config.model(name)
            if spec.loader == "model2vec" and needs_distillation(spec, self.models_dir):
                self.console.print(
                    f"preparing {name}: distilling it from {spec.source.removeprefix('distill:')} "
                    f"into {self.models_dir} (once; about a minute)"
                )
            self._embedders[name] = load_embedder(
                self.config.model(name), batch_size=self.config.batch_size, models_dir=self.models_dir
            )
        return self._embedders[name]

    def query_latency(self, name: str, retriever: Retriever, questions: list[str]) -> dict:
        """Query-encoding latency depends on the model and the machine, not on chunks or index.

        Measured once per model and run; a model running in this process keeps its timings in
        the cache under this machine, the library versions and the questions, so a rerun need
        not load the model. An API's latency is always measured again: the service may have
        changed. ``remeasure`` measures everything again.
        """
        if name in self._latency:
            return self._latency[name]
        spec = self.config.model(name)
        keep = not spec.lexical and spec.loader != "openai"
        key = _latency_key(spec, questions)
        stored = self.cache.latency(spec.cache_key, key) if keep and not self.remeasure else None
        if stored is not None:
            seconds, measured = stored
        else:
            seconds, measured = _query_embed_seconds(retriever, questions), self.measured_at
            if keep and seconds:
                self.cache.store_latency(spec.cache_key, key, seconds, measured)
        self._latency[name] = {
            **measure.latency_summary("query_embed", seconds),
            "query_embed_measured": measured,
            "query_embed_from_cache": stored is not None,
        }
        return self._latency[name]

    def passage_embedding(self, name: str):
        """``texts -> vectors`` through the cache, for chunkers that split by meaning."""
        embedder = self.embedder(name)
        return lambda texts: self.cache.embed(embedder, list(texts), PASSAGE, self.config.batch_size)[0]

    def retriever(self, cand: Candidate) -> Retriever:
        spec = self.config.model(cand.model)
        if spec.lexical:
            return BM25Retriever(spec)
        return DenseRetriever(
            spec,
            self.config.index(cand.index),
            self.cache,
            self.config.batch_size,
            embedder=self.embedder(cand.model),
            engine=self.engine,
        )


def _run_candidate(
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
) -> tuple[list[dict], dict]:
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
                {
                    "candidate": cand.id,
                    "question_id": question.id,
                    "question": question.text,
                    "tags": list(question.tags),
                    "ranking": _entries(units, scores, judgment.grade_of(units), table, doc_unit),
                    "expected": _entries(judgment.units, expected_scores, judgment.grades, table, doc_unit),
                    "evidence": [
                        {"doc": e.doc, "start": e.start, "end": e.end, "grade": e.grade} for e in question.evidence
                    ],
                    "first_relevant_rank": None,
                    "metrics": {},
                    "diagnostics": {},
                }
            )
    query_stats = getattr(retriever, "query_stats", None)
    with phases(f"recall vs exact {cand.id}"):
        recall = retriever.recall_against_exact(queries, depth)
    tokens = {"index_tokens": None, "question_tokens_mean": None}
    if build.chunk_tokens is not None:
        tokens = measure.token_figures(build.chunk_tokens, retriever.spec.max_tokens)
        tokens["question_tokens_mean"] = float(np.mean(retriever.count_tokens(questions))) if questions else None
        share = build.embed.embedded / len(table) if len(table) else 0.0
        tokens["tokens_per_second"] = (
            round(tokens["index_tokens"] * share / build.embed_seconds, 1)
            if build.embed.embedded and build.embed_seconds > 0
            else None
        )
    with phases(f"time searches {cand.id}"):
        search_latency = _search_latency(retriever, queries, min(len(questions), latency_samples), depth)
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
        f"recall_vs_exact@{depth}": recall,
        **tokens,
        **_cost_figures(price, tokens, build, query_stats, getattr(retriever, "query_billed", None), len(table)),
        **query_latency,
        **search_latency,
        "latency_samples": min(len(questions), latency_samples),
        "peak_rss_mb": round(measure.peak_rss_mb(), 1),
    }
    if price.estimate and figures["query_embed_ms_mean"] is not None:
        # 1,000 queries at the mean measured milliseconds each take that many seconds
        seconds = figures["query_embed_ms_mean"] + (figures["search_ms_mean"] or 0.0)
        figures["cost_per_1k_queries_usd"] = costs.compute_cost_usd(seconds, build.hourly_usd)
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


def _entries(units: np.ndarray, scores: np.ndarray, grades: np.ndarray, table: ChunkTable, doc_unit: bool):
    out = []
    for unit, score, grade in zip(units.tolist(), np.asarray(scores).tolist(), np.asarray(grades).tolist()):
        if doc_unit:
            doc_id = table.doc_ids[unit]
            r = table.chunks_of(unit)
            start, end = (int(table.start[r.start]), int(table.end[r.stop - 1])) if len(r) else (0, 0)
            out.append(
                {
                    "id": doc_id,
                    "doc_id": doc_id,
                    "start": start,
                    "end": end,
                    "score": _score(score),
                    "grade": int(grade),
                }
            )
        else:
            out.append(
                {
                    "id": table.ids[unit],
                    "doc_id": table.doc_ids[int(table.doc[unit])],
                    "start": int(table.start[unit]),
                    "end": int(table.end[unit]),
                    "score": _score(score),
                    "grade": int(grade),
                }
            )
    return out


def _score(score: float) -> float | None:
    return None if score != score else float(score)


def _query_embed_seconds(retriever: Retriever, questions: list[str]) -> list[float]:
    """Each question encoded alone, live (never from the vector cache), after a warm-up call."""
    if not questions:
        return []
    retriever.encode_live(questions[:1])
    seconds = []
    for text in questions:
        t0 = time.perf_counter()
        retriever.encode_live([text])
        seconds.append(time.perf_counter() - t0)
    return seconds


def _latency_key(spec, questions: list[str]) -> bytes:
    """What a latency measurement depends on: the model as configured, this machine, the
    libraries that run it and the questions timed."""
    identity = {
        "spec": repr(spec),
        "machine": measure.machine(),
        "versions": measure.versions(),
        "questions": questions,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).digest()


def _search_latency(retriever: Retriever, queries, n: int, depth: int) -> dict:
    """Each query vector searched alone against the built index, after a warm-up search."""
    if not n:
        return measure.latency_summary("search", [])
    import faiss

    # A service answers one query per request on one thread; FAISS's OpenMP start-up on every
    # single-vector search would otherwise dominate (milliseconds on a tiny index).
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        retriever.search(queries[:1], depth)
        seconds = []
        for i in range(n):
            t0 = time.perf_counter()
            retriever.search(queries[i : i + 1], depth)
            seconds.append(time.perf_counter() - t0)
    finally:
        faiss.omp_set_num_threads(threads)
    return measure.latency_summary("search", seconds)
