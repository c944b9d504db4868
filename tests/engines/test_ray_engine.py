"""The Ray engine (`bench run --engine ray`) makes exactly the vectors the local engine makes.

One local Ray instance (2 CPUs) serves the whole module; the engine finds it running and
reuses it, as it would a cluster's.
"""

from __future__ import annotations

import json
import logging
import shutil
import signal
import socket
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from bench.cli import main
from bench.embedders import MODELS, ModelSpec, load_embedder, paths
from bench.embedders.cache import EmbeddingCache
from bench.engines import LocalEngine, make_engine
from bench.errors import BenchError, PartialEmbeddingError
from tests.helpers import finished_runs, write_project

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pytest.importorskip("ray.data")

from bench.engines.ray import (  # noqa: E402  (needs Ray)
    ACTORS_ENV,
    ADDRESS_ENV,
    RayEngine,
    _EmbedActor,
    _keep_sigterm_handler,
    _pool,
    _raise_row_error,
    _ray_failure,
)

# Ray Data's own settings warn about each other when a context is made; nothing here to act on.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    started = not ray.is_initialized()
    if started:
        with _keep_sigterm_handler():  # later tests must find SIGTERM as it was
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,
                object_store_memory=256 << 20,
            )
    yield
    if started:
        ray.shutdown()


@pytest.fixture
def hash_model():
    return load_embedder(MODELS.get("hash"))


def _texts(n: int) -> list[str]:
    words = ["vacation", "laptop", "backup", "restore", "pager", "rotation", "disk", "battery", "region", "drill"]
    return [" ".join(words[(i * 7 + j) % len(words)] for j in range(3 + i % 9)) + f" item {i}" for i in range(n)]


def _batches(n_batches: int) -> list[list[str]]:
    texts = _texts(5 * n_batches)
    sizes = [1 + (i * 3) % 7 for i in range(n_batches)]  # uneven, like a cache's last batch
    out, lo = [], 0
    for size in sizes:
        out.append(texts[lo : lo + size])
        lo += size
    return out


def test_every_batch_once_and_bit_identical_to_local(hash_model, tmp_path):
    batches = _batches(36)
    engine = RayEngine(models_dir=tmp_path, batch_size=8)
    got = list(engine.embed_batches(hash_model, batches, "passage"))
    assert sorted(i for i, _ in got) == list(range(len(batches)))
    local = dict(LocalEngine().embed_batches(hash_model, batches, "passage"))
    for i, vectors in got:
        assert vectors.dtype == np.float32 and vectors.flags.writeable
        assert vectors.shape == (len(batches[i]), hash_model.dims)
        assert vectors.tobytes() == local[i].tobytes()
    engine.close()
    assert ray.is_initialized()  # an instance the engine did not start is left running


def test_make_engine_builds_the_ray_engine(tmp_path):
    engine = make_engine("ray", tmp_path / "models", 16)
    assert isinstance(engine, RayEngine) and engine.name == "ray"
    assert engine.models_dir.is_absolute() and engine.batch_size == 16


def test_cache_filled_through_ray_needs_nothing_more_locally(hash_model, tmp_path):
    texts = _texts(70) + _texts(10)  # repeats are embedded once
    cache = EmbeddingCache(tmp_path / "cache")
    first, stats = cache.embed(
        hash_model, texts, "passage", batch_size=8, engine=RayEngine(models_dir=tmp_path, batch_size=8)
    )
    assert stats.embedded == 70 and stats.cached == 0
    again, stats = cache.embed(hash_model, texts, "passage", batch_size=8, engine=LocalEngine())
    assert stats.embedded == 0 and stats.cached == len(texts)
    assert again.tobytes() == first.tobytes()
    fresh, _ = EmbeddingCache(tmp_path / "other").embed(hash_model, texts, "passage", batch_size=8)
    assert fresh.tobytes() == first.tobytes()


def _run(root: Path, engine: str) -> Path:
    result = CliRunner().invoke(
        main,
        [
            "run",
            str(root / "bench.toml"),
            "--engine",
            engine,
            "--no-report",
            "--results",
            str(root / f"results-{engine}"),
            "--cache-dir",
            str(root / f"cache-{engine}"),
        ],
    )
    assert result.exit_code == 0, result.output
    [run] = finished_runs(root / f"results-{engine}")
    return run


def test_bench_run_on_ray_ranks_exactly_as_local(tmp_path, monkeypatch):
    monkeypatch.delenv(paths.CACHE_ENV, raising=False)
    write_project(tmp_path)
    ray_run, local_run = _run(tmp_path, "ray"), _run(tmp_path, "local")
    ray_rows = [json.loads(line) for line in (ray_run / "per_question.jsonl").read_text().splitlines()]
    local_rows = [json.loads(line) for line in (local_run / "per_question.jsonl").read_text().splitlines()]
    assert ray_rows == local_rows and any(r["candidate"].startswith("hash/") for r in ray_rows)

    def quality(run):
        return {
            c["id"]: (c["rank"], c["quality"], c["curve"])
            for c in json.loads((run / "summary.json").read_text())["candidates"]
        }

    assert quality(ray_run) == quality(local_run)
    embedded = {
        c["id"]: c["ops"]["chunks_embedded"]
        for c in json.loads((ray_run / "summary.json").read_text())["candidates"]
        if c["model"] == "hash"
    }
    assert embedded and all(n > 0 for n in embedded.values())
    assert json.loads((ray_run / "manifest.json").read_text())["engine"] == "ray"


