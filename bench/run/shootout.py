"""A shootout, start to end: inputs → chunking → for each candidate, build, ask, score → results
folder → reports. Orchestration only: each step's work lives in its stage."""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress

from bench import files, measure
from bench.chunking.sizes import chunk_sizes
from bench.chunking.table import ChunkTable
from bench.config import Candidate, Config
from bench.core.operating import Operating
from bench.core.pipeline import Pipeline
from bench.core.records import QuestionRecord, UnitLabel
from bench.core.summary import CandidateResult, Manifest, RunSummary
from bench.embedders import paths
from bench.embedders.cache import EmbeddingCache
from bench.embedders.no_cache import NoCache
from bench.engines import make_engine
from bench.errors import BenchError
from bench.evaluation import scale
from bench.evaluation.holes import holes
from bench.evaluation.judged import JUDGE_ONLY_ORDER
from bench.evaluation.relevance import Judgment, grade_units
from bench.evaluation.robustness import ROBUSTNESS
from bench.evaluation.scoring import rank_candidates, score_candidate
from bench.inputs.corpus import Corpus
from bench.inputs.corpus_stats import corpus_languages
from bench.inputs.goldset import Goldset, load_goldset
from bench.inputs.goldset_stats import question_languages
from bench.inputs.lock import LockStatus, lock_path
from bench.inputs.questions import questions_only
from bench.report.decision_text import recommendation
from bench.results import schema, store
from bench.results.schema import StoredRun, UnitText
from bench.retrieval.stores.base import StoreFault
from bench.retrieval.stores.hosts import StoreHosts
from bench.run import indexing_time, perturbed, retrieve
from bench.run.contexts import Situating
from bench.run.dry_run import run_lock
from bench.run.models import ModelPool, language_findings, unknown_token_findings
from bench.run.options import RunOptions
from bench.run.progress import (
    build_with_progress,
    chunk_all,
    print_warnings,
    progress_bar,
    read_corpus,
    record_build,
    warn,
    warn_truncation,
)
from bench.run.rewriting import Rewritten, rewrite_questions
from bench.run.stages import BuiltStages, Part, pipeline_description
from bench.version import __version__


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


@dataclass(frozen=True)
class _Inputs:
    """What the run has read and decided before it writes anything."""

    options: RunOptions
    config: Config
    console: Console
    started: datetime
    phases: measure.Phases
    corpus: Corpus
    goldset: Goldset
    lock: LockStatus
    candidates: list[Candidate]
    run_id: str
    models: ModelPool
    languages: dict


@dataclass
class _Shared:
    """What the candidates share while the run goes: the chunk tables and their judgments, the
    questions timed, and the first stages built so far with what was measured of them."""

    progress: Progress
    tables: dict[str, ChunkTable]
    judgments: dict[str, list[Judgment]]
    timed: list[str]  # the questions whose encoding and search are timed one at a time
    asked: dict[str, list[str]]  # each perturbation kind: every question as people type it
    rewrites: dict[str, Rewritten]  # each [query.NAME] the candidates use: every question as its model rewrote it
    built: BuiltStages
    situating: Situating  # the contexts a chat model wrote for situated chunkers, and what they cost
    warned: set[tuple[str, str]] = field(default_factory=set)  # (model, chunker) truncation was warned about
    corpus_seconds: dict[tuple[str, str, str], float | None] = field(default_factory=dict)  # embedding the corpus


@_terminate_as_interrupt()
def run_shootout(run: RunOptions | Config, console: Console | None = None, **changes: Any) -> StoredRun:
    """Index the corpus under every candidate, ask every question, write results/<run_id>/.

    ``run`` is the run's options, or a Config run with the options' defaults, either changed by
    ``changes`` (``RunOptions`` names them all: ``reports=False``, ``only=("minilm/*",)`` …).
    A goldset whose lock no longer matches (goldset or corpus changed) is refused unless
    ``allow_unlocked``; a goldset with no lock runs with a warning. The manifest says which.
    Files of the corpus left out (unknown formats, unreadable, no text) are warned about and listed in
    the manifest; ``strict`` makes any of them an error. Progress and warnings go to ``console``
    (standard error when none is given).
    """
    with StoreHosts() as hosts:
        inputs = _prepare(RunOptions.of(run, **changes), console or Console(stderr=True), hosts)
        failed: list[tuple[Candidate, StoreFault]] = []
        with (
            store.run_folder(inputs.config.results, inputs.run_id) as staging,
            progress_bar(inputs.console) as progress,
        ):
            shared = _chunk_and_judge(inputs, progress)
            results: list[CandidateResult] = []
            records: list[QuestionRecord] = []
            try:
                for position, cand in enumerate(inputs.candidates):
                    try:
                        result, scored = _one_candidate(inputs, shared, position, cand)
                    except StoreFault as fault:  # its server failed: the candidates on others still run
                        failed.append((cand, fault))
                        inputs.console.print(f"[red]error:[/] {cand.id}: {fault}")
                        shared.built.release_after(position)
                        continue
                    results.append(result)
                    records.extend(scored)
            finally:
                shared.built.close()
            if failed and not results:
                raise failed[0][1]
            stored = _finish(inputs, shared, staging, results, records, failed)
        done = _in_place(inputs, stored)
    if failed:
        raise _not_run(failed, done.path)
    return done


