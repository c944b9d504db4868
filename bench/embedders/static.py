"""Static embeddings (model2vec): a token-vector lookup, hundreds of times faster than a transformer.

``source = "distill:<model>"`` distils the static model from a local sentence-transformers model
on first use (offline, about a minute on two cores) and keeps it under the cache's models/ folder;
any other source is a folder holding a saved model2vec model.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench.embedders.base import ModelSpec, check_dims, normalise
from bench.errors import CACHE_ELSEWHERE, BenchError, fault_of

if TYPE_CHECKING:
    from model2vec import StaticModel
    from tokenizers import Tokenizer


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


def _save(model: StaticModel, target: Path) -> None:
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
    def model(self) -> StaticModel:
        from model2vec import StaticModel

        model = StaticModel.from_pretrained(str(self.path))
        check_dims(self.spec, int(model.dim))
        return model

    @property
    def dims(self) -> int:
        return self.spec.dims or int(self.model.dim)

    @functools.cached_property
    def _whole(self) -> Tokenizer:
        """The model's tokenizer without truncation: its counts are of whole texts."""
        tokenizer = copy.deepcopy(self.model.tokenizer)
        tokenizer.no_truncation()
        return tokenizer

    def _ids(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._whole.encode_batch_fast(texts, add_special_tokens=False)]

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        """Counts ``embed`` already took are handed over; only other texts are tokenised."""
        counts = np.array([self._counted.pop(hash(t), -1) for t in texts], dtype=np.int64)
        missing = np.flatnonzero(counts < 0)
        if len(missing):
            counts[missing] = [len(ids) for ids in self._ids([texts[i] for i in missing])]
        return counts

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        """Each text is tokenised once: the token ids give both its vector (as model2vec's ``encode``
        makes it) and its token count, which ``count_tokens`` then needs not compute again."""
        prompt = self.spec.prefix(role)
        max_length = self.spec.max_tokens or 512
        prompted = [prompt + t for t in texts]
        ids = self._ids(prompted)
        if len(self._counted) + len(ids) <= _COUNTS_KEPT:
            self._counted.update((hash(t), len(x)) for t, x in zip(prompted, ids))
        vectors = _mean_of_ids(self.model, ids, max_length)
        # model2vec cuts a long text by characters, then by tokens: such texts it embeds itself.
        cut = max_length * getattr(self.model, "median_token_length", 0)
        long = [i for i, (t, x) in enumerate(zip(prompted, ids)) if len(x) > max_length or len(t) > cut]
        if vectors is None:
            long = list(range(len(texts)))
            vectors = np.zeros((len(texts), self.dims), dtype=np.float32)
        if long:
            vectors[long] = self.model.encode(
                [prompted[i] for i in long], max_length=max_length, show_progress_bar=False, use_multiprocessing=False
            )
        return normalise(np.asarray(vectors, dtype=np.float32))

    @functools.cached_property
    def _counted(self) -> dict[int, int]:
        """Token counts of texts ``embed`` tokenised, by the text's hash, until ``count_tokens`` takes them."""
        return {}


_COUNTS_KEPT = 4_000_000  # token counts held for count_tokens (~100 bytes each); beyond, they are recounted


def _mean_of_ids(model: StaticModel, ids: list[list[int]], max_length: int) -> np.ndarray | None:
    """The vectors model2vec's ``encode`` makes of texts tokenised as ``ids`` (within ``max_length``
    tokens): the mean of their token vectors, unknown tokens left out, normalised where the model
    normalises. None for a model2vec without the attributes this reads."""
    if not all(hasattr(model, a) for a in ("embedding", "unk_token_id", "token_mapping", "weights", "normalize")):
        return None
    if model.unk_token_id is not None:
        ids = [[t for t in x if t != model.unk_token_id] for x in ids]
    dtype = np.dtype(np.float32) if model.embedding.dtype == np.int8 else model.embedding.dtype
    out = np.zeros((len(ids), model.dim), dtype=dtype)
    if model.token_mapping is None and model.weights is None:
        by_length: dict[int, list[int]] = {}
        for i, x in enumerate(ids):
            if x and len(x) <= max_length:
                by_length.setdefault(len(x), []).append(i)
        for rows in by_length.values():
            out[rows] = model.embedding[np.array([ids[i] for i in rows], dtype=np.int64)].mean(axis=1)
    else:
        for i, x in enumerate(ids):
            if x and len(x) <= max_length:
                out[i] = model._encode_helper(x).mean(axis=0)
    if model.normalize:
        out32 = out.astype(np.float32)
        return (out32 / (np.linalg.norm(out32, axis=1, keepdims=True) + 1e-32)).astype(out.dtype)
    return out
