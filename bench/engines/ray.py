"""Corpus embedding as a Ray Data pipeline (``bench run --engine ray``), on a local Ray instance
or the cluster named by ``$RAY_ADDRESS``.

Each row of the dataset is one whole batch exactly as the cache made it, and each actor of the
pool embeds a row with one ``embed`` call, so the vectors are those the local engine would make
(Ray Data's own batching would regroup texts, and padding makes a transformer's vectors depend
on their batch). Only texts go out and vectors come back; the corpus, the cache, chunking,
indexing and search stay in this process. Models that run behind an API are embedded here as
usual: their key stays in this process, and Ray would only add requests.
"""

from __future__ import annotations

import logging
import math
import os
import re
import signal
import socket
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

try:
    import pyarrow as pa
    import ray
    import ray.data
    from ray.data import ActorPoolStrategy, DataContext, Dataset
except ImportError as e:  # Ray without its data extra is no use here: same advice as no Ray at all
    raise ImportError(f"Ray Data is not importable ({e})", name="ray") from e

from bench.embedders import Embedder, ModelSpec, load_embedder
from bench.embedders.engine import LocalEngine
from bench.errors import BenchError, PartialEmbeddingError

ACTORS_ENV = "BENCH_RAY_ACTORS"
ADDRESS_ENV = "RAY_ADDRESS"
_CONNECT_TIMEOUT_S = 5.0
_MAX_BLOCKS = 1000
_ENCODING = ("utf-8", "surrogatepass")  # any Python str survives the trip, lone surrogates included
_GPU_LOADERS = ("sentence-transformers",)  # the only models that run faster on a GPU
_OUT = pa.schema(
    [
        ("batch", pa.int64()),
        ("rows", pa.int64()),
        ("vectors", pa.binary()),
        ("positions", pa.binary()),
        ("kind", pa.string()),
        ("error", pa.string()),
    ]
)