@pytest.mark.slow
def test_static_model_vectors_match_local(tmp_path, default_run):
    """Uses the static model the default run distilled; distilling one here would take a minute."""
    spec = MODELS.get("static")
    from bench.embedders.static import needs_distillation, prepared_path

    root, done = default_run
    assert done.returncode == 0, done.stderr
    prepared = paths.models_dir(root / "cache")
    assert not needs_distillation(spec, prepared), f"no distilled static model under {prepared}"
    models = tmp_path / "models"
    shutil.copytree(prepared_path(spec, prepared), prepared_path(spec, models))
    embedder = load_embedder(spec, batch_size=8, models_dir=models)
    batches = _batches(12)
    got = dict(RayEngine(models_dir=models, batch_size=8).embed_batches(embedder, batches, "passage"))
    local = dict(LocalEngine().embed_batches(embedder, batches, "passage"))
    assert sorted(got) == sorted(local)
    assert all(got[i].tobytes() == local[i].tobytes() for i in local)


def test_a_model_error_on_a_worker_is_the_same_one_line_bench_error(tmp_path):
    spec = ModelSpec(name="ghost", loader="sentence-transformers", source="installed:ghost", dims=8)
    with pytest.raises(BenchError) as local:
        load_embedder(spec, models_dir=tmp_path)
    with pytest.raises(BenchError) as remote:
        list(
            RayEngine(models_dir=tmp_path, batch_size=8).embed_batches(
                SimpleNamespace(spec=spec), [["a"], ["b"]], "passage"
            )
        )
    assert str(remote.value) == str(local.value) and "\n" not in str(remote.value)
    assert type(remote.value) is BenchError


def test_any_other_worker_failure_is_one_line_naming_the_model(tmp_path):
    spec = ModelSpec(name="broken", loader="model2vec", source=str(tmp_path / "no-such-model"), dims=8)
    with pytest.raises(BenchError) as e:
        list(RayEngine(models_dir=tmp_path, batch_size=8).embed_batches(SimpleNamespace(spec=spec), [["a"]], "query"))
    message = str(e.value)
    assert message.startswith("model 'broken' failed on a Ray worker: ") and "\n" not in message
    assert "--engine local" in message


def test_failures_ray_reports_itself_become_one_line():
    minilm = MODELS.get("minilm")
    missing = ray.exceptions.RaySystemError(
        "The actor died because of an error raised in its creation task\n"
        "  File \"worker.py\", line 1\nModuleNotFoundError: No module named 'bench'"
    )
    assert str(_ray_failure(missing, minilm)).startswith("Ray workers cannot import bench: install it")
    killed = ray.exceptions.RaySystemError(
        '\x1b[36mray::MapWorker\x1b[39m (pid=1)\n  File "x", line 2\n'
        "ray.exceptions.OutOfMemoryError: Task was killed due to low memory.\n"
    )
    assert str(_ray_failure(killed, minilm)) == (
        "model 'minilm': Ray could not embed the corpus: "
        "ray.exceptions.OutOfMemoryError: Task was killed due to low memory."
    )
    wrapped = ray.exceptions.RaySystemError("wrapped")
    wrapped.__cause__ = ValueError("bad value\nsecond line")
    assert str(_ray_failure(wrapped, minilm)) == "model 'minilm': Ray could not embed the corpus: ValueError: bad value"


def test_partial_answers_reach_the_cache_for_the_right_batch(monkeypatch):
    """An embedder that fails midway (as an API can) hands back what it got, for its own batch."""

    class HalfDone:
        def embed(self, texts, role):
            raise PartialEmbeddingError("quota exceeded", np.array([0, 2]), np.ones((2, 4), dtype=np.float32))

    monkeypatch.setattr("bench.engines.ray.load_embedder", lambda *a, **k: HalfDone())
    actor = _EmbedActor(spec=MODELS.get("hash"), batch_size=8, models_dir="/", role="passage", gpu=False)
    row = actor(pa.table({"batch": [3], "texts": [[b"a", b"b", b"c"]]})).to_pylist()[0]

    class Batches(list):
        last = None

        def __getitem__(self, i):
            self.last = i
            return super().__getitem__(i)

    batches = Batches([["x"]] * 5)
    with pytest.raises(PartialEmbeddingError) as e:
        _raise_row_error(row, MODELS.get("hash"), batches)
    assert batches.last == 3 and str(e.value) == "quota exceeded"
    assert e.value.positions.tolist() == [0, 2] and e.value.vectors.shape == (2, 4)


