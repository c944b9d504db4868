"""Markdown sections: one chunk per ATX heading section, tagged with its heading path."""

from __future__ import annotations

import re

from bench.chunking.base import Chunk, chunk_id, strip_span
from bench.chunking.fixed_tokens import validate_size_overlap
from bench.chunking.recursive import RecursiveChunker
from bench.chunking.tokens import count_tokens

# CommonMark ATX heading: up to 3 spaces of indent, 1-6 '#', then a space/tab or end of line.
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?")
# A trailing closing sequence: "## Title ##" -> "Title"; "# ###" -> "".
_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")
# Fence opener: up to 3 spaces, then ``` or ~~~ (3 or more); a backtick info string has no backtick.
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
_FENCE_CLOSE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
_LINE = re.compile(r"[^\r\n]*")  # markdown lines end at \n, \r\n or \r only


def _lines(text: str) -> list[tuple[int, str]]:
    """``(offset, line without its line ending)`` for every line of ``text``."""
    out: list[tuple[int, str]] = []
    pos = 0
    while pos < len(text):
        match = _LINE.match(text, pos)
        if match is None:  # _LINE matches the empty string, so it matches at every position
            raise AssertionError(f"no line at offset {pos}")
        line = match.group()
        out.append((pos, line))
        pos += len(line)
        pos += 2 if text.startswith("\r\n", pos) else 1
    return out


def heading_sections(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, heading path)`` for each section of ``text``; sections tile the document.

    A section starts at the line of its ATX heading (``#`` to ``######``) and runs to the next
    heading at any level; text before the first heading is a section with an empty path. Lines
    inside fenced code blocks (``` or ~~~, closed by a fence of the same character at least as
    long; an unclosed fence runs to the end) are never headings. The path joins the titles of
    the enclosing headings with `` > ``, skipping empty titles.
    """
    starts: list[tuple[int, str]] = [(0, "")]
    stack: list[tuple[int, str]] = []
    fence: str | None = None
    for offset, line in _lines(text):
        if fence is not None:
            closer = _FENCE_CLOSE.fullmatch(line)
            if closer and closer.group(1)[0] == fence[0] and len(closer.group(1)) >= len(fence):
                fence = None
            continue
        opener = _FENCE.fullmatch(line)
        if opener and not (opener.group(1)[0] == "`" and "`" in opener.group(2)):
            fence = opener.group(1)
            continue
        heading = _ATX.fullmatch(line)
        if heading is None:
            continue
        level = len(heading.group(1))
        title = _CLOSING.sub("", (heading.group(2) or "").strip()).strip()
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        starts.append((offset, " > ".join(t for _, t in stack if t)))
    if len(starts) > 1 and starts[1][0] == 0:
        starts.pop(0)  # the document starts with a heading: no preamble
    ends = [s for s, _ in starts[1:]] + [len(text)]
    return [(s, e, path) for (s, path), e in zip(starts, ends)]


class MarkdownSectionChunker:
    """One chunk per markdown section (heading line included), tagged with ``Chunk.heading``.

    Sections come from :func:`heading_sections`: ATX headings only (setext ``===`` underlines are
    ordinary text), ``#`` lines inside fenced code are not headings, and text before the first
    heading is its own section with an empty heading path. A section over ``size`` cl100k tokens
    is split further by :class:`RecursiveChunker` with the same ``size`` and ``overlap`` (its
    pieces keep the section's heading path; only the first holds the heading line). Sections
    never overlap each other; ``overlap`` applies only inside a split section.

    Chunks are stripped of surrounding whitespace; blank sections are skipped. The only chunk that
    can exceed ``size`` is a single character that alone needs more tokens.
    """

    def __init__(self, size: int = 512, overlap: int = 0) -> None:
        validate_size_overlap("markdown", size, overlap)
        self.size = size
        self.overlap = overlap
        self._splitter = RecursiveChunker(size, overlap)

    def __repr__(self) -> str:
        return f"MarkdownSectionChunker(size={self.size}, overlap={self.overlap})"

    def chunk(self, doc_id: str, text: str) -> list[Chunk]:
        chunks: list[Chunk] = []
        for sec_start, sec_end, path in heading_sections(text):
            start, end = strip_span(text, sec_start, sec_end)
            if start >= end:
                continue
            if count_tokens(text[start:end]) <= self.size:
                spans = [(start, end)]
            else:
                spans = [(start + c.start, start + c.end) for c in self._splitter.chunk("", text[start:end])]
            for s, e in spans:
                chunks.append(Chunk(chunk_id(doc_id, len(chunks)), doc_id, s, e, text[s:e], path))
        return chunks