class RayEngine:
    """Batches embedded by a pool of Ray actors, each holding one copy of the model.

    Connects on first use, so a run answered wholly from the cache never starts Ray. A Ray
    instance this engine started is shut down by ``close()``, when the engine is garbage
    collected, or when the process exits; one it found running (a test's, a notebook's, a
    cluster) is left as it was.
    """

    name = "ray"

    def __init__(self, models_dir: Path, batch_size: int = 64) -> None:
        # Workers do not share this process's working directory: give them an absolute path.
        self.models_dir = Path(models_dir).expanduser().resolve()
        self.batch_size = batch_size
        self._shutdown: weakref.finalize | None = None

    def __enter__(self) -> RayEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Shut down the local Ray instance this engine started, if any."""
        if self._shutdown is not None:
            self._shutdown()
            self._shutdown = None

    def embed_batches(
        self, embedder: Embedder, batches: Sequence[list[str]], role: str
    ) -> Iterator[tuple[int, np.ndarray]]:
        spec = embedder.spec
        if spec.loader == "openai":
            yield from LocalEngine().embed_batches(embedder, batches, role)
            return
        if not len(batches):
            return
        self._connect()
        actors, cpus, gpus = _pool(spec, len(batches))
        with _quiet_ray_data():
            rows = [{"batch": i, "texts": [t.encode(*_ENCODING) for t in batches[i]]} for i in range(len(batches))]
            # A block comes back when all its rows are done, and each block costs Ray Data some
            # milliseconds: one batch per block, so each is cached as it finishes, up to a point.
            ds: Dataset = ray.data.from_items(rows, override_num_blocks=min(len(rows), _MAX_BLOCKS))
            del rows
            ds = ds.map_batches(
                _EmbedActor,
                fn_constructor_kwargs=dict(
                    spec=spec, batch_size=self.batch_size, models_dir=str(self.models_dir), role=role, gpu=gpus > 0
                ),
                batch_size=1,  # one row, that is one whole batch, per call
                batch_format="pyarrow",
                compute=ActorPoolStrategy(size=actors),
                num_cpus=cpus,
                num_gpus=gpus,
            )
            try:
                for row in ds.iter_rows():
                    if row["kind"]:
                        _raise_row_error(row, spec, batches)
                    vectors = np.frombuffer(row["vectors"], dtype=np.float32).reshape(row["rows"], -1)
                    yield row["batch"], vectors.copy()
            except ray.exceptions.RayError as e:
                raise _ray_failure(e, spec) from None

    def _connect(self) -> None:
        if ray.is_initialized():
            return
        address = os.environ.get(ADDRESS_ENV, "").strip()
        # ray.init's keywords, each of its own type
        quiet: dict[str, Any] = dict(log_to_driver=False, logging_level=logging.ERROR)
        if address and address != "local":
            _check_reachable(address)
            try:
                with _keep_sigterm_handler():
                    ray.init(address=address, **quiet)
            except Exception as e:  # Ray raises ConnectionError, RuntimeError (version mismatch), ...
                raise BenchError(
                    f"cannot use the Ray cluster at {ADDRESS_ENV}={address}: {_first_line(e)}; "
                    f"check the address and, for a cluster with token authentication, set "
                    f"RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN); or unset {ADDRESS_ENV} "
                    "to run on a local Ray instance"
                ) from None
            return
        # "local": a private instance even when `ray start` left one running on this machine, so
        # that shutting it down at the end touches nothing else.
        with _keep_sigterm_handler():
            ray.init(address="local", include_dashboard=False, object_store_memory=_object_store_bytes(), **quiet)
        # The instance lives as long as this engine (for bench run: until the run returns, before
        # its tables are printed), so that nothing is left running if the process is then killed.
        self._shutdown = weakref.finalize(self, _shutdown_ray)


class _EmbedActor:
    """Loads the model once, then embeds one batch per call.

    Failures come back as rows rather than exceptions: the driver then raises exactly what the
    local engine would have (Ray would wrap it in its own traceback, and an exception that cannot
    be pickled, or one raised while loading, would lose its message altogether).
    """

    def __init__(self, spec: ModelSpec, batch_size: int, models_dir: str, role: str, gpu: bool) -> None:
        self.role = role
        self.error: Exception | None = None
        try:
            self.embedder = load_embedder(spec, batch_size=batch_size, models_dir=Path(models_dir))
            model = getattr(self.embedder, "model", None)  # weights load lazily: load them now, once
            if gpu and model is not None and hasattr(model, "to"):
                model.to("cuda")  # bench loads sentence-transformers on the CPU; this actor owns a GPU
        except Exception as e:
            self.error = e

    def __call__(self, table: pa.Table) -> pa.Table:
        batch = table.column("batch")[0].as_py()
        texts = [t.decode(*_ENCODING) for t in table.column("texts")[0].as_py()]
        try:
            if self.error is not None:
                raise self.error
            return _row(batch, np.asarray(self.embedder.embed(texts, self.role), dtype=np.float32))
        except PartialEmbeddingError as e:
            return _row(
                batch,
                np.asarray(e.vectors, dtype=np.float32),
                kind="partial",
                error=str(e),
                positions=np.asarray(e.positions, dtype=np.int64),
            )
        except BenchError as e:
            return _row(batch, kind="bench", error=str(e))
        except Exception as e:
            return _row(batch, kind="other", error=f"{type(e).__name__}: {_first_line(e)}")


def _row(
    batch: int, vectors: np.ndarray | None = None, kind: str = "", error: str = "", positions: np.ndarray | None = None
) -> pa.Table:
    """Vectors travel as raw float32 bytes, so they arrive bit for bit."""
    vectors = np.zeros((0, 0), dtype=np.float32) if vectors is None else np.ascontiguousarray(vectors)
    blob = b"" if positions is None else np.ascontiguousarray(positions).tobytes()
    return pa.Table.from_pylist(
        [
            {
                "batch": batch,
                "rows": len(vectors),
                "vectors": vectors.tobytes(),
                "positions": blob,
                "kind": kind,
                "error": error,
            }
        ],
        schema=_OUT,
    )


def _raise_row_error(row: dict, spec: ModelSpec, batches: Sequence[list[str]]) -> None:
    if row["kind"] == "bench":
        raise BenchError(row["error"])
    if row["kind"] == "partial":
        # The cache keeps the rows an API already answered for the batch it last handed out.
        batches[row["batch"]]
        positions = np.frombuffer(row["positions"], dtype=np.int64).copy()
        vectors = np.frombuffer(row["vectors"], dtype=np.float32).reshape(len(positions), -1).copy()
        raise PartialEmbeddingError(row["error"], positions, vectors)
    raise BenchError(
        f"model {spec.name!r} failed on a Ray worker: {row['error']} (run with --engine local for the full traceback)"
    )


def _pool(spec: ModelSpec, n_batches: int) -> tuple[int, float, float]:
    """Actors, CPUs and GPUs per actor: one actor per GPU for models that use one, else one per
    CPU; never more actors than batches. ``$BENCH_RAY_ACTORS`` sets the pool size, and the CPUs
    or GPUs are then shared among the actors.

    Sized by what the cluster has, not what is free this instant (the previous model's actors
    may still be leaving): actors that do not fit yet start as resources free up, and the work
    begins with the first one ready.
    """
    total = ray.cluster_resources()
    n_gpus = int(total.get("GPU", 0)) if spec.loader in _GPU_LOADERS else 0
    n_cpus = int(total.get("CPU", 0)) or 1
    units = n_gpus or n_cpus
    wanted = os.environ.get(ACTORS_ENV, "").strip()
    if wanted:
        if not wanted.isdigit() or int(wanted) < 1:
            raise BenchError(f"{ACTORS_ENV}={wanted!r} must be a positive whole number of actors")
        actors = int(wanted)
    else:
        actors = units
    actors = max(1, min(actors, n_batches))
    if n_gpus:
        return actors, _share(n_cpus, actors, whole=False), _share(n_gpus, actors, whole=False)
    # An actor lives on one node: never ask for more CPUs than the largest node has.
    largest = max((node["Resources"].get("CPU", 0) for node in ray.nodes() if node.get("Alive")), default=1)
    return actors, min(_share(n_cpus, actors, whole=True), max(1.0, float(int(largest)))), 0.0


def _share(units: int, actors: int, whole: bool) -> float:
    """Each actor's part of ``units``: a fraction when actors outnumber them (Ray counts in
    steps of 1e-4), else one, or with ``whole`` as many as divide evenly (a job of few batches
    still gets every CPU)."""
    if actors > units:
        return math.floor(units / actors * 10_000) / 10_000
    return float(units // actors) if whole else 1.0


def _shutdown_ray() -> None:
    if ray.is_initialized():
        ray.shutdown()


@contextmanager
def _keep_sigterm_handler() -> Iterator[None]:
    """``ray.init`` installs a SIGTERM handler that exits at once; bench run has its own (clean
    up, exit 130 as for Ctrl-C), so the one there before is put back, and a SIGTERM that lands
    while Ray starts goes to it too."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    except SystemExit as e:
        if e.code != signal.SIGTERM or not callable(previous):
            raise
        previous(signal.SIGTERM, None)
        raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _check_reachable(address: str) -> None:
    """Ray retries an unreachable address for minutes, printing as it goes: fail fast instead."""
    if address == "auto":
        return  # Ray looks the address up itself and fails at once when there is none
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise BenchError(
            f"{ADDRESS_ENV}={address} is not a Ray address; use HOST:PORT (as printed by "
            "`ray start --head`), ray://HOST:PORT or auto"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=_CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise BenchError(
            f"cannot reach the Ray cluster at {ADDRESS_ENV}={address} ({e.strerror or e}); "
            "start it with `ray start --head` there, fix the address, or unset "
            f"{ADDRESS_ENV} to run on a local Ray instance"
        ) from None


def _object_store_bytes() -> int:
    """Enough for the texts and the vectors in flight, not Ray's default 30% of memory."""
    import psutil

    return int(min(2 << 30, max(256 << 20, psutil.virtual_memory().total // 10)))


def _ray_failure(error: BaseException, spec: ModelSpec) -> BenchError:
    """One line for a failure Ray reports itself (a worker that cannot import bench, a node lost)."""
    cause = _innermost(error)
    text = f"{type(cause).__name__}: {_first_line(cause)}" if cause is not None else _last_error_line(error)
    if "No module named 'bench" in text:
        return BenchError(
            "Ray workers cannot import bench: install it, with the same Python and "
            "versions, on every node of the cluster (see docs/ray.md)"
        )
    return BenchError(f"model {spec.name!r}: Ray could not embed the corpus: {text}")


def _innermost(error: BaseException) -> BaseException | None:
    """The first exception in the chain that is not Ray's own wrapper, if Ray kept one."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if not isinstance(e, ray.exceptions.RayError) and type(e).__module__.split(".")[0] != "ray":
            return e
        todo += [getattr(e, "cause", None), e.__cause__, e.__context__]
    return None


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ERROR_LINE = re.compile(r"^[\w.]*(Error|Exception|Exit)\b.*")


def _last_error_line(error: BaseException) -> str:
    lines = [line.strip() for line in _ANSI.sub("", str(error)).splitlines() if line.strip()]
    named = [line for line in lines if _ERROR_LINE.match(line)]
    return (named or lines or [type(error).__name__])[-1]


def _first_line(error: BaseException) -> str:
    text = _ANSI.sub("", str(error)).strip()
    return text.splitlines()[0] if text else type(error).__name__


class _Silence(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


@contextmanager
def _quiet_ray_data() -> Iterator[None]:
    """No Ray Data progress bars or console logs while bench draws its own progress; its log
    file in the Ray session folder still gets everything."""
    context = DataContext.get_current()
    saved = context.enable_progress_bars
    context.enable_progress_bars = False
    silence = _Silence()
    consoles = [
        h
        for h in logging.getLogger("ray.data").handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    for handler in consoles:
        handler.addFilter(silence)
    try:
        yield
    finally:
        context.enable_progress_bars = saved
        for handler in consoles:
            handler.removeFilter(silence)