def _not_run(failed: list[tuple[Candidate, StoreFault]], path: Path) -> StoreFault:
    """The first store failure, with which candidates it cost and where the others' results are."""
    ids = ", ".join(c.id for c, _ in failed[:3]) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
    return StoreFault(
        f"{failed[0][1]}; not run: {ids}; the other candidates' results are in {path} "
        f"(once the store works, run the missing ones with --only)"
    )


def _prepare(options: RunOptions, console: Console, hosts: StoreHosts) -> _Inputs:
    """The config, corpus, goldset and lock read and checked, the candidates chosen, the models'
    pool opened and the languages found; the run's header and warnings printed."""
    config = options.load_config()
    if options.questions is not None and options.judge is None:
        raise BenchError("a run with --questions needs a relevance judge: give --judge-model and --llm-base-url")
    started = datetime.now(UTC)
    phases = measure.Phases()
    root = paths.cache_root(config.cache_dir, config.cache_override)
    with phases("load corpus"):
        corpus = read_corpus(
            config.corpus, paths.extracted_dir(root), console, options.strict, warn=False, limits=config.documents
        )
    with phases("load goldset"):
        questions = options.questions
        goldset = load_goldset(config.goldset, corpus) if questions is None else questions_only(questions)
    print_warnings(console, corpus)
    with phases("check lock"):
        if options.questions is None:
            lock = run_lock(goldset, corpus, options.allow_unlocked, console, "running unlocked")
        else:
            lock = LockStatus(False, lock_path(goldset.path), "no goldset: questions only, graded by a relevance judge")
    candidates = config.candidates(options.only, options.skip)
    run_id = store.new_run_id(config.results, config.hash, started)
    cache = EmbeddingCache(paths.embeddings_dir(root)) if options.use_cache else NoCache()
    models = ModelPool(
        config,
        cache,
        paths.models_dir(root),
        console,
        remeasure=options.remeasure,
        measured_at=started.isoformat(timespec="seconds"),
        engine=make_engine(options.engine, paths.models_dir(root), config.batch_size),
        hosts=hosts,
    )
    console.print(
        f"[bold]bench run[/] {run_id}: {len(corpus)} documents, {len(goldset.questions)} questions "
        f"({goldset.unit} unit), {len(candidates)} candidates, k={config.k}"
    )
    with phases("detect languages"):
        languages = language_findings(config, candidates, corpus_languages(corpus), question_languages(goldset))
    warn(console, languages["warnings"])
    return _Inputs(
        options, config, console, started, phases, corpus, goldset, lock, candidates, run_id, models, languages
    )


def _chunk_and_judge(inputs: _Inputs, progress: Progress) -> _Shared:
    """The corpus chunked by every chunker a candidate uses, each model's unknown word pieces counted
    over the first chunking, and every chunk judged against the goldset's evidence."""
    config, phases = inputs.config, inputs.phases
    needed = {c.chunker for c in inputs.candidates}
    situating = Situating(config, paths.cache_root(config.cache_dir, config.cache_override), progress, inputs.console)
    tables = chunk_all(config, inputs.corpus, progress, inputs.models, needed, phases, situating)
    with phases("count unknown tokens"):
        _unknown_tokens(inputs.languages, inputs.models, next(iter(tables.values())), inputs.console)
    with phases("judge relevance"):
        judgments = {name: grade_units(inputs.goldset, table, config.min_overlap) for name, table in tables.items()}
    timed = [q.text for q in inputs.goldset.questions[: config.latency_samples]]
    kinds = () if inputs.options.questions is not None else config.perturb  # perturbed forms need a goldset
    asked = perturbed.as_typed(inputs.goldset, kinds, config.perturb_seed)
    names = sorted({c.query for c in inputs.candidates if c.query})
    questions = [q.text for q in inputs.goldset.questions]
    with phases("rewrite questions"):  # within what the contexts left of the budget
        rewrites = rewrite_questions(config, names, questions, situating.root, inputs.console, situating.paid)
    return _Shared(
        progress, tables, judgments, timed, asked, rewrites, BuiltStages(config, inputs.candidates), situating
    )


