"""Static embeddings (model2vec): a token-vector lookup, hundreds of times faster than a transformer.

``source = "distill:<model>"`` distils the static model from a local sentence-transformers model
on first use (offline, about a minute on two cores) and keeps it under the cache's models/ folder;
any other source is a folder holding a saved model2vec model.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from bench.embedders.base import QUERY, ModelSpec, check_dims, normalise
from bench.errors import CACHE_ELSEWHERE, BenchError, fault_of


def prepared_path(spec: ModelSpec, models_dir: Path) -> Path:
    return models_dir / f"{spec.name}-{spec.revision or 'static'}".replace("/", "_")


def needs_distillation(spec: ModelSpec, models_dir: Path) -> bool:
    return spec.source.startswith("distill:") and not (prepared_path(spec, models_dir) / "model.safetensors").is_file()


def distil(spec: ModelSpec, teacher: ModelSpec, models_dir: Path) -> Path:
    """Distil ``spec`` from ``teacher`` into the models folder (atomically), unless already there."""
    target = prepared_path(spec, models_dir)
    if (target / "model.safetensors").is_file():
        return target
    from bench.embedders.sbert import resolve_source

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from model2vec.distill import distill
    except ImportError:
        raise BenchError("static models need model2vec's distiller: pip install 'model2vec[distill]'") from None
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the teacher's load report is noise here
    # model2vec draws its own tqdm bars on stderr; bench's progress display already says what runs.
    with contextlib.redirect_stderr(io.StringIO()):
        model = distill(model_name=str(resolve_source(teacher.source)), pca_dims=spec.dims)
    _save(model, target)
    return target


def _save(model, target: Path) -> None:
    """Save through a staging folder renamed into place, so a model folder is whole or absent. A full
    disk (as safetensors reports it too), a permission or a filesystem that cannot rename a folder
    is an EnvironmentFault naming ``target`` and, for a full disk, the bytes of the model's vectors."""
    staging: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
        model.save_pretrained(str(staging))
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    except BaseException as e:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        vectors = getattr(model, "embedding", None)
        needed = vectors.nbytes if isinstance(vectors, np.ndarray) else None
        fault = fault_of(e, target, needed, CACHE_ELSEWHERE)
        if fault is None or not isinstance(e, Exception):
            raise
        raise fault from e


class StaticEmbedder:
    """The lookup table loads on first use, like every local model.

    A text's vector does not depend on the others in its call, so calls carry many texts:
    per-call overhead, not arithmetic, is what limits a lookup-table model.
    """

    call_size = 2048

    def __init__(self, spec: ModelSpec, path: Path) -> None:
        self.spec = spec
        self.path = path

    @functools.cached_property
    def model(self):
        from model2vec import StaticModel

        model = StaticModel.from_pretrained(str(self.path))
        check_dims(self.spec, int(model.dim))
        return model

    @property
    def dims(self) -> int:
        return self.spec.dims or int(self.model.dim)

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        encoded = self.model.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return np.array([len(e.ids) for e in encoded], dtype=np.int64)

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        prompt = self.spec.query_prompt if role == QUERY else self.spec.passage_prompt
        max_length = self.spec.max_tokens or 512
        vectors = self.model.encode(
            [prompt + t for t in texts], max_length=max_length, show_progress_bar=False, use_multiprocessing=False
        )
        return normalise(np.asarray(vectors, dtype=np.float32))
