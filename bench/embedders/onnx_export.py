"""A sentence-transformers model exported to ONNX once, from its weights on disk, into the cache.

The export is the model's whole PyTorch pipeline after tokenisation (transformer, pooling, any dense
layer, normalisation) as one graph taking token ids and returning the sentence vector, so ONNX
Runtime computes what ``SentenceTransformer.encode`` computes. ``onnx-int8`` is that graph with its
weights quantised to int8 per channel (``quantize_dynamic``); activations are quantised per batch
at run time. Each lands in its own folder under the cache's ``models/onnx/``, keyed by the model's
source, revision and weight files, the backend and ``EXPORT_VERSION``; a folder is written beside
its final place and renamed into it, so it is whole or absent, and every later run reuses it.
Nothing is downloaded: a model whose weights are not on disk cannot be exported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bench.embedders.base import ONNX, ONNX_INT8, ModelSpec
from bench.embedders.onnx_session import FIELDS, META_FILE, MODEL_FILE, TOKENIZER_FILE, OnnxModel
from bench.errors import CACHE_ELSEWHERE, BenchError, fault_of

if TYPE_CHECKING:
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

# Raised when what an export writes changes (graph inputs, quantisation settings), so older exports
# are left behind rather than reused.
EXPORT_VERSION = 1
OPSET = 17
# The fp32 graph must give PyTorch's vectors: a trace that baked in a shape or a mask would not.
_EXPORT_TOLERANCE = 1e-4
_UMASK = os.umask(0)  # read once, as bench.files reads it: umask cannot be read without setting it
os.umask(_UMASK)
_EXAMPLE = ["a short text", "a longer text, so that the batch is padded and the attention mask matters"]


def export_dir(spec: ModelSpec, source: Path, models_dir: Path) -> Path:
    """Where ``spec``'s export for its backend is kept: one folder per weights, revision and backend."""
    key = f"{EXPORT_VERSION}|{spec.source}|{spec.revision}|{spec.backend}|{_weights_fingerprint(source)}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", spec.revision or source.name).strip("_") or "model"
    return models_dir / "onnx" / f"{readable}-{spec.backend}-{digest}"


def is_exported(folder: Path) -> bool:
    return (folder / META_FILE).is_file()


def prepare(spec: ModelSpec, source: Path, models_dir: Path) -> Path:
    """The folder of ``spec``'s ONNX model (``model.onnx``, ``tokenizer.json``, ``meta.json``),
    exported now unless a run has already exported it."""
    target = export_dir(spec, source, models_dir)
    if is_exported(target):
        return target
    if spec.backend == ONNX:
        _publish(target, lambda staging: export_fp32(source, staging))
    elif spec.backend == ONNX_INT8:
        fp32 = prepare(replace(spec, backend=ONNX), source, models_dir)
        _publish(target, lambda staging: quantise(fp32, staging))
    else:
        raise ValueError(f"backend {spec.backend!r} has no ONNX export")
    return target


def _weights_fingerprint(source: Path) -> str:
    """The model folder's files by name, size and modification time: weights trained again in place
    (the same revision string) make a new export. Hashing their bytes would read every weight per run."""
    rows = sorted(
        f"{path.relative_to(source)}:{stat.st_size}:{stat.st_mtime_ns}"
        for path in source.rglob("*")
        if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in path.relative_to(source).parts)
        for stat in [path.stat()]
    )
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def _publish(target: Path, write: Callable[[Path], None]) -> None:
    """``write`` fills a staging folder beside ``target``, renamed into place when whole. Another
    process that exported the same model first wins; this one's copy is dropped. A full disk or a
    permission is an EnvironmentFault naming ``target``."""
    staging: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
        with contextlib.suppress(OSError):  # as an ordinary folder would be, not mkdtemp's owner-only
            staging.chmod(0o777 & ~_UMASK)
        write(staging)
        try:
            os.rename(staging, target)
        except OSError:
            if not is_exported(target):
                raise
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException as e:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        fault = fault_of(e, target, None, CACHE_ELSEWHERE)
        if fault is None or not isinstance(e, Exception):
            raise
        raise fault from e


def _load_torch_model(source: Path) -> SentenceTransformer:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
    model.eval()
    return model


