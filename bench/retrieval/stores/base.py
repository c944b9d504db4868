"""The interface every vector store speaks, and what a build of one reports."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from bench.errors import EnvironmentFault

FAISS = "faiss"


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` as they lie on disk now (an embedded store's size)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class StoreFault(EnvironmentFault):
    """A store's server refused, died or ran out of room: the candidates on it cannot be run, the
    others can (and are)."""


# Per query: row numbers of the vectors as given to ``build`` and their similarities (higher is nearer).
Hits = list[tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class StoreBuild:
    """A store's build: what was built (a FAISS factory string, or the store's index and its build
    settings), its bytes on disk, the ANN index's own share of them, the store's version, and the
    settings as the store reports them back."""

    description: str
    bytes: int | None
    store: str = FAISS
    index_bytes: int | None = None  # the ANN index alone (None: the store keeps no separate one)
    version: str | None = None
    settings: Mapping[str, object] = field(default_factory=dict)


class VectorStore(Protocol):
    """Unit-length float32 vectors, compared by cosine similarity (inner product)."""

    name: str  # "faiss", "pgvector", "lancedb", "chroma"
    in_process: bool  # its index lives in this process's memory (not a server's)

    def build(self, vectors: np.ndarray) -> StoreBuild:
        """Load ``vectors`` (row i is unit i) and build the index; the vectors may be memory-mapped."""

    def configure(self, params: Mapping[str, object]) -> Mapping[str, object]:
        """Apply one query setting (no rebuild); the setting as the store now reports it."""

    def search(self, queries: np.ndarray, k: int) -> Hits:
        """Per query, its ``k`` nearest as the store finds them (fewer when it holds fewer), in any
        order among equal similarities; a store may return more (those tied with the k-th)."""

    def one_query_at_a_time(self) -> contextlib.AbstractContextManager[None]:
        """Search as a service is asked: one query per call, on one thread of this process."""

    def server_cpu_seconds(self) -> float | None:
        """CPU seconds a server bench started has used so far, all its processes; None when the store
        runs in this process (its time is this process's) or on a server of the team's own."""

    def close(self) -> None:
        """Drop what the build made (tables, folders); the store cannot be searched after."""


class OneQueryPerCall:
    """For a store whose every search call already asks one query at a time, on the calling thread,
    and that runs in this process (its time and memory are this process's): what the interface asks
    of it."""

    in_process = True

    @contextlib.contextmanager
    def one_query_at_a_time(self) -> Iterator[None]:
        yield

    def server_cpu_seconds(self) -> float | None:
        return None
