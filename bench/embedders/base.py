"""What every model is: a declarative spec (readable without loading weights) and an embedder."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from bench.errors import BenchError
from bench.text.languages import UNSPACED_LANGUAGES

QUERY, PASSAGE = "query", "passage"
# ModelSpec.languages beyond ISO 639-1 codes: trained on many languages; no vocabulary at all; no
# vocabulary, but words found by spaces (a run of Chinese or Thai is one "word").
MULTILINGUAL, ANY_LANGUAGE, ANY_SPACED = "multilingual", "any", "spaced"
REMOTE_LOADERS = frozenset({"openai"})  # loaders that call a service rather than run weights here
# How a sentence-transformers model runs: PyTorch, or its ONNX export under ONNX Runtime (fp32, or
# with int8 weights by dynamic quantisation), exported once into the cache (bench.embedders.onnx_export).
TORCH, ONNX, ONNX_INT8 = "torch", "onnx", "onnx-int8"
BACKENDS = (TORCH, ONNX, ONNX_INT8)


@dataclass(frozen=True)
class ModelSpec:
    """Everything known about a model before it is loaded.

    ``loader`` names how to load it (see ``LOADERS``); ``source`` is a local path or
    ``package:<module>`` for weights shipped inside a Python package. ``lexical`` models rank
    with their own inverted index instead of a FAISS index. ``query_prefix`` / ``passage_prefix``
    are prepended to every text of that role before the model reads it (e5's ``"query: "``, a
    bge query instruction).
    ``languages`` are the languages the model reads: ISO 639-1 codes, ``"multilingual"`` (trained
    on many), ``"any"`` (no vocabulary: it reads whatever its tokenizer splits into words) or
    ``"spaced"`` (no vocabulary, words found by spaces: not Chinese, Japanese, Thai …); empty when
    unknown. It changes no figure, so it stays out of the config hash and the cache keys.
    ``backend`` runs a sentence-transformers model under PyTorch (``"torch"``) or ONNX Runtime
    (``"onnx"``, ``"onnx-int8"``); other than torch, it is part of the cache key and the config hash.
    """

    name: str
    loader: str
    source: str = ""
    dims: int | None = None
    max_tokens: int | None = None
    similarity: str = "cosine"
    price_per_mtok: float | None = None  # set by [model.NAME]; else bench.evaluation.prices resolves the price
    revision: str = ""
    # Unset, they stay out of the config hash, so configs that never set them keep their run ids.
    query_prefix: str = field(default="", metadata={"omit_default": True})
    passage_prefix: str = field(default="", metadata={"omit_default": True})
    lexical: bool = False
    description: str = ""
    params: tuple[tuple[str, object], ...] = ()  # loader-specific settings, e.g. (("base_url_env", "..."),)
    languages: tuple[str, ...] = field(default=(), repr=False, metadata={"omit_default": True, "hashed": False})
    backend: str = field(default=TORCH, metadata={"omit_default": True})

    def __post_init__(self) -> None:
        object.__setattr__(self, "languages", _languages(self.languages))
        _check_backend(self.backend, self.loader)

    def reads(self, language: str) -> bool | None:
        """Whether the model reads ``language`` (an ISO 639-1 code); None when its languages are unknown."""
        if not self.languages:
            return None
        if ANY_SPACED in self.languages and language not in UNSPACED_LANGUAGES:
            return True
        return language in self.languages or bool({MULTILINGUAL, ANY_LANGUAGE} & set(self.languages))

    def prefix(self, role: str) -> str:
        """What is prepended to a text embedded in ``role`` (QUERY or PASSAGE)."""
        return self.query_prefix if role == QUERY else self.passage_prefix

    def option(self, name: str, default: Any = None) -> Any:
        # Any: a [model.NAME] value of whatever TOML type the user wrote; each loader checks its own.
        return dict(self.params).get(name, default)

    @property
    def remote(self) -> bool:
        """Served by an API: its latency is the service's of the day, so it is never reused."""
        return self.loader in REMOTE_LOADERS

    @property
    def cache_key(self) -> str:
        """Identifies the vectors this model produces: name, loader, source, revision and the
        prefixes (when set: keys of models without them stay what they were)."""
        key = f"{self.name}|{self.loader}|{self.source}|{self.revision}"
        if self.query_prefix or self.passage_prefix:
            key += f"|query_prefix={self.query_prefix!r}|passage_prefix={self.passage_prefix!r}"
        if self.backend != TORCH:  # another runtime's vectors differ in the last bits (int8: more)
            key += f"|backend={self.backend}"
        return key


def _check_backend(backend: object, loader: str) -> None:
    """A TypeError (the config names the table) for a backend bench cannot run this model with."""
    if backend not in BACKENDS:
        raise TypeError(f"backend = {backend!r} must be one of {', '.join(repr(b) for b in BACKENDS)}")
    if backend != TORCH and loader != "sentence-transformers":
        raise TypeError(f'backend = {backend!r} applies to loader = "sentence-transformers" models only')


def _languages(value: object) -> tuple[str, ...]:
    """``languages`` as a tuple of lower-case codes; a TypeError (the config names the table) else."""
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TypeError(
            f'languages = {value!r} must be a list of language codes, e.g. ["en"], ["zh", "en"] or ["multilingual"]'
        )
    return tuple(dict.fromkeys(v.strip().lower() for v in value))


class Embedder(Protocol):
    spec: ModelSpec

    @property
    def dims(self) -> int: ...

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        """float32 rows, one per text, L2-normalised (so inner product is cosine)."""

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        """Tokens each text is, as given, for this model, before any truncation (special tokens
        included); the cache hands it texts with the role's prefix, as the model reads them."""


def check_dims(spec: ModelSpec, actual: int) -> None:
    """A declared width must be the model's: cached vectors are looked up by it before loading."""
    if spec.dims and spec.dims != actual:
        raise BenchError(
            f"model {spec.name!r}: dims = {spec.dims} is configured but the model makes "
            f"{actual}-dimensional vectors; set dims = {actual} in [model.{spec.name}]"
        )


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)
