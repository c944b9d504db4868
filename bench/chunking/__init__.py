"""Chunkers by name: the config says ``kind`` and parameters, :func:`make_chunker` builds it.

The kinds are an explicit registry rather than discovery, so the set of kinds is visible here and
a typo in a config file gets a suggestion instead of an import error.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from bench.chunking.base import Chunk, Chunker, chunk_id
from bench.chunking.fixed_tokens import FixedTokenChunker
from bench.chunking.markdown import MarkdownSectionChunker
from bench.chunking.recursive import RecursiveChunker
from bench.chunking.semantic import SemanticChunker
from bench.chunking.sentences import SentenceWindowChunker
from bench.errors import BenchError
from bench.registry import Registry, suggest

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

CHUNKER_KINDS: Registry[type] = Registry("chunker kind")
CHUNKER_KINDS.register("tokens", FixedTokenChunker)
CHUNKER_KINDS.register("recursive", RecursiveChunker)
CHUNKER_KINDS.register("sentences", SentenceWindowChunker)
CHUNKER_KINDS.register("markdown", MarkdownSectionChunker)
CHUNKER_KINDS.register("semantic", SemanticChunker)

# A kind whose constructor takes this parameter needs an embedding model: it comes from the
# ``embed`` argument of make_chunker, never from the config table.
_EMBED_PARAM = "embed"


def make_chunker(kind: str, embed: Callable | None = None, **params: object) -> Chunker:
    """Build the chunker ``kind`` from config parameters; every mistake is a BenchError.

    ``embed`` (``list[str] -> np.ndarray`` of L2-normalised rows) is the embedding function for
    kinds that need a model (``semantic``); it is required there and ignored by other kinds.
    """
    cls = CHUNKER_KINDS.get(kind)
    accepted = {name: p for name, p in inspect.signature(cls).parameters.items() if p.kind is p.POSITIONAL_OR_KEYWORD}
    needs_embed = accepted.pop(_EMBED_PARAM, None) is not None
    for name in params:
        if name not in accepted:
            raise BenchError(
                f"chunker {kind!r} has no parameter {name!r}: {suggest(name, accepted)}"
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
