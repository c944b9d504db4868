"""A shootout, start to end: inputs → chunking → for each candidate, build, ask, score → results
folder → reports. Orchestration only: each step's work lives in its stage."""

from __future__ import annotations

import dataclasses
import functools
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from bench import __version__, measure
from bench.chunking.sizes import chunk_sizes
from bench.chunking.table import ChunkTable
from bench.config import Candidate, Config
from bench.core.operating import Operating
from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult, Manifest, RunSummary
from bench.embedders import paths
from bench.embedders.cache import EmbeddingCache, NoCache
from bench.engines import make_engine
from bench.evaluation import scale
from bench.evaluation.relevance import judge
from bench.evaluation.scoring import rank_candidates, score_candidate
from bench.inputs.corpus import Corpus
from bench.inputs.corpus_stats import corpus_languages
from bench.inputs.goldset import load_goldset
from bench.inputs.goldset_stats import question_languages
from bench.report.corpus_view import print_warnings, read_corpus
from bench.report.decision_text import recommendation
from bench.results import schema, store
from bench.results.schema import StoredRun, UnitText
from bench.retrieval.retrievers import BuildStats, Retriever
from bench.run import indexing_time, retrieve
from bench.run.dry_run import run_lock
from bench.run.models import ModelPool, language_findings, unknown_token_findings
from bench.run.stages import BuiltStages, Part, pipeline_description


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
    strict: bool = False,
    only: tuple[str, ...] = (),
    skip: tuple[str, ...] = (),
    remeasure: bool = False,
    reports: bool = True,
    engine: str = "local",
) -> StoredRun:
    """Index the corpus under every candidate, ask every question, write results/<run_id>/.

    A goldset whose lock no longer matches (goldset or corpus changed) is refused unless
    ``allow_unlocked``; a goldset with no lock runs with a warning. The manifest says which.
    Files of the corpus left out (unknown formats, unreadable, no text) are warned about and listed in
    the manifest; ``strict`` makes any of them an error.
    ``remeasure`` times query encoding again even where this machine's timings are cached.
    ``reports`` writes plots, report.pdf and inspector.html once the results are safely in place.
    ``engine`` says where corpus embedding runs (see ``bench.engines``). Progress and warnings go
    to ``console`` (standard error when none is given).
    """
    console = console or Console(stderr=True)
    started = datetime.now(UTC)
    phases = measure.Phases()
    root = paths.cache_root(config.cache_dir, config.cache_override)
    with phases("load corpus"):
        corpus = read_corpus(
            config.corpus, paths.extracted_dir(root), console, strict, warn=False, limits=config.documents
        )
    with phases("load goldset"):
        goldset = load_goldset(config.goldset, corpus)
    print_warnings(console, corpus)
    with phases("check lock"):
        lock = run_lock(goldset, corpus, allow_unlocked, console, "running unlocked")
    candidates = config.candidates(only, skip)
    run_id = store.new_run_id(config.results, config.hash, started)
    depth = config.retrieval_depth
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
    with phases("detect languages"):
        languages = language_findings(config, candidates, corpus_languages(corpus), question_languages(goldset))
    _warn(console, languages["warnings"])

    with store.run_folder(config.results, run_id) as staging, progress_bar(console) as progress:
        needed = {c.chunker for c in candidates}
        tables = chunk_all(config, corpus, progress, models, needed, phases)
        with phases("count unknown tokens"):
            _unknown_tokens(languages, models, next(iter(tables.values())), console)
        with phases("judge relevance"):
            judgments = {name: judge(goldset, table, config.min_overlap) for name, table in tables.items()}
        results: list[CandidateResult] = []
        records: list[QuestionRecord] = []
        timed = [q.text for q in goldset.questions[: config.latency_samples]]  # latency samples
        built = BuiltStages(config, candidates)
        warned: set[tuple[str, str]] = set()  # (model, chunker) truncation was warned about
        corpus_seconds: dict[tuple[str, str, str], float | None] = {}  # per build: embedding the whole corpus
        for position, cand in enumerate(candidates):
            table = tables[cand.chunker]
            parts = []
            for part in config.parts(cand):
                if part.key not in built:
                    retriever = models.retriever(part)
                    t0 = time.perf_counter()
                    stats = build_with_progress(progress, retriever, table, "/".join(part.key))
                    _record_build(phases, "/".join(part.key), stats, time.perf_counter() - t0)
                    if (part.model, part.chunker) not in warned:
                        _warn_truncation(console, part, config.model(part.model).max_tokens, stats)
                        warned.add((part.model, part.chunker))
                    built.add(part.key, retriever, stats)
                    corpus_seconds[part.key] = indexing_time.corpus_embed_seconds(
                        models, config.model(part.model), stats, table, phases
                    )
                retriever, stats = built[part.key]
                retriever.set_search(config.search_params(part))  # one build serves every query setting
                parts.append(Part(part, retriever, stats, config.price(part.model)))
            retriever = models.pipeline(cand, [p.retriever for p in parts], table)
            reranker = config.reranker(cand.reranker) if cand.reranker else None
            with phases(f"time queries {cand.model}"):
                latency = models.query_latency(cand, retriever, timed)
            retrieved, measured = retrieve.run_candidate(
                cand,
                retriever,
                parts,
                table,
                goldset,
                judgments[cand.chunker],
                depth,
                latency,
                config.rerank_latency_samples if cand.reranker else config.latency_samples,
                phases,
                reranker,
                config.price(reranker.model) if reranker and reranker.model else None,
                [corpus_seconds[part.key] for part in config.parts(cand)],
            )
            ops = Operating.from_dict(measured)
            ops = ops.merged(scale.at_scale(ops, cand.search, len(corpus), config.scale))
            built.release_after(position)
            with phases(f"score {cand.id}"):
                scored, scores = score_candidate(
                    retrieved,
                    k=config.k,
                    depth=depth,
                    gain=config.ndcg_gain,
                    unit=goldset.unit,
                    min_overlap=config.min_overlap,
                )
            results.append(
                CandidateResult(
                    id=cand.id,
                    model=cand.model,
                    chunker=cand.chunker,
                    index=cand.index,
                    search=cand.search,
                    lexical=retriever.lexical,
                    pipeline=pipeline_description(config, cand),
                    quality=scores.quality,
                    curve=scores.curve,
                    diagnostics=scores.diagnostics,
                    ops=ops,
                )
            )
            records.extend(scored)
        ranked = rank_candidates(results, config.k)
        with phases("measure chunk sizes"):
            sizes = {name: chunk_sizes(table) for name, table in tables.items()}
        summary = RunSummary(
            k=config.k,
            depth=depth,
            unit=goldset.unit,
            ndcg_gain=config.ndcg_gain,
            min_overlap=config.min_overlap,
            candidates=ranked,
            recommendation=recommendation(
                ranked, records, config.k, config.recommend_margin, config.prefer, config.scale
            ),
            chunkers=sizes,
        )
        manifest = Manifest(
            run_id=run_id,
            bench_version=__version__,
            config=config.resolved(),
            config_hash=config.hash,
            config_path=str(config.path),
            corpus={
                "path": str(config.corpus),
                "sha256": corpus.fingerprint,
                "documents": len(corpus),
                **corpus.left_out_manifest(),
            },
            goldset={
                "path": str(config.goldset),
                "sha256": goldset.fingerprint,
                "questions": len(goldset.questions),
                "unit": goldset.unit,
            },
            locked=lock.locked,
            lock=lock.as_manifest(),
            versions=measure.versions(),
            machine=measure.machine(),
            started=started.isoformat(timespec="seconds"),
            prices={name: vars(config.price(name)) for name in config.model_specs},
            percentile_method=measure.PERCENTILE_METHOD,
            engine=engine,
            languages=languages,
        )
        with phases("write results"):
            run = _finished(StoredRun(staging, summary, manifest, records, _unit_texts(records, corpus)), phases)
            schema.save_run(staging, run)
    path = config.results / run_id
    run = dataclasses.replace(run, path=path, manifest=_with_phases(run.manifest, phases))
    if reports:
        try:
            from bench.report.writer import write_reports

            with console.status("writing rank_matrix.csv, plots, report.pdf and inspector.html"):
                t0 = time.perf_counter()
                write_reports(path, run)
                phases.add("reports", time.perf_counter() - t0)
                run = dataclasses.replace(run, manifest=_with_phases(run.manifest, phases))
                schema.save_manifest(path, run.manifest)  # the reports' time joins the phases
        except KeyboardInterrupt:  # the results are whole already; only the reports are missing
            console.print(
                f"interrupted while writing reports; the results in {path} are complete: "
                f"`bench report {path}` writes the reports"
            )
            raise
    return run