def _one_candidate(
    inputs: _Inputs, shared: _Shared, position: int, cand: Candidate
) -> tuple[CandidateResult, list[QuestionRecord]]:
    """The candidate's pipeline assembled over its built first stages, every question asked, the
    rankings scored; the stages no later candidate needs are released."""
    config, phases, models = inputs.config, inputs.phases, inputs.models
    table = shared.tables[cand.chunker]
    parts = [_built_part(inputs, shared, part, table) for part in config.parts(cand)]
    rewritten = shared.rewrites[cand.query] if cand.query else None
    retriever = models.pipeline(cand, [p.retriever for p in parts], table, rewritten)
    reranker = config.reranker(cand.reranker) if cand.reranker else None
    with phases(f"time queries {cand.model}"):
        latency = models.query_latency(cand, retriever, shared.timed)
    asked = retrieve.CandidateRun(
        cand,
        retriever,
        parts,
        table,
        shared.judgments[cand.chunker],
        latency,
        config.rerank_latency_samples if cand.reranker else config.latency_samples,
        reranker,
        config.price(reranker.model) if reranker and reranker.model else None,
        [shared.corpus_seconds[part.key] for part in config.parts(cand)],
        rewritten,
    )
    depth = config.retrieval_depth
    context = retrieve.RunContext(inputs.goldset, depth, phases, models.timing)
    retrieved, measured = retrieve.run_candidate(asked, context)
    retrieved = rewritten.searched(retrieved) if rewritten else retrieved
    measured = shared.situating.priced(cand.chunker, measured)  # a situated chunker's contexts join its index cost
    # a rewritten question's perturbed forms would need rewrites of their own: those candidates are not perturbed
    typed = retrieve.run_perturbed(asked, context, shared.asked) if shared.asked and not cand.query else {}
    ops = Operating.from_dict({**measured, **models.corpus_speed_kept(cand)})
    ops = ops.merged(scale.at_scale(ops, cand.search or "", len(inputs.corpus), config.scale))
    shared.built.release_after(position)
    with phases(f"score {cand.id}"):
        scored, scores = score_candidate(
            retrieved,
            k=config.k,
            depth=depth,
            gain=config.ndcg_gain,
            unit=inputs.goldset.unit,
            min_overlap=config.min_overlap,
        )
        if typed:  # the same questions as people type them: what the candidate loses
            scored, robust = perturbed.scored(
                scored, typed, k=config.k, depth=depth, gain=config.ndcg_gain, unit=inputs.goldset.unit,
                min_overlap=config.min_overlap,
            )  # fmt: skip
    result = CandidateResult(
        id=cand.id,
        model=cand.model,
        chunker=cand.chunker,
        index=cand.index,
        search=cand.search or "",  # summary.json's "" for an index with one query setting
        lexical=retriever.lexical,
        pipeline=Pipeline.from_dict(pipeline_description(config, cand)),
        quality=scores.quality,
        curve=scores.curve,
        diagnostics=scores.diagnostics,
        ops=ops,
        extra={ROBUSTNESS: robust} if typed else {},
    )
    return result, scored


def _built_part(inputs: _Inputs, shared: _Shared, part: Candidate, table: ChunkTable) -> Part:
    """A single-model first stage, built the first time a candidate needs it (its truncation warned
    about once per model and chunker), set to the part's query setting."""
    config, phases, models = inputs.config, inputs.phases, inputs.models
    if part.key not in shared.built:
        retriever = models.retriever(part)
        t0 = time.perf_counter()
        stats = build_with_progress(shared.progress, retriever, table, "/".join(part.key))
        record_build(phases, "/".join(part.key), stats, time.perf_counter() - t0)
        if (part.model, part.chunker) not in shared.warned:
            warn_truncation(inputs.console, part, config.model(part.model).max_tokens, stats)
            shared.warned.add((part.model, part.chunker))
        shared.built.add(part.key, retriever, stats)
        shared.corpus_seconds[part.key] = indexing_time.corpus_embed_seconds(
            models, config.model(part.model), stats, table, phases
        )
    retriever, stats = shared.built[part.key]
    retriever.set_search(config.search_params(part))  # one build serves every query setting
    return Part(part, retriever, stats, config.price(part.model))


