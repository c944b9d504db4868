"""Chunkers by name: the config says ``kind`` and parameters, :func:`make_chunker` builds it.

The registry is an explicit dict rather than discovery, so the set of kinds is visible here and
a typo in a config file gets a suggestion instead of an import error.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable

from bench.chunking.base import Chunk, Chunker, chunk_id
from bench.chunking.fixed_tokens import FixedTokenChunker
from bench.chunking.markdown import MarkdownSectionChunker
from bench.chunking.recursive import RecursiveChunker
from bench.chunking.semantic import SemanticChunker
from bench.chunking.sentences import SentenceWindowChunker
from bench.errors import BenchError

__all__ = [
    "CHUNKER_KINDS",
    "Chunk",
    "Chunker",
    "FixedTokenChunker",
    "MarkdownSectionChunker",
    "RecursiveChunker",
    "SemanticChunker",
    "SentenceWindowChunker",
    "chunk_id",
    "make_chunker",
]

CHUNKER_KINDS: dict[str, type] = {
    "tokens": FixedTokenChunker,
    "recursive": RecursiveChunker,
    "sentences": SentenceWindowChunker,
    "markdown": MarkdownSectionChunker,
    "semantic": SemanticChunker,
}

# A kind whose constructor takes this parameter needs an embedding model: it comes from the
# ``embed`` argument of make_chunker, never from the config table.
_EMBED_PARAM = "embed"


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f"did you mean {close[0]!r}? " if close else ""


def make_chunker(kind: str, embed: Callable | None = None, **params: object) -> Chunker:
    """Build the chunker ``kind`` from config parameters; every mistake is a BenchError.

    ``embed`` (``list[str] -> np.ndarray`` of L2-normalised rows) is the embedding function for
    kinds that need a model (``semantic``); it is required there and ignored by other kinds.
    """
    known = sorted(CHUNKER_KINDS)
    if kind not in CHUNKER_KINDS:
        raise BenchError(
            f"unknown chunker kind {kind!r}: {_did_you_mean(str(kind), known)}known kinds: {', '.join(known)}"
        )
    cls = CHUNKER_KINDS[kind]
    accepted = {name: p for name, p in inspect.signature(cls).parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD}
    needs_embed = accepted.pop(_EMBED_PARAM, None) is not None
    for name in params:
        if name not in accepted:
            raise BenchError(
                f"chunker {kind!r} has no parameter {name!r}: {_did_you_mean(name, list(accepted))}"
                f"its parameters are: {', '.join(accepted)}"
            )
    missing = [name for name, p in accepted.items() if p.default is p.empty and name not in params]
    if missing:
        raise BenchError(f"chunker {kind!r} needs parameter(s) {', '.join(map(repr, missing))}: add them to its config")
    if needs_embed:
        if embed is None:
            raise BenchError(f'chunker {kind!r} needs a model: set model = "..." in its [chunkers.NAME] table')
        return cls(**{_EMBED_PARAM: embed}, **params)
    return cls(**params)
