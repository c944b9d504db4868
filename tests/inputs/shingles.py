"""The article extraction benchmark's score (Zyte's evaluate.py, MIT): word 4-shingles of the
extracted text against the article body a person marked, precision and recall per page, averaged."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from tests.helpers import SHARED

WEB_ARTICLES = SHARED / "web-articles"
_WORD = re.compile(r"\w+")


def _shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    words = _WORD.findall(text)
    return Counter(tuple(words[i : i + n]) for i in range(max(1, len(words) - n + 1)) if words[i : i + n])


def matching(true: str, pred: str) -> tuple[float, float, float]:
    """True positive, false positive and false negative shingles, as shares of their sum (so a long
    page weighs no more than a short one)."""
    gold, got = _shingles(true), _shingles(pred)
    tp, fp, fn = sum((gold & got).values()), sum((got - gold).values()), sum((gold - got).values())
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (0.0, 0.0, 0.0)


def score(rows: Iterable[tuple[float, float, float]]) -> tuple[float, float, float]:
    """F1, precision and recall: precision and recall are means over the pages, F1 is of the means."""
    rows = list(rows)
    precision = statistics.mean(1.0 if fp == fn == 0 else tp / (tp + fp) for tp, fp, fn in rows if tp + fp > 0)
    recall = statistics.mean(1.0 if fp == fn == 0 else tp / (tp + fn) for tp, fp, fn in rows if tp + fn > 0)
    return 2 * precision * recall / (precision + recall), precision, recall


def web_articles(folder: Path = WEB_ARTICLES) -> list[tuple[str, bytes, str]]:
    """Each saved page's key, bytes and marked article body, by key."""
    truth = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    return [(key, (folder / "html" / f"{key}.html").read_bytes(), truth[key]["articleBody"]) for key in sorted(truth)]


def evaluate(extract: Callable[[bytes], str], pages: list[tuple[str, bytes, str]]) -> tuple[float, float, float]:
    """The benchmark's F1, precision and recall of ``extract`` over ``pages``."""
    return score(matching(body, extract(data)) for _, data, body in pages)
