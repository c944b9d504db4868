"""sentence-transformers models from a local folder or a package that carries the weights."""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench.embedders.base import ModelSpec, check_dims, normalise
from bench.errors import BenchError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def resolve_source(source: str) -> Path:
    """``package:<module>`` → the weights folder inside that installed package; else a local folder."""
    if source.startswith("package:"):
        module_name = source.removeprefix("package:")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            pip_name = module_name.replace("_", "-")
            raise BenchError(f"model package {module_name!r} is not installed; pip install {pip_name}") from None
        if hasattr(module, "get_model_path"):
            path = Path(module.get_model_path())
        elif module.__file__ is not None:
            path = Path(module.__file__).parent / "model"
        else:  # a namespace package: no folder of its own to hold the weights
            raise BenchError(f"model package {module_name!r} has no __init__.py, so no model folder inside it")
    else:
        path = Path(source).expanduser()
    if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
        raise BenchError(f"{path}: not a sentence-transformers model folder (no modules.json or config.json)")
    return path


def is_hub_name(source: str) -> bool:
    """``hub:<org>/<name>`` asks the model hub (needs a network); everything else is local."""
    return source.startswith("hub:")


class SentenceTransformerEmbedder:
    """Weights load on first use: a run answered wholly from the cache never imports torch."""

    def __init__(self, spec: ModelSpec, batch_size: int = 32) -> None:
        self.spec = spec
        self.batch_size = batch_size
        # A local folder is checked now, so a wrong path fails before any work is done.
        self._path = None if is_hub_name(spec.source) else str(resolve_source(spec.source))

    @functools.cached_property
    def model(self) -> SentenceTransformer:
        if self._path is not None:
            # Weights are local; never let the hub client reach for the network.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # our own progress bars say what is happening
        hf_logging.set_verbosity_error()
        spec = self.spec
        if self._path is None:
            name = spec.source.removeprefix("hub:")
            try:
                model = SentenceTransformer(name, device="cpu", revision=spec.revision or None)
            except OSError as e:
                raise BenchError(
                    f"model {spec.name!r}: cannot load {name!r} from the model hub ({e.__class__.__name__}); "
                    "without a network, download it elsewhere and give its folder as source"
                ) from None
        else:
            model = SentenceTransformer(self._path, device="cpu", local_files_only=True)
        if spec.max_tokens:
            model.max_seq_length = spec.max_tokens
        get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        width = get()
        if width is None:
            raise BenchError(f"model {spec.name!r}: sentence-transformers reports no vector width for this model")
        check_dims(spec, int(width))
        return model

    @property
    def dims(self) -> int:
        if self.spec.dims:
            return self.spec.dims
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        dims = get()
        if dims is None:  # a model whose output size sentence-transformers cannot tell
            raise BenchError(
                f"model {self.spec.name!r}: its dimensions are unknown; set dims in [model.{self.spec.name}]"
            )
        return int(dims)

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        encoded = self.model.tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
        return np.array([len(ids) for ids in encoded], dtype=np.int64)

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        prefix = self.spec.prefix(role)  # read by the model, so it counts against max_seq_length
        vectors = self.model.encode(
            [prefix + t for t in texts],
            batch_size=self.batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return normalise(vectors)
