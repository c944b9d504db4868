"""``[index.NAME]`` tables with the compression settings: ``kind`` (a built-in index to start
from, or ``"binary"``), ``dims`` (Matryoshka truncation) and ``rescore`` (binary's query setting).

A table without them is a plain FAISS factory table (``faiss_index.index_spec_from_table``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from bench.core.tables import Rule, read_value
from bench.errors import BenchError
from bench.registry import suggest
from bench.retrieval.compressed import BINARY_FACTORY
from bench.retrieval.faiss_index import INDEXES, RESCORE, IndexSpec, index_spec_from_table
from bench.retrieval.stores.base import FAISS
from bench.retrieval.stores.tables import store_spec_from_table

BINARY = "binary"
COMPRESSION_KEYS = ("kind", "dims", RESCORE)
_DIMS = Rule(minimum=1, note="the number of leading components kept")
_RESCORE = Rule(
    minimum=0,
    unique=True,
    note="(candidates rescored with the float vectors; 0 for none), e.g. rescore = [0, 100]",
)


def kinds() -> list[str]:
    return [*INDEXES, BINARY]


def index_spec_from_config(name: str, table: object) -> IndexSpec:
    """An IndexSpec from any ``[index.NAME]`` table, e.g. ``{kind = "binary", rescore = 100}``,
    ``{kind = "flat", dims = 128}`` or ``{factory = "HNSW64", dims = 256}``."""
    if isinstance(table, Mapping) and table.get("store", FAISS) != FAISS:
        return _other_store(name, table)
    table = {k: v for k, v in table.items() if k != "store"} if isinstance(table, Mapping) else table
    if not isinstance(table, Mapping) or not set(COMPRESSION_KEYS) & set(table):
        return index_spec_from_table(name, table)
    where = f"index {name!r}"
    rest = {key: value for key, value in table.items() if key not in COMPRESSION_KEYS}
    kind = table.get("kind")
    if kind is None:
        if "factory" not in rest:
            raise BenchError(f'{where}: needs kind = "{BINARY}", "flat", "sq8" … or a factory = "..." string')
        spec = index_spec_from_table(name, rest)
    elif "factory" in rest:
        raise BenchError(f"{where}: give kind or factory, not both; remove one")
    elif kind == BINARY:
        for key in rest:
            if key != "description":
                raise BenchError(
                    f"{where}: {key!r} does not apply to kind = {BINARY!r}; its one query setting is rescore = N"
                )
        spec = IndexSpec(
            name,
            BINARY_FACTORY,
            binary=True,
            description=_description(where, rest) or "sign bits searched by Hamming distance",
        )
    elif isinstance(kind, str) and kind in INDEXES:
        spec = index_spec_from_table(name, _from_builtin(INDEXES.get(kind), rest))
    else:
        raise BenchError(
            f"{where}: kind = {kind!r} is unknown; {suggest(str(kind), kinds())}known: {', '.join(kinds())}"
        )
    if RESCORE in table:
        if not spec.binary:
            raise BenchError(f'{where}: rescore applies to kind = "{BINARY}" only; remove it')
        spec = replace(spec, search_params=tuple({RESCORE: n} for n in _rescore(where, table[RESCORE])))
    return replace(spec, dims=_dims(where, table.get("dims")))


def _other_store(name: str, table: Mapping) -> IndexSpec:
    """``[index.NAME]`` with ``store = "pgvector"``, ``"lancedb"`` or ``"chroma"`` (``dims`` applies too)."""
    where = f"index {name!r}"
    if not isinstance(name, str) or not name or "/" in name:
        raise BenchError(f"{where}: an index name must be a non-empty string without '/'; rename it")
    return replace(store_spec_from_table(name, table), dims=_dims(where, table.get("dims")))


def check_index_dims(spec: IndexSpec, model: str, model_dims: int | None) -> None:
    """BenchError when the index keeps more components than the model's vectors have."""
    if spec.dims is not None and model_dims is not None and spec.dims > model_dims:
        raise BenchError(
            f"index {spec.name!r}: dims = {spec.dims} is more than model {model!r}'s {model_dims}; "
            f"use at most {model_dims}, or leave dims out"
        )


def _from_builtin(builtin: IndexSpec, table: Mapping) -> dict:
    """A factory table equal to the built-in, with the table's build and search (and description) on top."""
    build = table.get("build", {})
    return {
        "factory": builtin.factory,
        "build": {**dict(builtin.build_params), **build} if isinstance(build, Mapping) else build,
        "search": table.get("search", [dict(p) for p in builtin.search_params]),
        "description": table.get("description", builtin.description),
    }


def _description(where: str, table: Mapping) -> str:
    return read_value(str, table.get("description", ""), "description", where)


def _dims(where: str, value: object) -> int | None:
    return read_value(int | None, value, "dims", where, _DIMS)


def _rescore(where: str, value: object) -> list[int]:
    """``rescore = 100`` or ``rescore = [0, 100]``: one query setting per number (0: Hamming order alone)."""
    return list(read_value(tuple[int, ...], value, RESCORE, where, _RESCORE))
