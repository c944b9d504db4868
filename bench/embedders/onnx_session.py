"""An exported model run by ONNX Runtime: its tokenizer read as PyTorch's path reads it, and one
inference session per model file per process, on every core.

Only ``tokenizers``, ``onnxruntime`` and numpy are imported: a run of an exported model never
imports torch or transformers.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench import measure
from bench.core.sections import JsonObject

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

MODEL_FILE, META_FILE, TOKENIZER_FILE = "model.onnx", "meta.json", "tokenizer.json"
# Which encoding field feeds which graph input (the names transformers' tokenizers give them).
FIELDS = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}


def read_meta(folder: Path) -> JsonObject:
    """meta.json as the export wrote it, read key by key."""
    meta: JsonObject = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    return meta


class OnnxModel:
    """Texts to the graph's output rows. Tokenised as ``SentenceTransformer.encode`` tokenises: the
    model's own ``tokenizer.json`` (its lower-casing included), truncated to ``max_tokens`` (else the
    model's ``max_seq_length``) longest first, padded to the batch's longest text on the side and
    with the pad token transformers uses."""

    def __init__(self, folder: Path, max_tokens: int | None, threads: int, keep: bool = True) -> None:
        """``keep``: the session is the process's one for this file (not for a file about to go)."""
        self.folder = folder
        self.meta = read_meta(folder)
        self.max_length: int | None = max_tokens or self.meta.get("max_seq_length")
        self._session = (session if keep else new_session)(folder / MODEL_FILE, threads)
        self._keep = keep
        self._inputs = [i.name for i in self._session.get_inputs()]
        self._encoder = self._tokenizer(truncate=True)
        self._counter = self._tokenizer(truncate=False)

    @property
    def dims(self) -> int:
        return int(self.meta["dims"])

    def _tokenizer(self, truncate: bool) -> Tokenizer:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.folder / TOKENIZER_FILE))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        if truncate:
            if self.max_length:
                tokenizer.enable_truncation(
                    self.max_length, strategy="longest_first", direction=self.meta["truncation_side"]
                )
            tokenizer.enable_padding(
                direction=self.meta["padding_side"],
                pad_id=self.meta["pad_token_id"],
                pad_type_id=self.meta["pad_token_type_id"],
                pad_token=self.meta["pad_token"],
            )
        return tokenizer

    def count(self, texts: list[str]) -> np.ndarray:
        """Tokens of each text, special tokens included, before truncation."""
        return np.array([len(e.ids) for e in self._counter.encode_batch(list(texts))], dtype=np.int64)

    def run(self, texts: list[str]) -> np.ndarray:
        """The graph's output for one batch of texts, as float32 rows."""
        encodings = self._encoder.encode_batch(list(texts))
        feed = {name: np.array([getattr(e, FIELDS[name]) for e in encodings], dtype=np.int64) for name in self._inputs}
        out = self._session_now().run(None, feed)[0]
        return np.asarray(out, dtype=np.float32)

    def _session_now(self) -> InferenceSession:
        """Every core, except while single queries are timed on one thread (bench.measure.one_thread):
        then a one-thread session, made once."""
        if measure.one_thread_wanted() and self._keep:
            return session(self.folder / MODEL_FILE, 1)
        return self._session


def new_session(path: Path, threads: int) -> InferenceSession:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1  # one operator at a time, each on every core
    options.log_severity_level = 3  # errors only: its graph-optimisation notes are not the user's
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


# One session per model file per process: building one reads and optimises the whole graph.
session = functools.cache(new_session)