def _finish(
    inputs: _Inputs,
    shared: _Shared,
    staging: Path,
    results: list[CandidateResult],
    records: list[QuestionRecord],
    failed: list[tuple[Candidate, StoreFault]],
) -> StoredRun:
    """The candidates ranked, the recommendation made, and the run written to ``staging``."""
    config, goldset, phases = inputs.config, inputs.goldset, inputs.phases
    with phases("measure chunk sizes"):
        sizes = {name: chunk_sizes(table) for name, table in shared.tables.items()}
    texts = _unit_texts(records, inputs.corpus)
    summary = RunSummary(
        k=config.k,
        depth=config.retrieval_depth,
        unit=goldset.unit,
        ndcg_gain=config.ndcg_gain,
        min_overlap=config.min_overlap,
        candidates=rank_candidates(results, config.k),
        chunkers=sizes,
    )
    labels: list[UnitLabel] = []
    if inputs.options.questions is not None:
        summary, records, labels = _judged_only(inputs, summary, records, texts)
    ranked = summary.candidates
    first = JUDGE_ONLY_ORDER[0] if inputs.options.questions is not None else "mrr"  # what ranks candidates
    chosen = recommendation(
        ranked, records, config.k, config.recommend_margin, config.prefer, config.scale, config.equivalence_margin,
        metric_name=first,
    )  # fmt: skip
    summary = dataclasses.replace(summary, recommendation=chosen, holes=holes(records, config.k))
    with phases("write results"):
        manifest = _manifest(inputs, failed, shared)
        run = _finished(StoredRun(staging, summary, manifest, records, texts, labels), phases)
        schema.save_run(staging, run)
        if shared.asked:
            files.write_jsonl(staging / store.PERTURBED_QUESTIONS, perturbed.listed(goldset, shared.asked))
    return run


def _judged_only(
    inputs: _Inputs, summary: RunSummary, records: list[QuestionRecord], texts: list[UnitText]
) -> tuple[RunSummary, list[QuestionRecord], list[UnitLabel]]:
    """A run with questions only: the relevance judge grades every candidate's top k, and its grades
    become the run's relevance (bench.judging.judge_run)."""
    from bench.judging.judge_run import Judging, judge_only

    options, config = inputs.options, inputs.config
    assert options.judge is not None  # _prepare refuses questions without a judge
    judging = Judging(options.judge, paths.cache_root(config.cache_dir, config.cache_override), console=inputs.console)
    by_extent = {(t.doc_id, t.start, t.end): t.text for t in texts}
    with inputs.phases("judge relevance with a chat model"):
        ranked, regraded, labels, section = judge_only(summary.candidates, records, by_extent, summary, judging)
    return dataclasses.replace(summary, candidates=ranked, judge=section), regraded, labels


def _manifest(inputs: _Inputs, failed: list[tuple[Candidate, StoreFault]], shared: _Shared) -> Manifest:
    """What the run was given and where it ran: config, corpus, goldset, lock, versions, machine,
    the vector stores, the candidates a store's failure left out and what chat models were asked."""
    config, corpus, goldset = inputs.config, inputs.corpus, inputs.goldset
    extra = {"not_run": [{"candidate": c.id, "error": str(e)} for c, e in failed]} if failed else {}
    rewrites = {name: r.describe() for name, r in shared.rewrites.items()}
    steps = {"contexts": shared.situating.spent, "rewrites": rewrites}
    llm = {step: spent for step, spent in steps.items() if spent}  # what each step that asks a chat model spent
    return Manifest(
        run_id=inputs.run_id,
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
            "path": str(inputs.options.questions or config.goldset),
            **({"questions_only": True} if inputs.options.questions is not None else {}),
            "sha256": goldset.fingerprint,
            "questions": len(goldset.questions),
            "unit": goldset.unit,
        },
        locked=inputs.lock.locked,
        lock=inputs.lock.as_manifest(),
        versions=measure.versions(),
        machine=measure.machine(),
        started=inputs.started.isoformat(timespec="seconds"),
        prices={name: vars(config.price(name)) for name in config.model_specs},
        percentile_method=measure.PERCENTILE_METHOD,
        engine=inputs.options.engine,
        languages=inputs.languages,
        timing=inputs.models.timing.manifest(),
        stores=dict(inputs.models.hosts.servers) or None,
        extra={**extra, **({"llm": llm} if llm else {})},
    )


def _in_place(inputs: _Inputs, run: StoredRun) -> StoredRun:
    """The run at its final folder, its reports written when the options ask for them (their time
    joins the phases)."""
    path, phases, console = inputs.config.results / inputs.run_id, inputs.phases, inputs.console
    run = dataclasses.replace(run, path=path, manifest=_with_phases(run.manifest, phases))
    if not inputs.options.reports:
        return run
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


def _unknown_tokens(languages: dict, models: ModelPool, table: ChunkTable, console: Console) -> None:
    """Each model's share of unknown word pieces over a sample of ``table``, into ``languages``."""
    found, warnings = unknown_token_findings(models, list(languages["models"]), table)
    for name, figures in found.items():
        languages["models"][name]["unknown_tokens"] = figures
    languages["warnings"].extend(warnings)
    warn(console, warnings)
