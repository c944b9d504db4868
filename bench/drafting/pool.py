"""Pooling (as TREC builds its judgment pools): every retriever answers each real question, and the
union of their top passages is what a reviewer judges. A passage no retriever ranks high is never
shown, so ``pool_recall`` measures how much known evidence a pool of a given depth misses."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

import numpy as np
from rich.console import Console
from rich.markup import escape

from bench import measure
from bench.chunking import CHUNKER_KINDS
from bench.chunking.table import ChunkTable
from bench.config import Candidate, ChunkerSpec, Config, load_config
from bench.drafting.draft import Draft, DraftQuestion, Found, Passage, save_draft
from bench.embedders import MODELS, paths
from bench.embedders.cache import EmbeddingCache
from bench.errors import BenchError
from bench.evaluation.relevance import overlap_relevant
from bench.inputs.corpus import Corpus
from bench.inputs.corpus_stats import corpus_languages
from bench.inputs.goldset import Goldset
from bench.inputs.questions import read_questions
from bench.registry import suggest
from bench.retrieval.faiss_index import INDEXES
from bench.run.models import ModelPool
from bench.run.progress import build_with_progress, chunk_all, progress_bar, read_corpus
from bench.version import __version__

# Without a config: the lexical baseline and the bundled transformer, over paragraph-sized chunks.
DEFAULT_MODELS = ("bm25", "minilm")
MULTILINGUAL_DEFAULT = "e5-small"  # in place of minilm where the corpus is not English
DEFAULT_CHUNKER = ChunkerSpec("rec256", "recursive", (("size", 256),))
# Pools search exhaustively whatever indexes the config compares: a pool judges the corpus, not an index.
_POOL_INDEX = "flat"


def pool_draft(  # noqa: PLR0913 - the pool command's options, passed through one to one
    corpus_path: Path,
    questions_file: Path,
    out: Path,
    config: Config | Path | None,
    depth: int = 10,
    chunker: str | None = None,
    console: Console | None = None,
    force: bool = False,
    cache_dir: Path | None = None,
) -> Draft:
    """Pool the top ``depth`` passages of every retriever for each question into a draft at ``out``.

    ``config`` (a Config or the path of a bench.toml) names the models and chunkers; without one,
    BM25 and minilm over 256-token recursive chunks. Models served by an API are left out (each
    pooling would be billed again). ``cache_dir`` overrides the cache folder, as ``--cache-dir``
    does. An existing draft is kept unless ``force``: it may hold hours of review.
    """
    console = console or Console(stderr=True)
    out = Path(out)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise BenchError(f"depth {depth!r}: give a positive number of passages per retriever, e.g. 10")
    if out.exists() and not force:
        raise BenchError(
            f"{out}: a draft is already there (its review would be lost); pass --force or choose another --out"
        )
    questions = read_questions(questions_file)
    if isinstance(config, (str, Path)):
        config = load_config(config)
    settings = _settings(config, Path(corpus_path))
    if cache_dir is not None:
        settings = dataclasses.replace(settings, cache_override=Path(cache_dir))
    spec = _chunker(settings, chunker, str(settings.path) if config is not None else "the defaults (no config)")
    root = paths.cache_root(settings.cache_dir, settings.cache_override)
    corpus = read_corpus(Path(corpus_path), paths.extracted_dir(root), console)
    if config is None:
        settings = _default_models_for(settings, corpus)
    settings = _with_retrievers(settings, console)
    models = ModelPool(settings, EmbeddingCache(paths.embeddings_dir(root)), paths.models_dir(root), console)
    console.print(
        f"[bold]bench goldset draft[/] pooling {len(questions)} questions over {len(corpus)} documents: "
        f"top {depth} of {', '.join(settings.models)} on {spec.name}"
    )
    texts = [text for _, text, _ in questions]
    rankings: list[list[tuple[np.ndarray, np.ndarray]]] = []
    with progress_bar(console) as progress:
        table = chunk_all(settings, corpus, progress, models, {spec.name}, measure.Phases())[spec.name]
        for name in settings.models:
            retriever = models.retriever(Candidate(name, spec.name, _POOL_INDEX))
            build_with_progress(progress, retriever, table, f"{name}/{spec.name}")
            rankings.append(retriever.search(retriever.encode(texts), depth))
    draft = Draft(
        out,
        [
            DraftQuestion(id=qid, question=text, tags=tags, passages=_pool(table, settings.models, rankings, i))
            for i, (qid, text, tags) in enumerate(questions)
        ],
        {
            "method": "pool",
            "corpus": {"path": str(corpus_path), "sha256": corpus.fingerprint},
            "questions_file": str(questions_file),
            "depth": depth,
            "chunker": {"name": spec.name, "kind": spec.kind, **dict(spec.params), **_model_of(spec)},
            "retrievers": list(settings.models),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "bench_version": __version__,
        },
    )
    save_draft(draft)
    return draft


def _settings(config: Config | None, corpus_path: Path) -> Config:
    """The config to pool with; without one, the defaults as a config (so the run's model pool serves)."""
    if config is not None:
        return config
    return Config(
        path=Path("bench.toml"),
        corpus=corpus_path,
        goldset=Path(),
        results=Path(),
        cache_dir=None,
        models=DEFAULT_MODELS,
        chunkers=(DEFAULT_CHUNKER,),
        model_specs={name: MODELS.get(name) for name in DEFAULT_MODELS},
    )


def _default_models_for(settings: Config, corpus: Corpus) -> Config:
    """The defaults pool with MiniLM, which reads English only: for a corpus in another language,
    e5-small (multilingual) takes its place."""
    language = corpus_languages(corpus).main
    if language in ("en", "und"):
        return settings
    models = tuple(MULTILINGUAL_DEFAULT if m == "minilm" else m for m in settings.models)
    return dataclasses.replace(settings, models=models, model_specs={m: MODELS.get(m) for m in models})


def _chunker(config: Config, name: str | None, where: str) -> ChunkerSpec:
    """The chunker named, else the config's first markdown or recursive one (passages a reader can
    judge), else its first."""
    if name is not None:
        names = [c.name for c in config.chunkers]
        if name not in names:
            raise BenchError(
                f"chunker {name!r} is not in {where}; {suggest(name, names)}its chunkers: {', '.join(names)}"
            )
        return config.chunker(name)
    readable = [c for c in config.chunkers if c.kind in CHUNKER_KINDS and CHUNKER_KINDS.canonical(c.kind) in _READABLE]
    return (readable or list(config.chunkers))[0]


_READABLE = ("markdown", "recursive")


def _with_retrievers(config: Config, console: Console) -> Config:
    """BM25 (added first where the config has no lexical model) and each local model of the config,
    in the config's order, all over an exhaustive index."""
    specs = dict(config.model_specs)
    names = []
    if not any(config.model(m).lexical for m in config.models):
        names.append("bm25")
        specs["bm25"] = MODELS.get("bm25")
    for name in config.models:
        if config.model(name).remote:
            console.print(f"note: {escape(name)} is served by an API; pooling leaves it out and uses the local models")
        else:
            names.append(name)
    return dataclasses.replace(
        config,
        models=tuple(names),
        model_specs=specs,
        index_specs={**config.index_specs, _POOL_INDEX: INDEXES.get("flat")},
    )


def _model_of(spec: ChunkerSpec) -> dict[str, str]:
    return {"model": spec.model} if spec.model else {}


def _pool(
    table: ChunkTable, names: tuple[str, ...], rankings: list[list[tuple[np.ndarray, np.ndarray]]], q: int
) -> tuple[Passage, ...]:
    """Question ``q``'s pool: each unit once with every retriever that found it (in retriever order),
    best rank first, then found by more, then document id and offsets."""
    found: dict[int, list[Found]] = {}
    for name, ranking in zip(names, rankings):
        units, scores = ranking[q]
        for rank, (unit, score) in enumerate(zip(units.tolist(), scores.tolist()), start=1):
            found.setdefault(unit, []).append(Found(name, rank, _score(score)))

    def order(unit: int) -> tuple:
        by = found[unit]
        return min(f.rank for f in by), -len(by), _doc(table, unit), int(table.start[unit]), int(table.end[unit])

    pooled = sorted(found, key=order)
    return tuple(Passage(_doc(table, u), int(table.start[u]), int(table.end[u]), tuple(found[u])) for u in pooled)


def _doc(table: ChunkTable, unit: int) -> str:
    return table.doc_ids[int(table.doc[unit])]


def _score(score: float) -> float | None:
    return round(float(score), 4) if math.isfinite(score) else None


class MissedSpan(TypedDict):
    id: str
    doc: str
    start: int | None
    end: int | None
    grade: int


class RetrieverRecall(TypedDict):
    held: int
    recall: float | None


class PoolRecall(TypedDict):
    """How much of a goldset's evidence a draft's pools hold (``pool_recall``)."""

    depth: int | None
    min_overlap: float
    questions: int
    not_in_draft: list[str]
    evidence: int
    held: int
    recall: float | None
    retrievers: dict[str, RetrieverRecall]
    missed: list[MissedSpan]


def pool_recall(draft: Draft, goldset: Goldset, min_overlap: float = 0.5, depth: int | None = None) -> PoolRecall:
    """How much of a goldset's evidence the draft's pools hold, for the goldset questions the draft
    has (by id): overall and per retriever, with every span missed.

    A span is held when a pooled passage of its document overlaps it by ``min_overlap`` of the
    shorter of the two (the rule relevance judges chunks by); whole-document evidence, when any
    passage of the document is pooled. ``depth`` counts only passages ranked that high (a deeper
    draft measures every shallower pool).
    """
    draft_ids = {q.id for q in draft.questions}
    seen = (f.retriever for q in draft.questions for p in q.passages for f in p.found_by)
    listed = draft.meta.get("retrievers")
    names = [str(n) for n in listed] if isinstance(listed, list) and listed else list(dict.fromkeys(seen))
    total, held = 0, 0
    by_retriever = dict.fromkeys(names, 0)
    missed: list[MissedSpan] = []
    for gq in goldset.questions:
        if gq.id not in draft_ids:
            continue
        passages = [p for p in draft.question(gq.id).passages if _within(p, depth)]
        for e in gq.evidence:
            total += 1
            hits = [p for p in passages if p.doc == e.doc and _holds(p, e.start, e.end, min_overlap)]
            if hits:
                held += 1
            else:
                missed.append(MissedSpan(id=gq.id, doc=e.doc, start=e.start, end=e.end, grade=e.grade))
            for name in {f.retriever for p in hits for f in p.found_by if depth is None or f.rank <= depth}:
                by_retriever[name] = by_retriever.get(name, 0) + 1
    pooled_depth = draft.meta.get("depth")
    return PoolRecall(
        depth=depth if depth is not None else pooled_depth if isinstance(pooled_depth, int) else None,
        min_overlap=min_overlap,
        questions=sum(q.id in draft_ids for q in goldset.questions),
        not_in_draft=[q.id for q in goldset.questions if q.id not in draft_ids],
        evidence=total,
        held=held,
        recall=held / total if total else None,
        retrievers={
            name: RetrieverRecall(held=n, recall=n / total if total else None) for name, n in by_retriever.items()
        },
        missed=missed,
    )


def _within(passage: Passage, depth: int | None) -> bool:
    return depth is None or any(f.rank <= depth for f in passage.found_by)


def _holds(passage: Passage, start: int | None, end: int | None, min_overlap: float) -> bool:
    if start is None or end is None:  # whole-document evidence
        return True
    return bool(overlap_relevant(passage.start, passage.end, start, end, min_overlap))
