"""``[index.NAME]`` tables that name another store than FAISS:

    [index.pg-hnsw]
    store = "pgvector"
    kind = "hnsw"
    m = 16
    ef_construction = 64
    search = [{ef_search = 40}, {ef_search = 200}]

Each store's kinds, with the build settings and query settings each takes (docs/stores.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bench.core.tables import Rule, read_value
from bench.errors import BenchError
from bench.registry import suggest
from bench.retrieval.faiss_index import IndexSpec, variant_label

EXACT = "exact"


@dataclass(frozen=True)
class Kind:
    build: tuple[str, ...] = ()  # whole numbers >= 1
    search: tuple[str, ...] = ()  # whole numbers >= 1 (rerank: >= 0)
    quantization: tuple[str, ...] = ()  # what `quantization = "..."` may say


STORES: dict[str, dict[str, Kind]] = {
    "pgvector": {
        EXACT: Kind(),
        "hnsw": Kind(
            ("m", "ef_construction"), ("ef_search", "iterative_scan", "rerank"), ("none", "halfvec", "binary")
        ),
        "ivfflat": Kind(("lists",), ("probes", "iterative_scan", "rerank"), ("none", "halfvec", "binary")),
    },
    "lancedb": {
        EXACT: Kind(),
        "ivf_flat": Kind(("num_partitions",), ("nprobes",)),
        "ivf_pq": Kind(("num_partitions", "num_sub_vectors", "num_bits"), ("nprobes", "refine_factor")),
        "ivf_hnsw_sq": Kind(("num_partitions", "m", "ef_construction"), ("nprobes", "ef", "refine_factor")),
    },
    "chroma": {"hnsw": Kind(("max_neighbors", "ef_construction"), ("ef_search",))},
}
# query settings that are words, not numbers: pgvector 0.8's iterative scans (an HNSW scan goes on
# past ef_search until enough rows come back; IVFFlat's only in relaxed order)
WORDS = {
    ("hnsw", "iterative_scan"): ("off", "strict_order", "relaxed_order"),
    ("ivfflat", "iterative_scan"): ("off", "relaxed_order"),
}
_SEARCH_EG = {"pgvector": "{ef_search = 40}", "lancedb": "{nprobes = 20}", "chroma": "{ef_search = 100}"}
_COMMON = ("store", "kind", "search", "description", "dims", "dsn", "quantization")


def store_spec_from_table(name: str, table: Mapping[str, object]) -> IndexSpec:
    """An IndexSpec for a store other than FAISS, every key checked against what its kind takes."""
    where = f"index {name!r}"
    store = table["store"]
    if not isinstance(store, str) or store not in STORES:
        known = ["faiss", *STORES]
        raise BenchError(
            f"{where}: store = {store!r} is unknown; {suggest(str(store), known)}known: {', '.join(known)}"
        )
    kinds = STORES[store]
    kind_name = table.get("kind")
    if not isinstance(kind_name, str) or kind_name not in kinds:
        raise BenchError(
            f"{where}: a {store} index needs kind = one of {', '.join(map(repr, kinds))}"
            + (f" (not {kind_name!r}; {suggest(str(kind_name), list(kinds))})" if kind_name is not None else "")
        )
    kind = kinds[kind_name]
    build: dict[str, object] = {}
    for key, value in table.items():
        if key in kind.build:
            build[key] = read_value(int, value, key, where, Rule(minimum=1))
        elif key not in _COMMON:
            known = [*kind.build, *_COMMON]
            raise BenchError(
                f"{where}: {key!r} does not apply to a {store} {kind_name} index; {suggest(key, known)}"
                f"it takes {', '.join(kind.build) or 'no build settings'}"
            )
    if "quantization" in table:
        quantization = read_value(str, table["quantization"], "quantization", where)
        if quantization not in kind.quantization:
            raise BenchError(
                f"{where}: quantization = {quantization!r} does not apply to a {store} {kind_name} index; "
                f"use {' or '.join(map(repr, kind.quantization)) or 'none (remove it)'}"
            )
        build["quantization"] = quantization
    if "dsn" in table and store != "pgvector":
        raise BenchError(f'{where}: dsn applies to store = "pgvector" only; remove it')
    dsn = read_value(str | None, table.get("dsn"), "dsn", where)
    search = _search(where, store, kind_name, kind, table.get("search", ()))
    if any("rerank" in entry for entry in search) and build.get("quantization") != "binary":
        raise BenchError(f'{where}: rerank applies to quantization = "binary" only; remove it or quantise')
    return IndexSpec(
        name,
        kind_name,
        tuple(build.items()),
        tuple(search),
        exact=kind_name == EXACT,
        description=read_value(str, table.get("description", ""), "description", where)
        or _describe(store, kind_name, build),
        store=store,
        dsn=dsn,
    )


def _search(where: str, store: str, kind_name: str, kind: Kind, value: object) -> list[dict]:
    entries = [value] if isinstance(value, Mapping) else list(value) if isinstance(value, list | tuple) else None
    eg = f"e.g. search = [{_SEARCH_EG[store]}]"
    if entries is None or not all(isinstance(e, Mapping) and e for e in entries):
        raise BenchError(f"{where}: search must be a list of non-empty tables, {eg}")
    out = []
    for i, entry in enumerate(entries):
        assert isinstance(entry, Mapping)
        for key, number in entry.items():
            if key not in kind.search:
                raise BenchError(
                    f"{where}: search[{i}] parameter {key!r} does not apply to a {store} {kind_name} index; "
                    f"{suggest(key, kind.search)}it takes {', '.join(kind.search) or 'none (leave search out)'}"
                )
            words = WORDS.get((kind_name, key))
            if words is not None:
                if number not in words:
                    raise BenchError(
                        f"{where}: search[{i}].{key} = {number!r} is not a {store} {kind_name} setting; "
                        f"use {' or '.join(map(repr, words))}"
                    )
                continue
            read_value(int, number, f"search[{i}].{key}", where, Rule(minimum=0 if key == "rerank" else 1))
        out.append(dict(entry))
    if out and any(set(e) != set(out[0]) for e in out):
        raise BenchError(f"{where}: every search entry must set the same parameters; give each entry all of them")
    if len({variant_label(e) for e in out}) < len(out):
        raise BenchError(f"{where}: search lists one setting twice; list each once")
    return out


def _describe(store: str, kind: str, build: Mapping[str, object]) -> str:
    settings = ", ".join(f"{k}={v}" for k, v in build.items())
    return f"{store} {kind}" + (f" ({settings})" if settings else "")
