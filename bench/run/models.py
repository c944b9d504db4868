"""The models of a run: each loaded once, the retrievers over the shared cache (single models, and
pipelines made of them), and query latency."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Console

from bench import measure
from bench.chunking.table import ChunkTable
from bench.config import Candidate, Config
from bench.core.operating import Figures
from bench.core.sections import JsonObject
from bench.embedders import MODELS, PASSAGE, Embedder, ModelSpec, load_embedder, preparation_note
from bench.embedders.cache import EmbeddingCache
from bench.embedders.engine import Engine, LocalEngine
from bench.errors import BenchError
from bench.retrieval.pipelines import FusedRetriever, RerankedRetriever
from bench.retrieval.rerankers import Reranker, load_reranker
from bench.retrieval.retrievers import BM25Retriever, DenseRetriever, Retriever
from bench.retrieval.rewrites import RewrittenRetriever
from bench.retrieval.stores.hosts import StoreHosts
from bench.run.rewriting import Rewritten
from bench.text.languages import UNDETERMINED, LanguageMix, describe, language_name, spread


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
        hosts: StoreHosts | None = None,
    ) -> None:
        self.config, self.cache, self.models_dir, self.console = config, cache, models_dir, console
        self.hosts = hosts or StoreHosts()  # the servers and folders of vector stores other than FAISS
        self.remeasure, self.measured_at = remeasure, measured_at
        self.engine = engine or LocalEngine()
        self._embedders: dict[str, Embedder] = {}
        self._latency: dict[str, Figures] = {}
        self._seconds: dict[str, QueryTiming] = {}
        self.timing = measure.TimingLog()  # how contended the machine was for each timing taken
        self.passage_speed: dict[str, float] = {}  # model -> CPU seconds per token, for this run
        self.passage_speed_kept: dict[str, str] = {}  # model -> when the speed read from the cache was timed
        self._rerankers: dict[str, Reranker] = {}

    def embedder(self, name: str) -> Embedder:
        if name not in self._embedders:
            spec = self.config.model(name)
            note = preparation_note(spec, self.models_dir)
            if note:
                self.console.print(note)
            self._embedders[name] = load_embedder(
                self.config.model(name), batch_size=self.config.batch_size, models_dir=self.models_dir
            )
        return self._embedders[name]

    def query_latency(self, cand: Candidate, retriever: Retriever, questions: list[str]) -> Figures:
        """Query-encoding latency depends on the model and the machine, not on chunks, index or
        reranker. A fusion encodes each question with every part in turn: its time per question is
        the sum of its parts' times for that question, each measured (or kept) once per model."""
        name = cand.model
        if cand.query:  # the rewritten texts, encoded as the questions' own are: timed for this candidate
            return self._rewritten_latency(cand, retriever, questions)
        if name not in self._latency:
            first = retriever.first if isinstance(retriever, RerankedRetriever) else retriever
            parts = first.parts if isinstance(first, FusedRetriever) else [first]
            timed = [self._query_seconds(p.model, r, questions) for p, r in zip(self.config.parts(cand), parts)]
            self._latency[name] = _encoding_figures(timed)
        return self._latency[name]

    def _rewritten_latency(self, cand: Candidate, retriever: Retriever, questions: list[str]) -> Figures:
        """Encoding what a rewritten question is searched as (a passage, several queries), never kept:
        the texts are the chat model's."""
        timings = _query_embed_seconds(retriever, questions)
        self.timing.add(f"query encoding {cand.id}", timings)
        timed = QueryTiming(timings.wall, timings.cpu, self.measured_at, False, timings.contention, timings.busy)
        return _encoding_figures([timed])

    def corpus_speed_kept(self, cand: Candidate) -> Figures:
        """Whether the corpus embedding speed of ``cand``'s models was read from an earlier run's timing
        (``--remeasure`` times it again), and when the earliest of them was timed."""
        kept = [self.passage_speed_kept[p.model] for p in self.config.parts(cand) if p.model in self.passage_speed_kept]
        return {"corpus_speed_from_cache": bool(kept), "corpus_speed_measured": min(kept) if kept else None}

    def _query_seconds(self, name: str, retriever: Retriever, questions: list[str]) -> QueryTiming:
        """One model's encoding time per question, measured once per run.

        A model running in this process keeps its timings in the cache under this machine, the
        library versions, the way they were taken and the questions, so a rerun need not load the
        model; timings taken on a busy machine are never kept. An API's latency is always measured
        again: the service may have changed. ``remeasure`` measures everything again.
        """
        if name not in self._seconds:
            spec = self.config.model(name)
            keep = not spec.lexical and not spec.remote
            key = _latency_key(spec, questions)
            stored = self.cache.latency(spec.cache_key, key) if keep and not self.remeasure else None
            if stored is not None and len(stored[0]) == 2 * len(questions):
                n = len(questions)
                self._seconds[name] = QueryTiming(stored[0][:n], stored[0][n:], stored[1], True)
            else:
                timings = _query_embed_seconds(retriever, questions)
                self.timing.add(f"query encoding {name}", timings)
                if keep and timings.wall and not timings.busy:
                    self.cache.store_latency(spec.cache_key, key, [*timings.wall, *timings.cpu], self.measured_at)
                self._seconds[name] = QueryTiming(
                    timings.wall, timings.cpu, self.measured_at, False, timings.contention, timings.busy
                )
        return self._seconds[name]

    def passage_embedding(self, name: str) -> Callable[[list[str]], np.ndarray]:
        """``texts -> vectors`` through the cache, for chunkers that split by meaning."""
        embedder = self.embedder(name)
        return lambda texts: self.cache.embed(embedder, list(texts), PASSAGE, self.config.batch_size)[0]

    def unknown_tokens(self, name: str, texts: list[str]) -> dict | None:
        """The share of ``texts``' word pieces that ``name``'s tokenizer maps to its unknown token,
        read from the tokenizer's file without loading weights; None for a model with no local
        tokenizer of that kind (APIs, e5-small's C engine, hashing, BM25)."""
        spec = self.config.model(name)
        if spec.loader == "model2vec" and preparation_note(spec, self.models_dir):
            self.embedder(name)  # distilled now rather than when its first chunking is embedded
        file = tokenizer_file(spec, self.models_dir)
        return unknown_token_share(file, texts) if file is not None else None

    def reranker(self, name: str) -> Reranker:
        """A reranker, loaded once per run (a bi-encoder shares its model's weights and cached vectors)."""
        if name not in self._rerankers:
            spec = self.config.reranker(name)
            embedder = self.embedder(spec.model) if spec.model else None
            self._rerankers[name] = load_reranker(spec, embedder, self.cache, self.config.batch_size)
        return self._rerankers[name]

    def pipeline(
        self, cand: Candidate, parts: list[Retriever], table: ChunkTable, rewritten: Rewritten | None = None
    ) -> Retriever:
        """The candidate's retriever over its built single-model ``parts`` (``config.parts(cand)``), asked
        the questions as ``rewritten`` gives them where the candidate rewrites its questions."""
        first = parts[0]
        if cand.fused:
            first = FusedRetriever(self.config.fusion(cand.model), self.config.fusion_settings(cand), parts, table)
        if rewritten is not None:
            return RewrittenRetriever(first, rewritten.by_question, table)
        if cand.reranker and cand.top:
            return RerankedRetriever(first, self.reranker(cand.reranker), cand.top, table)
        return first

    def retriever(self, cand: Candidate) -> Retriever:
        """A single-model first stage, not yet built."""
        spec = self.config.model(cand.model)
        if spec.lexical:
            return BM25Retriever(spec)
        index = self.config.index(cand.index)
        return DenseRetriever(
            spec,
            index,
            self.cache,
            self.config.batch_size,
            embedder=self.embedder(cand.model),
            engine=self.engine,
            store=self.hosts.make(index),
        )


