"""A sentence-transformers model with ``backend = "onnx"`` or ``"onnx-int8"``: its ONNX export
(bench.embedders.onnx_export) run by ONNX Runtime on every core, with the model's tokenizer, pooling
and normalisation, so fp32 vectors are PyTorch's to float rounding."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np

from bench.embedders.base import ModelSpec, check_dims, normalise
from bench.embedders.onnx_export import export_dir, is_exported, prepare
from bench.embedders.onnx_session import OnnxModel
from bench.embedders.sbert import is_hub_name, resolve_source
from bench.errors import BenchError
from bench.measure import cores

INSTALL_HINT = "pip install 'retrieval-shootout[onnx]'"


def local_folder(spec: ModelSpec) -> Path:
    """The weights folder an export is made from: the ONNX backends never reach the model hub."""
    if is_hub_name(spec.source):
        raise BenchError(
            f"model {spec.name!r}: backend = {spec.backend!r} exports the model's weights on disk; "
            f"give its folder as source instead of {spec.source!r}"
        )
    return resolve_source(spec.source)


def missing_libraries() -> list[str]:
    """The ``onnx`` extra's libraries this environment lacks."""
    return [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]


def needs_export(spec: ModelSpec, models_dir: Path) -> bool:
    """Whether loading ``spec`` exports it first (False when it cannot: loading says why)."""
    if missing_libraries():
        return False
    try:
        return not is_exported(export_dir(spec, local_folder(spec), models_dir))
    except BenchError:
        return False


class OnnxEmbedder:
    """The export is made (or found in the cache) and its session built on first use, like every
    local model's weights: a run answered from the cache does neither."""

    def __init__(self, spec: ModelSpec, models_dir: Path, batch_size: int = 32) -> None:
        self.spec, self.models_dir, self.batch_size = spec, models_dir, batch_size
        self._source = local_folder(spec)  # a wrong path fails before any work is done
        missing = missing_libraries()
        if missing:
            raise BenchError(
                f"model {spec.name!r}: backend = {spec.backend!r} needs {' and '.join(missing)}: {INSTALL_HINT}"
            )

    @functools.cached_property
    def model(self) -> OnnxModel:
        folder = prepare(self.spec, self._source, self.models_dir)
        model = OnnxModel(folder, self.spec.max_tokens, threads=cores())
        check_dims(self.spec, model.dims)
        return model

    @property
    def dims(self) -> int:
        return self.spec.dims or self.model.dims

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        return self.model.count(texts)

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        """Longest texts first in batches of ``batch_size``, as ``SentenceTransformer.encode`` batches,
        so each batch pads as little as it can."""
        model = self.model  # loaded (and its width checked) before anything is embedded
        prefix = self.spec.prefix(role)  # read by the model, so it counts against max_tokens
        inputs = [prefix + t for t in texts]
        order = np.argsort([-len(t) for t in inputs], kind="stable")
        out = np.zeros((len(inputs), model.dims), dtype=np.float32)
        for lo in range(0, len(order), self.batch_size):
            rows = order[lo : lo + self.batch_size]
            out[rows] = model.run([inputs[i] for i in rows])
        return normalise(out)
