"""FAISS index specs: a factory string (or template) plus build parameters and query settings.

Vectors are L2-normalised, so the inner-product metric ranks by cosine similarity.

Build parameters are kept apart from query parameters, ann-benchmarks style: an index is
built once and then searched at each of its query settings (``variants()``/``configure()``).

A factory may be a template whose numbers adapt to the corpus at build time:
``{nlist}`` (IVF lists), ``{m}`` (PQ sub-quantizers) and ``{nbits}`` (bits per PQ code);
a build parameter of the same name pins the number instead. ``resolve_factory(n, dims)``
gives the factory string that is actually built, so results can record it.

Two settings compress the vectors first (bench/retrieval/compressed.py): ``dims`` keeps the first
components, renormalised, for any kind; ``binary`` stores sign bits searched by Hamming distance.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.core.tables import Rule, read_table, read_value, setting
from bench.embedders.cache import drop_pages
from bench.errors import BenchError
from bench.registry import Registry, suggest
from bench.retrieval.compressed import BINARY_FACTORY, binary_index

if TYPE_CHECKING:
    import faiss

RESCORE = "rescore"  # binary's query setting: how many Hamming neighbours the float vectors rescore
PLACEHOLDERS = ("nlist", "m", "nbits")  # template numbers resolved from the corpus size and dims
HNSW_BUILD = ("efConstruction",)
# Query parameters faiss.ParameterSpace knows; which apply depends on the index type.
SEARCH_PARAMS = (
    "nprobe",
    "efSearch",
    "quantizer_efSearch",
    "quantizer_nprobe",
    "max_codes",
    "ht",
    "k_factor",
    "parallel_mode",
)
_INTEGER_PARAMS = {
    "nlist",
    "m",
    "nbits",
    "efConstruction",
    "nprobe",
    "efSearch",
    "quantizer_efSearch",
    "quantizer_nprobe",
    "max_codes",
    "ht",
    "parallel_mode",
}
_PROBE_DIMS = (768, 384, 1024, 1536, 20160)  # dims tried when checking a factory string before any vectors exist
_PROBE_N = 100_000
ADD_BLOCK = 262_144  # vectors handed to FAISS per add(): bounds the copy of a memory-mapped table
TRAIN_MAX = 200_000  # vectors a quantizer (IVF, PQ, SQ) is trained on at most


# --- numbers that adapt to the corpus -------------------------------------------------------------------


def auto_nlist(n: int) -> int:
    """IVF lists: about 4·sqrt(n), but at most n // 39 so every list gets ~39 training points (at least 1)."""
    return max(1, min(round(4 * math.sqrt(max(n, 0))), n // 39))


def auto_pq_m(dims: int) -> int:
    """PQ sub-quantizers: the divisor of ``dims`` (at most 64) nearest dims / 8, the larger on a tie."""
    target = min(dims / 8, 64)
    divisors = [d for d in range(1, min(dims, 64) + 1) if dims % d == 0]
    return min(divisors, key=lambda d: (abs(d - target), -d))


def auto_pq_nbits(n: int) -> int:
    """Bits per PQ code: 8, fewer when the corpus is too small for 2**nbits centroids (at least 1)."""
    return max(1, min(8, math.floor(math.log2(n)) if n >= 1 else 1))


def _placeholders(factory: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(factory) if name is not None]


# --- the spec ------------------------------------------------------------------------------------------

# Fields left out of the config hash while at their default, so adding them changed no run id.
OMIT_DEFAULT = {"omit_default": True}


@dataclass(frozen=True)
class IndexSpec:
    name: str
    factory: str  # a faiss factory string, possibly with {nlist} {m} {nbits}
    build_params: tuple[tuple[str, object], ...] = ()
    search_params: tuple[dict, ...] = field(default=(), hash=False)  # one dict per query setting
    exact: bool = False
    description: str = ""
    dims: int | None = field(default=None, metadata=OMIT_DEFAULT)  # Matryoshka: first `dims` components, renormalised
    binary: bool = field(default=False, metadata=OMIT_DEFAULT)  # sign bits, Hamming distance; search may `rescore`
    # another vector store (bench/retrieval/stores): ``factory`` is then its kind of index ("hnsw", "ivf_pq" …)
    store: str = field(default="faiss", metadata=OMIT_DEFAULT)
    # a server of the team's own (pgvector), or "env:NAME"; never hashed nor written: it may hold a password
    dsn: str | None = field(default=None, metadata={"omit_default": True, "hashed": False})

    def __post_init__(self) -> None:
        build = self.build_params.items() if isinstance(self.build_params, Mapping) else self.build_params
        object.__setattr__(self, "build_params", tuple((str(k), v) for k, v in build))
        object.__setattr__(self, "search_params", tuple(dict(p) for p in self.search_params))

    # build ------------------------------------------------------------------------------------------

    def resolve_factory(self, n: int, dims: int) -> str:
        """The factory string built for ``n`` vectors of ``dims`` dimensions (templates filled in)."""
        names = _placeholders(self.factory)
        if not names:
            return self.factory
        pinned = dict(self.build_params)
        auto = {"nlist": lambda: auto_nlist(n), "m": lambda: auto_pq_m(dims), "nbits": lambda: auto_pq_nbits(n)}
        values = {name: pinned[name] if name in pinned else auto[name]() for name in names if name in auto}
        try:
            return self.factory.format(**values)
        except (KeyError, IndexError, ValueError) as e:
            raise BenchError(
                f"index {self.name!r}: factory {self.factory!r} has a bad placeholder ({e}); "
                f"use only {{nlist}}, {{m}} or {{nbits}}"
            ) from None

    def build(self, vectors: np.ndarray) -> faiss.Index | faiss.IndexBinary:
        """A trained faiss index (inner product) holding ``vectors``, at faiss's default query setting."""
        return self.build_resolved(vectors)[0]

    def build_resolved(self, vectors: np.ndarray) -> tuple[faiss.Index | faiss.IndexBinary, str]:
        """``(index, factory)``: the built index and the factory string it was built from."""
        import faiss

        n, dims = vectors.shape
        if self.binary:
            return binary_index(vectors), BINARY_FACTORY
        factory = self.resolve_factory(n, dims)
        params: dict[str, Any] = dict(self.build_params)  # Any: config values, each of the FAISS setting's type
        try:
            index = faiss.index_factory(dims, factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as e:
            raise BenchError(
                f"index {self.name!r}: faiss cannot make {factory!r} for {dims}-dim vectors "
                f"({_faiss_message(e)}); fix the factory string"
            ) from None
        if "efConstruction" in params:
            hnsw = getattr(index, "hnsw", None)
            if hnsw is None:
                raise BenchError(
                    f"index {self.name!r}: efConstruction needs an HNSW factory, not {factory!r}; remove it from build"
                )
            hnsw.efConstruction = int(params["efConstruction"])
        _quiet_template_training(index, self.factory)
        try:
            if not index.is_trained:
                index.train(_training_sample(vectors))
                drop_pages(vectors)
            for lo in range(0, n, ADD_BLOCK):  # a memory-mapped table is read one block at a time
                index.add(np.ascontiguousarray(vectors[lo : lo + ADD_BLOCK], dtype=np.float32))
                drop_pages(vectors)  # its pages given back once added: one block resident beside the index
        except RuntimeError as e:
            raise BenchError(
                f"index {self.name!r}: faiss could not build {factory!r} on {n} vectors of {dims} dims "
                f"({_faiss_message(e)}); use {{nlist}}/{{m}}/{{nbits}} in the factory so the numbers "
                f"adapt to the corpus, or smaller numbers"
            ) from None
        return index, factory

    # query settings ---------------------------------------------------------------------------------

    def variants(self) -> list[tuple[str, dict]]:
        """``(label, params)`` per query setting, e.g. ``("efSearch=64", {"efSearch": 64})``; one ``("", {})``
        when the index has no query settings."""
        if not self.search_params:
            return [("", {})]
        return [(variant_label(p), dict(p)) for p in self.search_params]

    def configure(self, index: faiss.Index, params: Mapping[str, object]) -> None:
        """Apply one query setting to a built index (no rebuild); ``rescore`` is the retriever's, not FAISS's."""
        configure(index, {k: v for k, v in params.items() if k != RESCORE}, self.name)


def variant_label(params: Mapping[str, object]) -> str:
    return ",".join(f"{k}={v}" for k, v in params.items())


def configure(index: faiss.Index, params: Mapping[str, Any], name: str = "") -> None:
    """Set query parameters (``nprobe``, ``efSearch``, ...) on a built index."""
    import faiss

    space = faiss.ParameterSpace()
    for key, value in params.items():
        try:
            space.set_index_parameter(index, key, float(value))
        except RuntimeError:
            what = f"index {name!r}" if name else "index"
            raise BenchError(
                f"{what}: query parameter {key!r} does not apply to this index; "
                f"use one of: {', '.join(_accepted_search_params(index)) or 'none'}"
            ) from None


def _training_sample(vectors: np.ndarray) -> np.ndarray:
    """All vectors, or a fixed random sample of ``TRAIN_MAX`` of them: k-means on a million
    points costs far more than it gains over a few hundred thousand (FAISS samples too)."""
    n = len(vectors)
    if n <= TRAIN_MAX:
        return np.ascontiguousarray(vectors, dtype=np.float32)
    rows = np.sort(np.random.default_rng(0).choice(n, TRAIN_MAX, replace=False))
    return np.ascontiguousarray(vectors[rows], dtype=np.float32)


def _quiet_template_training(index: faiss.Index, template: str) -> None:
    """Template numbers are chosen for small corpora on purpose; keep faiss's 'too few points' warnings quiet."""
    import faiss

    names = set(_placeholders(template))
    if not names & {"nlist", "nbits"}:
        return
    try:
        ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
    except RuntimeError:
        ivf = None
    if ivf is not None and "nlist" in names:
        ivf.cp.min_points_per_centroid = 1  # type: ignore[attr-defined]
    pq = getattr(ivf if ivf is not None else index, "pq", None)
    if pq is not None and "nbits" in names:
        pq.cp.min_points_per_centroid = 1


def _faiss_message(e: Exception) -> str:
    """The useful tail of a faiss RuntimeError, on one line."""
    text = " ".join(str(e).split())
    for marker in ("failed: ", "Error: "):
        if marker in text:
            text = text.rsplit(marker, 1)[1]
            break
    else:
        if ": " in text and text.startswith("Error in"):
            text = text.rsplit(": ", 1)[1]
    return text[:200]


def _accepted_search_params(index: faiss.Index) -> list[str]:
    import faiss

    space, accepted = faiss.ParameterSpace(), []
    for key in SEARCH_PARAMS:
        try:
            space.set_index_parameter(index, key, 1.0)
            accepted.append(key)
        except RuntimeError:
            pass
    return accepted


# --- builtins ------------------------------------------------------------------------------------------

INDEXES: Registry[IndexSpec] = Registry("index")
INDEXES.register("flat", IndexSpec("flat", "Flat", exact=True, description="exact inner-product search"))
INDEXES.register(
    "hnsw",
    IndexSpec(
        "hnsw",
        "HNSW32",
        build_params=(("efConstruction", 80),),
        search_params=({"efSearch": 16}, {"efSearch": 64}),
        description="HNSW graph, 32 links per node",
    ),
)
INDEXES.register(
    "ivf",
    IndexSpec(
        "ivf",
        "IVF{nlist},Flat",
        search_params=({"nprobe": 1}, {"nprobe": 8}),
        description="inverted file over k-means lists (nlist ~ 4·sqrt(n)), full vectors",
    ),
)
INDEXES.register(
    "ivfpq",
    IndexSpec(
        "ivfpq",
        "IVF{nlist},PQ{m}x{nbits}np",
        search_params=({"nprobe": 8},),
        description="inverted file with product-quantised residuals (m ~ dims/8, 8-bit codes)",
    ),
)
# "np": no polysemous training, which only serves the `ht` query parameter and makes training minutes slow.
INDEXES.register("sq8", IndexSpec("sq8", "SQ8", description="8-bit scalar quantisation, scanned in full"))


# --- user-defined indexes ------------------------------------------------------------------------------


_FACTORY = 'a faiss index_factory string such as "HNSW32", "IVF{nlist},Flat" or "IVF{nlist},PQ{m}x{nbits}np"'
_SEARCH_EG = "e.g. search = [{efSearch = 32}, {efSearch = 128}]"


@dataclass(frozen=True)
class FactoryTable:
    """The keys of an ``[index.NAME]`` table that names a FAISS factory."""

    factory: str = setting(blank=False, what=_FACTORY)
    build: Mapping = setting(default_factory=dict, note="e.g. build = {efConstruction = 200}")
    search: object = ()  # one query setting (a table) or a list of them: _search_entries
    description: str = ""


def index_spec_from_table(name: str, table: object) -> IndexSpec:
    """An IndexSpec from a config table such as
    ``{factory = "HNSW64", build = {efConstruction = 200}, search = [{efSearch = 32}, {efSearch = 128}]}``.

    Checks the factory parses, and that every build/search parameter applies to that index type.
    """
    where = f"index {name!r}"
    if not isinstance(name, str) or not name or "/" in name:
        raise BenchError(f"{where}: an index name must be a non-empty string without '/'; rename it")
    read = read_table(FactoryTable, table, where, example='{factory = "HNSW32"}')
    factory = read.factory.strip()
    names = _factory_placeholders(where, factory)
    search = _search_entries(where, read.search)
    for key, value in read.build.items():
        _check_number(where, f"build.{key}", value)
    spec = IndexSpec(name, factory, tuple(read.build.items()), tuple(map(dict, search)), description=read.description)
    probe = _probe(spec, where)
    _check_build(
        where, read.build, factory, [*(HNSW_BUILD if getattr(probe, "hnsw", None) is not None else ()), *names]
    )
    _check_search(where, search, factory, _accepted_search_params(probe))
    return replace(spec, exact=_is_flat(probe))


def _factory_placeholders(where: str, factory: str) -> list[str]:
    try:
        names = _placeholders(factory)
    except ValueError as e:
        raise BenchError(
            f"{where}: factory {factory!r} has unbalanced braces ({e}); "
            f"write placeholders as {{nlist}}, {{m}} or {{nbits}}"
        ) from None
    for ph in names:
        if ph not in PLACEHOLDERS:
            raise BenchError(
                f"{where}: factory placeholder {{{ph}}} is unknown; {suggest(ph, PLACEHOLDERS)}"
                f"known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}"
            )
    return names


def _search_entries(where: str, search: object) -> list[Mapping]:
    """``search``: one query setting or a list of them, each a non-empty table setting the same parameters."""
    entries = [search] if isinstance(search, Mapping) else list(search) if isinstance(search, (list, tuple)) else None
    if entries is None:
        raise BenchError(f"{where}: search must be a list of tables, {_SEARCH_EG}")
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise BenchError(
                f"{where}: search[{i}] is {entry!r}, not a table; write each query setting as a table, {_SEARCH_EG}"
            )
        if not entry:
            raise BenchError(
                f"{where}: search[{i}] is empty; give it a parameter such as {{nprobe = 8}}, "
                f"or leave search out for faiss's defaults"
            )
    if entries and any(set(e) != set(entries[0]) for e in entries):
        raise BenchError(
            f"{where}: every search entry must set the same parameters "
            f"({', '.join(entries[0])}); give each entry all of them"
        )
    return entries


def _check_build(where: str, build: Mapping, factory: str, allowed: list[str]) -> None:
    for key in build:
        if key in allowed:
            continue
        if key in HNSW_BUILD:
            fix = f'{key} only applies to an HNSW factory such as "HNSW32", not {factory!r}; remove it'
        elif key in PLACEHOLDERS:
            fix = (
                f"{key} is part of the factory string: write it into {factory!r} "
                f"(or use {{{key}}} there to set it from build)"
            )
        else:
            fix = (
                f"{suggest(key, (*HNSW_BUILD, *PLACEHOLDERS))}known for {factory!r}: "
                f"{', '.join(allowed) or 'none (leave build out)'}"
            )
        raise BenchError(f"{where}: build parameter {key!r} does not apply; {fix}")


def _check_search(where: str, search: list[Mapping], factory: str, allowed: list[str]) -> None:
    for i, entry in enumerate(search):
        for key, value in entry.items():
            if key not in allowed:
                raise BenchError(
                    f"{where}: search[{i}] parameter {key!r} does not apply to {factory!r}; "
                    f"{suggest(key, allowed or SEARCH_PARAMS)}"
                    f"known for it: {', '.join(allowed) or 'none (leave search out)'}"
                )
            _check_number(where, f"search[{i}].{key}", value)


def _probe(spec: IndexSpec, where: str) -> faiss.Index:
    """An empty index from the spec's factory at some plausible dims, to learn its type; BenchError if none parse."""
    import faiss

    first_error = None
    for dims in _PROBE_DIMS:
        try:
            factory = spec.resolve_factory(_PROBE_N, dims)
            return faiss.index_factory(dims, factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as e:
            first_error = first_error or _faiss_message(e)
    raise BenchError(
        f"{where}: faiss cannot parse factory {spec.factory!r} ({first_error}); "
        f'use an index_factory string such as "Flat", "HNSW32", "IVF{{nlist}},Flat" or '
        f'"IVF{{nlist}},PQ{{m}}x{{nbits}}np"'
    )


def _is_flat(index: faiss.Index) -> bool:
    import faiss

    return isinstance(index, faiss.IndexFlat)


def _check_number(where: str, what: str, value: object) -> None:
    """A build or query parameter: a number; a whole one >= 1 where FAISS counts (>= 0 for ht, parallel_mode)."""
    read_value(int | float, value, what, where)
    key = what.rsplit(".", 1)[-1]
    if key in _INTEGER_PARAMS:
        read_value(int, value, what, where, Rule(minimum=0 if key in {"ht", "parallel_mode"} else 1))


# --- sizes ---------------------------------------------------------------------------------------------


def index_bytes(index: faiss.Index | faiss.IndexBinary) -> int:
    """Size of the index as FAISS serializes it (counted as it streams out, never held in memory)."""
    import faiss

    size = 0

    def count(data: bytes) -> None:
        nonlocal size
        size += len(data)

    writer = faiss.PyCallbackIOWriter(count)  # type: ignore[attr-defined]
    if isinstance(index, faiss.IndexBinary):
        faiss.write_index_binary(index, writer)
    else:
        faiss.write_index(index, writer)
    return size


def compression_ratio(index: faiss.Index | faiss.IndexBinary | int, n: int, dims: int) -> float:
    """Raw float32 vector bytes (n·dims·4) over the serialized index size; ``index`` may be that size already."""
    size = index if isinstance(index, (int, np.integer)) else index_bytes(index)
    return (n * dims * 4) / size if size else float("nan")