def tokenizer_file(spec: ModelSpec, models_dir: Path) -> Path | None:
    """The ``tokenizer.json`` of a local sentence-transformers or static model, where it has one."""
    from bench.embedders.sbert import is_hub_name, resolve_source
    from bench.embedders.static import prepared_path

    source = spec.source
    if spec.loader == "sentence-transformers" and not is_hub_name(source):
        folder = models_dir / source.removeprefix("installed:") if source.startswith("installed:") else None
        if folder is None:
            try:
                folder = resolve_source(source)
            except BenchError:
                return None
    elif spec.loader == "model2vec":
        folder = prepared_path(spec, models_dir) if source.startswith("distill:") else Path(source).expanduser()
    else:
        return None
    file = folder / "tokenizer.json"
    return file if file.is_file() else None


def unknown_token_share(file: Path, texts: list[str]) -> dict | None:
    """How much of ``texts`` the tokenizer in ``file`` cannot read: word pieces that are its unknown
    token (a WordPiece vocabulary's [UNK]), over all word pieces, special tokens left out."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(file))
    tokenizer.no_padding()  # a sentence-transformers tokenizer.json pads to 128: pads are no text
    tokenizer.no_truncation()
    unk_token = getattr(tokenizer.model, "unk_token", None)
    unk = tokenizer.token_to_id(unk_token) if unk_token else None
    if unk is None:
        return None
    encoded = tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
    pieces = sum(len(e.ids) for e in encoded)
    unknown = sum(e.ids.count(unk) for e in encoded)
    return {"share": unknown / pieces if pieces else 0.0, "pieces": pieces, "texts": len(texts), "token": unk_token}


@dataclass(frozen=True)
class QueryTiming:
    """One model's encoding of each timed question: seconds, wall-clock and CPU; when it was timed,
    whether the timing was kept from an earlier run, and how contended the machine was."""

    wall: list[float]
    cpu: list[float]
    measured: str
    from_cache: bool
    contention: float | None = None
    busy: bool = False


def _encoding_figures(timed: list[QueryTiming]) -> Figures:
    """The query-encoding figures of a pipeline whose parts each encode every question in turn."""
    wall = [sum(per_part) for per_part in zip(*(t.wall for t in timed))]
    cpu = [sum(per_part) for per_part in zip(*(t.cpu for t in timed))]
    shares = [t.contention for t in timed if t.contention is not None]
    return {
        **measure.latency_summary("query_embed", wall),
        "query_embed_cpu_ms_mean": float(np.mean(cpu)) * 1000 if cpu else None,
        "query_embed_measured": min(t.measured for t in timed),
        "query_embed_from_cache": all(t.from_cache for t in timed),
        "timing_contention": max(shares) if shares else None,
        "timing_busy": any(t.busy for t in timed),
    }


def _query_embed_seconds(retriever: Retriever, questions: list[str]) -> measure.Timings:
    """Each question encoded alone, live (never from the vector cache), on one thread, after a warm-up call."""
    if not questions:
        return measure.Timings([], [])
    return measure.time_on_one_thread(
        functools.partial(retriever.encode_live, questions[:1]),
        [functools.partial(retriever.encode_live, [text]) for text in questions],
    )


def _latency_key(spec: ModelSpec, questions: list[str]) -> bytes:
    """What a latency measurement depends on: the model as configured, this machine, the
    libraries that run it and the questions timed."""
    identity = {
        "spec": repr(spec),
        "machine": measure.machine(),
        "versions": measure.versions(),
        "questions": questions,
        "method": measure.TIMING_METHOD,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).digest()


# Above this share of [UNK] word pieces a model is warned about. English text has none (Northwind's
# 36 documents: 0 of 48,811 pieces to minilm; SQuAD's 48 articles: 0 of 62,480); Chinese has most
# (cmrc2018: 58.7%, the Chinese sample: 58.8%); Japanese 27%, Korean 3.7%. One piece in a hundred
# lost is a corpus in a script the vocabulary barely has, not a stray symbol.
UNKNOWN_WARNING = 0.01
UNKNOWN_SAMPLE = 300  # chunks tokenised per model, spread over the corpus


def models_in_run(config: Config, candidates: list[Candidate]) -> list[str]:
    """Every model the run reads text with: first stages, rerankers' and chunkers' models, in order."""
    names: dict[str, None] = {}
    for cand in candidates:
        names.update((part.model, None) for part in config.parts(cand))
        reranker = config.reranker(cand.reranker).model if cand.reranker else None
        chunker = config.chunker(cand.chunker).model
        names.update((name, None) for name in (reranker, chunker) if name)
    return list(names)


def multilingual_model() -> str:
    """A built-in multilingual model that runs in this process, to name in advice."""
    from bench.embedders.base import MULTILINGUAL

    return next(n for n in MODELS if MULTILINGUAL in MODELS.get(n).languages and not MODELS.get(n).remote)


def _reads(spec: ModelSpec) -> str:
    """What a model reads, in a few words: "English only", "words found by spaces"."""
    from bench.embedders.base import ANY_SPACED

    if ANY_SPACED in spec.languages:
        return "words found by spaces"
    return f"{' and '.join(language_name(code) for code in spec.languages)} only"


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def language_findings(
    config: Config, candidates: list[Candidate], corpus: LanguageMix, questions: LanguageMix
) -> JsonObject:
    """The manifest's ``languages``: the corpus's and the questions' mix, what each model of the run
    reads, and a warning for each model that does not read the corpus's main language, for a grid
    without a dense model that does, and for questions in another language than the corpus."""
    main, asked = corpus.main, questions.main
    names = models_in_run(config, candidates)
    models = {}
    for name in names:
        spec = config.model(name)
        models[name] = {
            "languages": list(spec.languages),
            "reads_corpus": spec.reads(main) if main != UNDETERMINED else None,
            "reads_questions": spec.reads(asked) if asked != UNDETERMINED else None,
        }
    warnings = []
    if main != UNDETERMINED:
        blind = [n for n in names if models[n]["reads_corpus"] is False]
        if blind:
            reads: dict[str, list[str]] = {}
            for n in blind:
                reads.setdefault(_reads(config.model(n)), []).append(n)
            said = "; ".join(f"{', '.join(ns)}: {what}" for what, ns in reads.items())
            warnings.append(
                f"the corpus is {describe(corpus)}, which {_names(blind)} "
                f"{'does' if len(blind) == 1 else 'do'} not read ({said}): "
                f"{'its' if len(blind) == 1 else 'their'} figures are not what a model that reads "
                f"{language_name(main)} would get"
            )
        dense = {c.model for c in candidates if not c.fused and not config.model(c.model).lexical}
        if dense and not any(config.model(n).reads(main) is not False for n in dense):
            suggestion = multilingual_model()
            warnings.append(
                f"no dense model in the grid reads {language_name(main)}; add a multilingual one: "
                f'models = [..., "{suggestion}"] ({MODELS.get(suggestion).description.split(":")[0]})'
            )
    if UNDETERMINED not in (main, asked) and main != asked:
        warnings.append(
            f"the questions are {describe(questions)} and the corpus {describe(corpus)}: only a model "
            f'that reads both can match them (a multilingual one, e.g. "{multilingual_model()}")'
        )
    return {"corpus": corpus.to_json(), "questions": questions.to_json(), "models": models, "warnings": warnings}


def unknown_token_findings(pool: ModelPool, names: list[str], table: ChunkTable) -> tuple[dict, list[str]]:
    """Each model's share of [UNK] word pieces over up to UNKNOWN_SAMPLE chunks of ``table``, and a
    warning for each above UNKNOWN_WARNING."""
    texts = [table.text(i) for i in spread(len(table), UNKNOWN_SAMPLE)]
    found: dict[str, dict] = {}
    for name in names:
        measured = pool.unknown_tokens(name, texts) if texts else None
        if measured is not None:
            found[name] = {**measured, "share": round(measured["share"], 4)}
    alike: dict[tuple, list[str]] = {}  # a static model distilled from another has its vocabulary
    for name, figures in found.items():
        if figures["share"] > UNKNOWN_WARNING:
            alike.setdefault((figures["share"], figures["pieces"], figures["token"]), []).append(name)
    warnings = [
        f"{_names(names)}: {share:.1%} of the word pieces of {len(texts):,} sampled chunks are {token} to "
        f"{'its' if len(names) == 1 else 'their'} tokenizer, text {'it' if len(names) == 1 else 'they'} "
        "cannot read (English text: under 0.01%)"
        for (share, _, token), names in alike.items()
    ]
    return found, warnings