def _finished(run: StoredRun, phases: measure.Phases) -> StoredRun:
    """The run with its manifest's end time, peak memory and phases as of now."""
    manifest = dataclasses.replace(
        _with_phases(run.manifest, phases),
        finished=datetime.now(UTC).isoformat(timespec="seconds"),
        peak_rss_mb=round(measure.peak_rss_mb(), 1),
    )
    return dataclasses.replace(run, manifest=manifest)


def _with_phases(manifest: Manifest, phases: measure.Phases) -> Manifest:
    return dataclasses.replace(manifest, phases=list(phases.rows))


def _unit_texts(records: list[QuestionRecord], corpus: Corpus) -> list[UnitText]:
    """The text of every distinct unit the records name, so reports show it without the corpus."""
    spans = {(e.doc_id, e.start, e.end) for r in records for e in (*r.ranking, *r.expected)}
    texts = []
    for doc_id, start, end in sorted(spans):
        doc = corpus.get(doc_id)
        pages = doc.page_range(start, end)
        where = {"pages": list(pages), "page_label": doc.page_label} if pages else {}
        texts.append(UnitText(doc_id=doc_id, start=start, end=end, text=doc.text[start:end], extra=where))
    return texts


def progress_bar(console: Console) -> Progress:
    """The bars of a run: chunking, then embedding or indexing each table."""
    return Progress(
        TextColumn("{task.description:<34}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def chunk_all(
    config: Config, corpus: Corpus, progress: Progress, models: ModelPool, needed: set[str], phases: measure.Phases
) -> dict[str, ChunkTable]:
    """The corpus chunked by each chunker of ``needed``, a bar each."""
    tables = {}
    for spec in config.chunkers:
        if spec.name not in needed:
            continue
        task = progress.add_task(f"chunking {spec.name}", total=len(corpus))
        chunker = spec.build(embed=models.passage_embedding(spec.model) if spec.model else None)
        with phases(f"chunk {spec.name}"):
            tables[spec.name] = ChunkTable.chunk_corpus(corpus, chunker, lambda n, t=task: progress.advance(t, n))
    return tables


def build_with_progress(progress: Progress, retriever: Retriever, table: ChunkTable, label: str) -> BuildStats:
    """Embed (or index) ``table`` for ``retriever``, with a bar named ``label``."""
    verb = "indexing" if retriever.lexical else "embedding"
    task = progress.add_task(f"{verb} {label}", total=len(table))
    return retriever.build(table, functools.partial(progress.advance, task))


def _record_build(phases: measure.Phases, name: str, build: BuildStats, seconds: float) -> None:
    """A build as its parts: embedding (dense models), the index, and the rest (token counts)."""
    table = name.rsplit("/", 1)[0]
    if build.dims is not None:
        phases.add(f"embed {table}", build.embed_seconds, build.rss_mb.get("embed"))
    phases.add(f"index {name}", build.index_build_seconds, build.rss_mb.get("index"))
    rest = seconds - build.embed_seconds - build.index_build_seconds
    if build.dims is not None:
        phases.add(f"count tokens {table}", rest, build.rss_mb.get("count tokens"))


def _warn(console: Console, lines: list[str]) -> None:
    for line in lines:
        console.print(f"[yellow]warning:[/] {escape(line)}", soft_wrap=True)


def _unknown_tokens(languages: dict, models: ModelPool, table: ChunkTable, console: Console) -> None:
    """Each model's share of unknown word pieces over a sample of ``table``, into ``languages``."""
    found, warnings = unknown_token_findings(models, list(languages["models"]), table)
    for name, figures in found.items():
        languages["models"][name]["unknown_tokens"] = figures
    languages["warnings"].extend(warnings)
    _warn(console, warnings)


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