def export_fp32(source: Path, folder: Path) -> None:
    """The model in ``source`` as an fp32 ONNX graph in ``folder``, with its tokenizer and how to read it."""
    import torch

    model = _load_torch_model(source)
    tokenizer = model.tokenizer
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        raise BenchError(f"{source}: the ONNX backend needs a model with a fast (tokenizer.json) tokenizer")
    encoded = tokenizer(_EXAMPLE, padding=True, truncation="longest_first", return_tensors="pt")
    names = [n for n in tokenizer.model_input_names if n in encoded]
    if not set(names) <= set(FIELDS):
        raise BenchError(f"{source}: the ONNX backend reads {', '.join(FIELDS)} from a tokenizer, not {names}")
    graph = _pipeline(model, names)
    # The TorchScript exporter: torch's default (dynamo) one would need onnxscript too. Its
    # deprecation and tracer warnings say nothing about this model; _check_export checks the graph.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            graph,
            tuple(encoded[n] for n in names),
            str(folder / MODEL_FILE),
            dynamo=False,
            input_names=names,
            output_names=["sentence_embedding"],
            dynamic_axes={**{n: {0: "batch", 1: "sequence"} for n in names}, "sentence_embedding": {0: "batch"}},
            opset_version=OPSET,
        )
        expected = model.encode(_EXAMPLE, convert_to_numpy=True)
    tokenizer.save_pretrained(str(folder))
    if not (folder / TOKENIZER_FILE).is_file():
        raise BenchError(f"{source}: its tokenizer saves no {TOKENIZER_FILE}; the ONNX backend needs one")
    meta = {
        "export_version": EXPORT_VERSION,
        "backend": ONNX,
        # transformers' "no limit" is a 31-digit number: no truncation then
        "max_seq_length": model.max_seq_length if (model.max_seq_length or 0) < 2**31 else None,
        "dims": int(expected.shape[1]),
        "padding_side": tokenizer.padding_side,
        "truncation_side": tokenizer.truncation_side,
        "pad_token": tokenizer.pad_token,
        "pad_token_id": tokenizer.pad_token_id,
        "pad_token_type_id": tokenizer.pad_token_type_id,
        "torch": torch.__version__,
    }
    _write_meta(folder, meta)
    _check_export(folder, expected, source)


def _pipeline(model: SentenceTransformer, names: list[str]) -> torch.nn.Module:
    """The model's modules after tokenisation, called with token tensors in ``names``' order."""
    import torch

    class Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            vectors: torch.Tensor = self.model(dict(zip(names, tensors)))["sentence_embedding"]
            return vectors

    return Pipeline().eval()


def _check_export(folder: Path, expected: np.ndarray, source: Path) -> None:
    """The exported graph gives the PyTorch vectors of a padded batch, or the export is refused."""
    got = OnnxModel(folder, max_tokens=None, threads=1, keep=False).run(_EXAMPLE)
    gap = float(abs(got - expected).max())
    if gap > _EXPORT_TOLERANCE:
        raise BenchError(f"{source}: its ONNX export gives other vectors than PyTorch (max difference {gap:.2g})")


def quantise(fp32: Path, folder: Path) -> None:
    """``fp32``'s export with int8 weights, per output channel (per tensor loses too much:
    cosine to the fp32 vectors 0.91 at worst on minilm, against 0.98 per channel)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Given as a model, not a path: from a path, the quantiser writes a file beside it (the cache's
    # finished fp32 export) while it works.
    graph = onnx.load(str(fp32 / MODEL_FILE))
    with _quiet_root_logger():
        quantize_dynamic(graph, str(folder / MODEL_FILE), weight_type=QuantType.QInt8, per_channel=True)
    for path in fp32.iterdir():
        if path.name not in (MODEL_FILE, META_FILE) and path.is_file():
            shutil.copy2(path, folder / path.name)
    meta = json.loads((fp32 / META_FILE).read_text(encoding="utf-8"))
    _write_meta(folder, {**meta, "backend": ONNX_INT8, "quantisation": "dynamic, int8 weights per channel"})


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """onnxruntime's quantiser logs its advice on the root logger; with no handler there, that call
    would also install a stderr handler for the rest of the process. Neither happens here."""
    root = logging.getLogger()
    handler = logging.NullHandler()

    def drop(record: logging.LogRecord) -> bool:
        return False

    root.addHandler(handler)
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
        root.removeHandler(handler)


def _write_meta(folder: Path, meta: dict[str, object]) -> None:
    """Written last: a folder with ``meta.json`` is a finished export."""
    (folder / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
