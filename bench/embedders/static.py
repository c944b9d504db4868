"""Static embeddings (model2vec): a token-vector lookup, hundreds of times faster than a transformer.

``source = "distill:<model>"`` distils the static model from a local sentence-transformers model
on first use (offline, about a minute on two cores) and keeps it under the cache's models/ folder;
any other source is a folder holding a saved model2vec model.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from bench.embedders.base import QUERY, ModelSpec, normalise
from bench.errors import BenchError


def prepared_path(spec: ModelSpec, models_dir: Path) -> Path:
    return models_dir / f"{spec.name}-{spec.revision or 'static'}".replace("/", "_")


def distil(spec: ModelSpec, teacher: ModelSpec, models_dir: Path) -> Path:
    """Distil ``spec`` from ``teacher`` into the models folder (atomically), unless already there."""
    target = prepared_path(spec, models_dir)
    if (target / "model.safetensors").is_file():
        return target
    from bench.embedders.sbert import resolve_source

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")  # bench shows its own progress
    try:
        from model2vec.distill import distill
    except ImportError:
        raise BenchError("static models need model2vec's distiller: pip install 'model2vec[distill]'") from None
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the teacher's load report is noise here
    model = distill(model_name=str(resolve_source(teacher.source)), pca_dims=spec.dims)
    models_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=models_dir, prefix=f".{target.name}."))
    try:
        model.save_pretrained(str(staging))
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


class StaticEmbedder:
    def __init__(self, spec: ModelSpec, path: Path) -> None:
        from model2vec import StaticModel

        self.spec = spec
        self.model = StaticModel.from_pretrained(str(path))

    @property
    def dims(self) -> int:
        return int(self.model.dim)

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        prompt = self.spec.query_prompt if role == QUERY else self.spec.passage_prompt
        max_length = self.spec.max_tokens or 512
        vectors = self.model.encode([prompt + t for t in texts], max_length=max_length, show_progress_bar=False,
                                    use_multiprocessing=False)
        return normalise(np.asarray(vectors, dtype=np.float32))
