"""Contextual chunks written by a chat model ("contextual retrieval"): for each chunk, a model is
shown the chunk's document and the chunk and writes a short context that situates it; the context
is put before the chunk's text in what is embedded and indexed, while the unit (what is judged,
stored and shown) stays the chunk's own span — as a header-only ``+ctx`` chunker does
(``bench.chunking.context``), whose table class both use.

The document comes first in every request, so the requests for one document share their prefix and
a server's prompt cache bills it once at the full price. A document longer than the table's
``window_tokens`` is sent as a window of about that many tokens around the chunk; windows are laid
on a grid of half a window, so that neighbouring chunks are sent the same window and share it too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.chunking.context import ContextualTable
from bench.chunking.table import ChunkTable
from bench.inputs.corpus import Corpus
from bench.llm.client import estimate_tokens
from bench.llm.prompts import Template, load_template

PROMPT = Path(__file__).parent / "prompts" / "situate_v1.md"
NEEDS = {"system": (), "user": ("document", "chunk")}
MAX_TOKENS = 150  # of reply: the prompt asks for 50 to 100 tokens


def load_prompt(path: Path | None = None) -> Template:
    """The situating prompt: a table's own file, else the shipped one."""
    return load_template(path or PROMPT, NEEDS)


@dataclass(frozen=True)
class Ask:
    """One chunk's request: its position in the table, its document and span, and the messages."""

    chunk: int
    doc_id: str
    start: int
    end: int
    messages: list[dict[str, str]]


def window(text: str, start: int, end: int, window_tokens: int) -> tuple[int, int]:
    """The part of a document sent with the chunk at ``start:end``: the whole text when it fits in
    ``window_tokens``, else about that many tokens around the chunk, starting on a grid of half a
    window (neighbouring chunks share one), widened to hold the chunk."""
    tokens = estimate_tokens(text)
    if tokens <= window_tokens:
        return 0, len(text)
    width = max(1, int(len(text) * window_tokens / tokens))  # the window's characters at this text's density
    step = max(1, width // 2)
    middle = (start + end) // 2
    lo = max(0, min(len(text) - width, round((middle - width / 2) / step) * step))
    return min(lo, start), max(min(len(text), lo + width), end)


def requests(plain: ChunkTable, corpus: Corpus, prompt: Template, window_tokens: int) -> Iterator[Ask]:
    """Every chunk's request, document by document (each document read once)."""
    for d, doc_id in enumerate(plain.doc_ids):
        rows = plain.chunks_of(d)
        if not len(rows):
            continue
        text = corpus.get(doc_id).text
        for i in rows:
            start, end = int(plain.start[i]), int(plain.end[i])
            lo, hi = window(text, start, end, window_tokens)
            messages = prompt.messages("user", document=text[lo:hi], chunk=plain.text(i))
            yield Ask(i, doc_id, start, end, messages)


def situated(plain: ChunkTable, contexts: Mapping[int, str]) -> ContextualTable:
    """``plain``'s chunks with the context written for each (a chunk without one is indexed as it is)."""
    written: dict[str, int] = {"": 0}
    context_of = np.zeros(len(plain), dtype=np.int32)
    for i, context in contexts.items():
        context_of[i] = written.setdefault(context.strip(), len(written))
    return ContextualTable(plain, list(written), context_of)
