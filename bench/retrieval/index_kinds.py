"""``[index.NAME]`` tables with the compression settings: ``kind`` (a built-in index to start
from, or ``"binary"``), ``dims`` (Matryoshka truncation) and ``rescore`` (binary's query setting).

A table without them is a plain FAISS factory table (``faiss_index.index_spec_from_table``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from bench.errors import BenchError
from bench.registry import suggest
from bench.retrieval.compressed import BINARY_FACTORY
from bench.retrieval.faiss_index import INDEXES, RESCORE, IndexSpec, index_spec_from_table

BINARY = "binary"
COMPRESSION_KEYS = ("kind", "dims", RESCORE)


def kinds() -> list[str]:
    return [*INDEXES, BINARY]


def index_spec_from_config(name: str, table: object) -> IndexSpec:
    """An IndexSpec from any ``[index.NAME]`` table, e.g. ``{kind = "binary", rescore = 100}``,
    ``{kind = "flat", dims = 128}`` or ``{factory = "HNSW64", dims = 256}``."""
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
    description = table.get("description", "")
    if not isinstance(description, str):
        raise BenchError(f"{where}: description must be a string")
    return description


def _dims(where: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BenchError(f"{where}: dims = {value!r} must be a positive integer, the number of leading components kept")
    return value


def _rescore(where: str, value: object) -> list[int]:
    """``rescore = 100`` or ``rescore = [0, 100]``: one query setting per number (0: Hamming order alone)."""
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values):
        raise BenchError(
            f"{where}: rescore = {value!r} must be a whole number >= 0 (candidates rescored with the "
            f"float vectors; 0 for none) or a list of them, e.g. rescore = [0, 100]"
        )
    if len(set(values)) != len(values):
        raise BenchError(f"{where}: rescore = {value!r} repeats a number; list each once")
    return [v for v in values if isinstance(v, int)]  # all are, as checked above
