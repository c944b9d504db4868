"""bench.toml → a frozen, validated Config; the candidate grid; the config hash. The tables it
reads (models, indexes, fusions, rerankers, chunkers) are parsed in ``tables``.

Paths in the file are relative to the file's folder.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.config.tables import (
    ChunkerSpec,
    ContextSpec,
    Settings,
    canonical,
    chunker_specs_from,
    context_specs,
    contextual_specs,
    fusion_specs_from,
    index_specs_from,
    model_specs_from,
    reranker_specs_from,
)
from bench.core.chat_use import BASE_URL_ENV, ChatEndpoint, ChatUse
from bench.core.summary import LEXICAL_INDEX
from bench.core.tables import read_field, read_table
from bench.embedders import MODELS, ModelSpec
from bench.errors import BenchError
from bench.evaluation.decision import EQUIVALENCE
from bench.evaluation.scale import Scale, scale_from_config
from bench.files import read_text
from bench.inputs.formats import LIMITS, Limits
from bench.registry import suggest
from bench.retrieval.faiss_index import INDEXES, IndexSpec
from bench.retrieval.fusion import FusionSpec, is_fusion
from bench.retrieval.index_kinds import check_index_dims
from bench.retrieval.rerankers import RerankerSpec
from bench.retrieval.rewrites import QUERY_MARK, RewriteSpec, rewrite_spec_from_config
from bench.text.perturb import KINDS as PERTURBATIONS

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from bench.evaluation.prices import Price
    from bench.llm.settings import ChatSettings


@functools.total_ordering
@dataclass(frozen=True)
class Candidate:
    """One pipeline: a first stage (``model`` with ``index``, or a fusion of models joined by "+"),
    over ``chunker``, optionally reranked. ``search`` labels one query setting of the index, or the
    fusion's method ("rrf", "convex0.3"); ``reranker`` re-scores the first stage's ``top`` results.

    Ids read ``minilm/md256/flat``, ``minilm+bm25/md256/flat@rrf`` and ``bm25/md256/inverted>minilm@20``.
    """

    model: str
    chunker: str
    index: str
    search: str | None = None  # None: the index has a single query setting
    reranker: str | None = None
    top: int | None = None  # set with ``reranker``
    query: str | None = None  # the [query.NAME] its questions are rewritten by (a first stage only)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Candidate):
            return NotImplemented
        return self._order < other._order

    @property
    def _order(self) -> tuple[str, str, str, str, str, int, str]:
        """Field by field, a part left out before any given one."""
        return (
            self.model, self.chunker, self.index, self.search or "", self.reranker or "", self.top or 0,
            self.query or "",
        )  # fmt: skip

    @property
    def id(self) -> str:
        base = f"{self.model}/{self.chunker}/{self.index}"
        base = f"{base}@{self.search}" if self.search else base
        base = f"{base}{QUERY_MARK}{self.query}" if self.query else base
        return f"{base}>{self.reranker}@{self.top}" if self.reranker else base

    @property
    def key(self) -> tuple[str, str, str]:
        """What one build serves: every query setting (and reranking) of one model, chunker and index."""
        return (self.model, self.chunker, self.index)

    @property
    def first_stage(self) -> Candidate:
        return replace(self, reranker=None, top=None)

    @property
    def as_written(self) -> Candidate:
        """The same pipeline asked the questions as written."""
        return replace(self, query=None)

    @property
    def fused(self) -> bool:
        return is_fusion(self.model)


@dataclass(frozen=True)
class Config:
    path: Path
    corpus: Path
    goldset: Path
    results: Path
    cache_dir: Path | None
    models: tuple[str, ...]
    chunkers: tuple[ChunkerSpec, ...]
    indexes: tuple[str, ...] = ("flat",)
    model_specs: dict[str, ModelSpec] = field(default_factory=dict)  # builtins plus [model.NAME]
    index_specs: dict[str, IndexSpec] = field(default_factory=dict)  # builtins plus [index.NAME]
    exclude: tuple[str, ...] = ()  # glob patterns on candidate ids
    fusions: tuple[FusionSpec, ...] = ()  # hybrid first stages, from `fusions` and [fusion."A+B"]
    rerankers: tuple[RerankerSpec, ...] = ()  # from `rerankers` and [reranker.NAME]
    rewrites: tuple[RewriteSpec, ...] = ()  # [query.NAME]: questions rewritten by a chat model
    cache_override: Path | None = None  # --cache-dir: beats $BENCH_CACHE_DIR and cache_dir
    priced: frozenset[str] = frozenset()  # models whose [model.NAME] table sets price_per_mtok
    recommend_margin: float = 0.02  # kept as the recommendation's `margin`; a paired test decides ties
    k: int = 5
    depth: int | None = None
    min_overlap: float = 0.5
    ndcg_gain: str = "exponential"
    batch_size: int = 64
    latency_samples: int = 200  # single queries timed per model and index: the first N questions
    scale: Scale = field(default_factory=Scale)  # [scale]: the team's corpus, traffic and prices
    prefer: str = "cost"  # among candidates tied with the best: "cost", "latency" or "quality"
    equivalence_margin: float = EQUIVALENCE  # tied with the best: shown within this share of its figure
    rerank_latency_samples: int = 10  # the same for a reranked pipeline, whose every query re-scores `top` texts
    documents: Limits = LIMITS  # [documents]: how large a document may be before it is left out
    perturb: tuple[str, ...] = ()  # how questions are asked again as people type them (bench.text.perturb)
    perturb_seed: int = 0
    llm: ChatEndpoint = field(default_factory=ChatEndpoint)  # [llm]: where the steps that ask a model send
    contexts: tuple[ContextSpec, ...] = ()  # [context.NAME]: chunks a chat model situates in their document
    # the file's top level as read (None: a Config built in code): the hash takes paths as written
    file: Settings | None = field(default=None, compare=False, repr=False)

    @property
    def retrieval_depth(self) -> int:
        return self.depth if self.depth is not None else max(self.k, 20)

    def model(self, name: str) -> ModelSpec:
        return self.model_specs[name]

    def price(self, name: str) -> Price:
        """The price used for a model: the config's, else the shipped table's, else local (0) or unknown."""
        from bench.evaluation.prices import resolve_price

        return resolve_price(self.model(name), name in self.priced)

    def index(self, name: str) -> IndexSpec:
        return self.index_specs[name]

    def chat(self, use: ChatUse, what: str, spent: float = 0.0) -> ChatSettings:
        """How a step (``what``: its table, "[query.hyde]") asks its model: [llm]'s endpoint (else
        $BENCH_LLM_BASE_URL), the step's model and prices, and what ``spent`` (the run's steps asked
        before it) leaves of the run's budget."""
        from bench.llm.settings import ChatSettings

        llm = self.llm
        base_url = llm.base_url or os.environ.get(BASE_URL_ENV, "").strip()
        if not base_url:
            raise BenchError(
                f"{self.path}: {what} asks {use.model!r}, but no chat endpoint is given; set [llm] base_url "
                f'= "http://127.0.0.1:8000/v1" (an OpenAI-compatible server) or ${BASE_URL_ENV}'
            )
        return ChatSettings(
            base_url, use.model, api_key_env=llm.api_key_env, concurrency=llm.concurrency,
            max_cost=None if llm.max_cost is None else max(0.0, float(llm.max_cost) - spent),
            price_in=float(use.price_in),
            price_out=float(use.price_out),
            price_cached_in=None if use.price_cached_in is None else float(use.price_cached_in),
            max_attempts=llm.max_attempts, timeout_s=float(llm.timeout_s),
        )  # fmt: skip

    def candidates(self, only: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> list[Candidate]:
        """The grid: models × chunkers × indexes × query settings, then each fusion per chunker and
        variant, each reranked and each rewritten variant right after its first stage; less ``exclude``
        and ``skip``,
        within ``only``.

        A lexical model uses its own inverted index, once per chunker. Patterns are globs on ids.
        An empty grid is a BenchError: there would be nothing to run.
        """
        first: list[Candidate] = []
        for model in self.models:
            for chunker in self.chunkers:
                if self.model(model).lexical:
                    first.append(Candidate(model, chunker.name, LEXICAL_INDEX))
                    continue
                for index in self.indexes:
                    first += [Candidate(model, chunker.name, index, label) for label in self._labels(index)]
        for fusion in self.fusions:
            index = LEXICAL_INDEX if all(self.model(m).lexical for m in fusion.models) else self.fusion_index(fusion)
            for chunker in self.chunkers:
                first += [Candidate(fusion.name, chunker.name, index, label) for label, _ in fusion.variants()]
        grid = [c for cand in first for c in (cand, *self._built_on(cand))]
        drop = (*self.exclude, *skip)
        grid = [c for c in grid if not any(fnmatch.fnmatchcase(c.id, p) for p in drop)]
        if only:
            grid = [c for c in grid if any(fnmatch.fnmatchcase(c.id, p) for p in only)]
        if not grid:
            raise BenchError(f"{self.path}: no candidate is left after exclude, --only and --skip; loosen them")
        return grid

    def _built_on(self, cand: Candidate) -> list[Candidate]:
        """The pipelines that add a step to first stage ``cand``: each reranker's, then each rewrite's."""
        out = []
        for reranker in self.rerankers:
            if self._reranks(reranker, cand):
                out += [replace(cand, reranker=reranker.name, top=top) for top in reranker.top]
        for rewrite in self.rewrites:
            if not rewrite.over or any(fnmatch.fnmatchcase(cand.id, p) for p in rewrite.over):
                out.append(replace(cand, query=rewrite.name))
        return out

    def _reranks(self, reranker: RerankerSpec, cand: Candidate) -> bool:
        """Whether ``reranker`` reranks first stage ``cand``: its ``over`` patterns (every first stage
        when none), except a dense model's own exact results, which its own rescoring cannot change."""
        if reranker.over and not any(fnmatch.fnmatchcase(cand.id, p) for p in reranker.over):
            return False
        if reranker.model == cand.model and not cand.fused:
            index = self.index(cand.index)
            return not (index.exact and index.dims is None)
        return True

    def fusion(self, name: str) -> FusionSpec:
        return next(f for f in self.fusions if f.name == name)

    def fusion_index(self, fusion: FusionSpec) -> str:
        """The index a fusion's dense parts search: its own, else the config's first."""
        return fusion.index or self.indexes[0]

    def reranker(self, name: str) -> RerankerSpec:
        return next(r for r in self.rerankers if r.name == name)

    def rewrite(self, name: str) -> RewriteSpec:
        return next(r for r in self.rewrites if r.name == name)

    def parts(self, cand: Candidate) -> list[Candidate]:
        """The single-model first stages a candidate is made of (itself, when it is one)."""
        cand = cand.first_stage.as_written
        if not cand.fused:
            return [cand]
        fusion = self.fusion(cand.model)
        out = []
        for model in fusion.models:
            if self.model(model).lexical:
                out.append(Candidate(model, cand.chunker, LEXICAL_INDEX))
            else:
                index = self.fusion_index(fusion)
                out.append(Candidate(model, cand.chunker, index, self._labels(index)[0]))
        return out

    def _labels(self, index: str) -> list[str | None]:
        """The ``search`` of each query setting of ``index``; None for an index with one."""
        return [label or None for label, _ in self.index(index).variants()] or [None]

    def search_params(self, cand: Candidate) -> dict[str, object]:
        """The query setting a single-model first stage searches with (none for BM25 or a fusion)."""
        if cand.fused or self.model(cand.model).lexical:
            return {}
        return dict(next(p for label, p in self.index(cand.index).variants() if (label or None) == cand.search))

    def fusion_settings(self, cand: Candidate) -> dict[str, object]:
        """The fusion's method and its settings, ``{"method": "rrf", "k": 60}``, of a fused candidate."""
        return dict(next(s for label, s in self.fusion(cand.model).variants() if label == cand.search))

    def chunker(self, name: str) -> ChunkerSpec:
        return next(c for c in self.chunkers if c.name == name)

    def context(self, name: str) -> ContextSpec:
        """The [context.NAME] table a situated chunker's contexts are written by."""
        return next(c for c in self.contexts if c.name == name)

    def resolved(self) -> dict[str, object]:
        """The settings that decide results, as plain JSON data (paths as given in the file): the
        manifest's ``config``, and what the hash is of. ``scale`` and ``prefer`` only when the file
        sets them, so that a config written before they existed hashes as it did."""
        file = self.file
        return {
            "corpus": file.corpus if file else None,
            "goldset": file.goldset if file else None,
            "models": list(self.models),
            "model_specs": {m: _spec_dict(self.model(m)) for m in self.models},
            "chunkers": {
                c.name: {
                    "kind": c.kind,
                    **dict(c.params),
                    **({"model": c.model} if c.model else {}),
                    **({"context": _context_said(c)} if c.context else {}),
                }
                for c in self.chunkers
            },
            **({"contexts": {c.name: _context_dict(c) for c in self.contexts}} if self.contexts else {}),
            "indexes": {i: _spec_dict(self.index(i)) for i in self.indexes},
            "exclude": list(self.exclude),
            **({"fusions": {f.name: _spec_dict(f) for f in self.fusions}} if self.fusions else {}),
            **({"rerankers": {r.name: _spec_dict(r) for r in self.rerankers}} if self.rerankers else {}),
            **({"queries": {r.name: _rewrite_dict(r) for r in self.rewrites}} if self.rewrites else {}),
            **({"scale": _spec_dict(self.scale)} if file and file.scale is not None else {}),
            **({"prefer": self.prefer} if file and file.prefer is not None else {}),
            **({"equivalence_margin": self.equivalence_margin} if file and file.equivalence_margin is not None else {}),
            **({"perturb": list(self.perturb), "perturb_seed": self.perturb_seed} if self.perturb else {}),
            "k": self.k,
            "depth": self.retrieval_depth,
            "min_overlap": self.min_overlap,
            "ndcg_gain": self.ndcg_gain,
        }

    @property
    def hash(self) -> str:
        text = json.dumps(self.resolved(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:6]

    def with_overrides(self, **changes: Any) -> Config:  # Any: Config fields, each of its own type
        """A copy with command-line overrides applied; a setting of the file's top level is checked
        as the file's own would be, and counts as written there."""
        changes = {key: value for key, value in changes.items() if value is not None}
        where = str(self.path)
        settings = {f.name for f in fields(Settings)}
        written = {
            key: read_field(Settings, key, value, where)
            for key, value in changes.items()
            if key in settings and isinstance(value, bool | int | float | str)
        }
        updated = replace(self, file=replace(self.file, **written) if self.file else None, **changes)
        _check_depth(updated, where)
        return updated


def _spec_dict(spec: DataclassInstance) -> dict[str, object]:
    """A spec as plain data for the manifest and the config hash."""
    out = {}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if f.metadata.get("omit_default") and value == f.default:
            continue  # a field added later, unset: the hash of a config that never sets it stays the same
        if f.metadata.get("hashed") is False:
            continue  # describes, changes no figure (a model's languages): runs keep their ids
        out[f.name] = dict(value) if isinstance(value, tuple) and value and isinstance(value[0], tuple) else value
    parsed: dict[str, object] = json.loads(json.dumps(out, default=list))
    return parsed


def _rewrite_dict(spec: RewriteSpec) -> dict[str, object]:
    """A rewrite as the hash sees it: its prompt by version and content, not by where the file is."""
    template = spec.template()
    out = {key: value for key, value in _spec_dict(spec).items() if key != "prompt"}
    return {**out, "prompt": {"version": template.version, "sha256": template.sha256}}


def _context_said(chunker: ChunkerSpec) -> str:
    return f"[context.{chunker.context}]" if chunker.situated else "title, headings, pages"


def _context_dict(spec: ContextSpec) -> dict[str, object]:
    """What decides a [context.NAME]'s contexts and their price: the model, its prices, the chunkers,
    the window and the prompt by its version and content (not its path); never an endpoint or key."""
    from bench.chunking.situate import load_prompt

    out = {key: value for key, value in _spec_dict(spec).items() if key not in ("name", "prompt")}
    prompt = load_prompt(spec.prompt_path)
    return {**out, "prompt": {"version": prompt.version, "sha256": prompt.sha256}}


def load_config(path: str | Path) -> Config:
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path}: config not found; pass a bench.toml (see README.md)")
    try:
        raw = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise BenchError(f"{_toml_where(path, e)}: invalid TOML ({e}); fix the syntax") from None
    where = str(path)
    file = read_table(Settings, raw, where)
    base = path.parent
    model_specs = model_specs_from(file.model, where)
    models = [canonical(m, model_specs, MODELS, "models", where) for m in file.models]
    index_specs = index_specs_from(file.index, where)
    indexes = [canonical(i, index_specs, INDEXES, "indexes", where) for i in file.indexes]
    chunkers = _chunkers(file, model_specs, where)
    contexts, situated = context_specs(file.context, chunkers, where, base)
    chunkers += situated
    fusions = fusion_specs_from(file, model_specs, index_specs, where)
    rerankers = reranker_specs_from(file, model_specs, where, base)
    used = set(models) | {c.model for c in chunkers if c.model}
    used |= {m for f in fusions for m in f.models} | {r.model for r in rerankers if r.model}
    indexed = [*indexes, *(f.index for f in fusions if f.index and f.index not in indexes)]
    config = Config(
        path=path,
        corpus=base / file.corpus,
        goldset=base / file.goldset,
        results=base / file.results,
        cache_dir=base / file.cache_dir if file.cache_dir is not None else None,
        models=tuple(models),
        chunkers=chunkers,
        indexes=tuple(indexes),
        model_specs={name: model_specs.get(name) or MODELS.get(name) for name in used},
        index_specs={name: index_specs.get(name) or INDEXES.get(name) for name in indexed},
        exclude=file.exclude,
        fusions=tuple(fusions),
        rerankers=tuple(rerankers),
        rewrites=tuple(rewrite_spec_from_config(name, table, base) for name, table in file.query.items()),
        priced=frozenset(
            name for name, table in file.model.items() if isinstance(table, Mapping) and "price_per_mtok" in table
        ),
        recommend_margin=file.recommend_margin,
        k=file.k,
        depth=file.depth,
        min_overlap=file.min_overlap,
        ndcg_gain=file.ndcg_gain,
        batch_size=file.batch_size,
        latency_samples=file.latency_samples,
        rerank_latency_samples=file.rerank_latency_samples,
        scale=scale_from_config(file.scale, where),
        prefer=file.prefer or "cost",
        equivalence_margin=file.equivalence_margin if file.equivalence_margin is not None else EQUIVALENCE,
        documents=Limits.from_settings(file.documents, where),
        perturb=perturbations(file.perturb, f"{where}: perturb"),
        perturb_seed=file.perturb_seed,
        llm=read_table(ChatEndpoint, file.llm, f"{where}: [llm]"),
        contexts=contexts,
        file=file,
    )
    for spec in contexts:  # a prompt file that is missing or lacks a placeholder: found before anything runs
        try:
            _context_dict(spec)
        except BenchError as e:
            raise BenchError(f"{where}: [context.{spec.name}] prompt: {e}") from None
    _check_depth(config, where)
    _check_index_dims(config, where)
    return config


def perturbations(kinds: tuple[str, ...] | list[str], where: str) -> tuple[str, ...]:
    """Perturbation kinds checked against bench.text.perturb's (with "did you mean")."""
    for kind in kinds:
        if kind not in PERTURBATIONS:
            raise BenchError(
                f"{where}: unknown perturbation {kind!r}; {suggest(kind, PERTURBATIONS)}"
                f"known: {', '.join(PERTURBATIONS)}"
            )
    return tuple(kinds)


def _chunkers(file: Settings, model_specs: Mapping[str, ModelSpec], where: str) -> tuple[ChunkerSpec, ...]:
    """The chunkers, a semantic chunker's model by its canonical name and dense; then the contextual
    ones (``contextual = [...]``), after every plain one."""
    chunkers = chunker_specs_from(file.chunkers, where)
    for c in chunkers:
        if c.model:
            c_model = canonical(c.model, model_specs, MODELS, f"[chunkers.{c.name}] model", where)
            if (model_specs.get(c_model) or MODELS.get(c_model)).lexical:
                raise BenchError(
                    f"{where}: [chunkers.{c.name}] model {c_model!r} is lexical and cannot embed "
                    f'sentences; name a dense model, e.g. model = "minilm" or "hash"'
                )
            chunkers = tuple(replace(x, model=c_model) if x is c else x for x in chunkers)
    return chunkers + contextual_specs(chunkers, file.contextual, where)


def _toml_where(path: Path, error: tomllib.TOMLDecodeError) -> str:
    """``file:line`` when tomllib's message names a line (it says "(at line 5, column 3)"), else the file."""
    found = re.search(r"\(at line (\d+), column \d+\)", str(error))
    return f"{path}:{found.group(1)}" if found else str(path)


def _check_depth(config: Config, where: str) -> None:
    """``depth`` is checked on its own as the file is read; it may not be below ``k`` either."""
    if config.depth is not None and config.depth < config.k:
        raise BenchError(f"{where}: depth = {config.depth!r} must be an integer >= k ({config.k}); or leave it out")


def _check_index_dims(config: Config, where: str) -> None:
    """An index's ``dims`` may not exceed the width of a dense model it serves (where the model states it)."""
    for model in config.models:
        spec = config.model(model)
        for index in [] if spec.lexical else config.indexes:
            try:
                check_index_dims(config.index(index), model, spec.dims)
            except BenchError as e:
                raise BenchError(f"{where}: {e}") from None
