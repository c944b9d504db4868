"""Search the whole corpus for evidence the pooled passages missed: every term, case-insensitive.
A term in Chinese or Japanese is found across a line break or spaces between its characters, as a
document extracted from a PDF wraps its lines."""

from __future__ import annotations

import re
from typing import TypedDict

from bench.drafting.review.store import ReviewStore, WindowView
from bench.text.scripts import is_cjk

MAX_HITS = 50
MAX_TERMS = 8
SNIPPET = 160  # characters of context either side of a match


class SearchHit(TypedDict):
    doc: str
    start: int
    end: int
    page: str
    window: WindowView


class SearchReply(TypedDict):
    """The reply of ``/api/search``."""

    hits: list[SearchHit]
    truncated: bool


def search(store: ReviewStore, query: str, limit: int = MAX_HITS) -> SearchReply:
    """Documents holding every term of ``query``; one hit per match of the first term (up to a few a
    document), with a snippet around it. Offsets are characters of the document, as evidence has them:
    the matching runs on the original text, since lower-casing can change a text's length."""
    terms = list(dict.fromkeys(t for t in query.split() if t))[:MAX_TERMS]
    if not terms:
        return SearchReply(hits=[], truncated=False)
    patterns = [re.compile(_pattern(t), re.IGNORECASE) for t in terms]
    hits: list[SearchHit] = []
    with store.lock:
        for doc in store.corpus.documents:
            text = doc.text
            if not all(p.search(text) for p in patterns[1:]):
                continue
            for i, match in enumerate(patterns[0].finditer(text)):
                if i == 3:
                    break
                if len(hits) == limit:
                    return SearchReply(hits=hits, truncated=True)
                start, end = match.span()
                lo, hi = max(0, start - SNIPPET), min(len(text), end + SNIPPET)
                window = WindowView(start=lo, end=hi, length=len(text), text=text[lo:hi])
                hits.append(
                    SearchHit(doc=doc.id, start=start, end=end, page=store.page(doc.id, start, end), window=window)
                )
    return SearchReply(hits=hits, truncated=False)


def _pattern(term: str) -> str:
    """``term`` as a pattern: its characters as they are, with any whitespace allowed between two CJK
    characters (Chinese and Japanese put no space between words, so a space there is only a wrap)."""
    out = [re.escape(term[0])]
    for a, b in zip(term, term[1:]):
        out.append(r"\s*" + re.escape(b) if is_cjk(a) and is_cjk(b) else re.escape(b))
    return "".join(out)