def test_api_models_are_embedded_in_this_process(monkeypatch):
    calls = []

    class Api:
        spec = ModelSpec(name="api", loader="openai", dims=2)

        def embed(self, texts, role):
            calls.append(texts)
            return np.ones((len(texts), 2), dtype=np.float32)

    monkeypatch.setattr("bench.engines.ray.ray.data.from_items", lambda *a, **k: pytest.fail("went to Ray"))
    got = list(RayEngine(models_dir=Path("m"), batch_size=8).embed_batches(Api(), [["a"], ["b", "c"]], "passage"))
    assert [i for i, _ in got] == [0, 1] and calls == [["a"], ["b", "c"]]


def test_pool_size_follows_cpus_batches_and_the_override(monkeypatch):
    hash_spec = MODELS.get("hash")
    monkeypatch.delenv(ACTORS_ENV, raising=False)
    assert _pool(hash_spec, 100) == (2, 1.0, 0.0)  # one actor per CPU
    assert _pool(hash_spec, 1) == (1, 2.0, 0.0)  # a lone batch gets every CPU
    monkeypatch.setenv(ACTORS_ENV, "4")
    assert _pool(hash_spec, 100) == (4, 0.5, 0.0)  # more actors than CPUs share them
    monkeypatch.setattr("bench.engines.ray.ray.cluster_resources", lambda: {"CPU": 48.0})
    monkeypatch.setattr("bench.engines.ray.ray.nodes", lambda: [{"Alive": True, "Resources": {"CPU": 16.0}}] * 3)
    monkeypatch.setenv(ACTORS_ENV, "2")
    assert _pool(hash_spec, 100) == (2, 16.0, 0.0)  # an actor fits on one node
    monkeypatch.setenv(ACTORS_ENV, "lots")
    with pytest.raises(BenchError, match=ACTORS_ENV):
        _pool(hash_spec, 100)


def test_pool_puts_one_transformer_on_each_gpu(monkeypatch):
    monkeypatch.delenv(ACTORS_ENV, raising=False)
    monkeypatch.setattr("bench.engines.ray.ray.cluster_resources", lambda: {"CPU": 16.0, "GPU": 4.0})
    monkeypatch.setattr("bench.engines.ray.ray.nodes", lambda: [{"Alive": True, "Resources": {"CPU": 8.0}}] * 2)
    assert _pool(MODELS.get("minilm"), 100) == (4, 1.0, 1.0)
    assert _pool(MODELS.get("minilm"), 2) == (2, 1.0, 1.0)
    assert _pool(MODELS.get("static"), 100) == (16, 1.0, 0.0)  # a lookup table gains nothing from a GPU
    monkeypatch.setenv(ACTORS_ENV, "8")
    assert _pool(MODELS.get("minilm"), 100) == (8, 1.0, 0.5)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_cluster_is_one_line_naming_the_address(monkeypatch, tmp_path):
    address = f"127.0.0.1:{_closed_port()}"
    monkeypatch.setenv(ADDRESS_ENV, address)
    monkeypatch.setattr("bench.engines.ray.ray.is_initialized", lambda: False)
    monkeypatch.setattr("bench.engines.ray.ray.init", lambda *a, **k: pytest.fail("tried to connect"))
    engine = RayEngine(models_dir=tmp_path, batch_size=8)
    with pytest.raises(BenchError) as e:
        list(engine.embed_batches(load_embedder(MODELS.get("hash")), [["a"]], "passage"))
    message = str(e.value)
    assert f"{ADDRESS_ENV}={address}" in message and "ray start --head" in message and "\n" not in message
    monkeypatch.setenv(ADDRESS_ENV, "not an address")
    with pytest.raises(BenchError, match="HOST:PORT"):
        engine._connect()


def test_a_cluster_that_refuses_the_driver_is_one_line_with_the_fix(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise ConnectionError("Failed to connect to Ray cluster at 127.0.0.1:1234\nmore detail")

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"127.0.0.1:{server.getsockname()[1]}"
        monkeypatch.setenv(ADDRESS_ENV, address)
        monkeypatch.setattr("bench.engines.ray.ray.is_initialized", lambda: False)
        monkeypatch.setattr("bench.engines.ray.ray.init", refuse)
        with pytest.raises(BenchError) as e:
            RayEngine(models_dir=tmp_path, batch_size=8)._connect()
    message = str(e.value)
    assert message.startswith(f"cannot use the Ray cluster at {ADDRESS_ENV}={address}: Failed to connect")
    assert "RAY_AUTH_MODE=token" in message and "\n" not in message


def test_bench_keeps_its_sigterm_handling_when_ray_starts():
    """`bench run` turns SIGTERM into a clean interrupt; ray.init would make it exit on the spot."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        with _keep_sigterm_handler():
            signal.signal(signal.SIGTERM, lambda signum, frame: None)  # what ray.init does
        assert signal.getsignal(signal.SIGTERM) is interrupt
        with pytest.raises(KeyboardInterrupt), _keep_sigterm_handler():
            raise SystemExit(signal.SIGTERM)  # Ray's handler, when SIGTERM lands while Ray starts
        with pytest.raises(SystemExit), _keep_sigterm_handler():
            raise SystemExit(3)
    finally:
        signal.signal(signal.SIGTERM, before)
