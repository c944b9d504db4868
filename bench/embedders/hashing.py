"""A hashed bag-of-words embedder: no weights, instant, deterministic.

It is the floor any real model should beat, and it makes end-to-end runs possible in seconds. Its
terms are bench.text.words' in every script, no stopwords dropped: words with their combining
marks, and Chinese, Japanese or Thai runs as single characters and pairs; on English the
lower-cased ``\\w+`` words it always hashed, so English vectors are unchanged.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np

from bench.embedders.base import ModelSpec, normalise
from bench.text.words import segment


class HashingEmbedder:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec

    @property
    def dims(self) -> int:
        return self.spec.dims or 256

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        return np.array([len(segment(t)) for t in texts], dtype=np.int64)

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word, tf in Counter(segment(text)).items():
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                sign = 1.0 if h >> 63 else -1.0
                out[row, h % self.dims] += sign * (1.0 + np.log(tf))
        return normalise(out)
