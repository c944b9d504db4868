"""How often the drafting checks fire on questions people wrote, in Chinese (CMRC 2018) and in English
(SQuAD v1.1), from ../shared/datasets when it is there.

"copies its evidence" is measured against the sentence that holds the question's answer, for the
real question, for that sentence copied verbatim, and for the sentence with its answer replaced by
a question word (什么 / "what"). "near-duplicate" is measured on each question less one of its words
(cut by jieba in Chinese), and on every pair of different questions about one passage.

    .venv/bin/python -m tests.drafting.copy_rates
"""

from __future__ import annotations

import itertools
import json
import logging
import random
import re
from collections.abc import Callable
from pathlib import Path

from bench.drafting.checks import (
    _QUESTION_WORDS,
    _STOPWORDS,
    DUPLICATE_JACCARD,
    DUPLICATE_JACCARD_UNSPACED,
    content_words,
    copies,
)

DATASETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
CMRC, SQUAD = DATASETS / "cmrc2018-zh", DATASETS / "squad-articles"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _sentence(text: str, start: int, end: int, ends: Callable[[str, int, int], tuple[int, int]]) -> str:
    a, b = ends(text, start, end)
    return text[a:b].strip()


def _zh_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    a = max(text.rfind(c, 0, start) for c in "。！？；\n") + 1
    after = [i for i in (text.find(c, end) for c in "。！？；\n") if i >= 0]
    return a, (min(after) + 1 if after else len(text))


def _jaccard(a: str, b: str) -> float:
    x, y = set(content_words(a)), set(content_words(b))
    return len(x & y) / len(x | y) if x or y else 1.0


def _rate(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else 0.0


def _cases(questions: list[tuple[str, str, str, str]], question_word: str, mark: str) -> dict[str, float]:
    """(question, sentence, sentence with the answer cut out as a NUL, group) → how often copying fires."""
    human, verbatim, cloze = [], [], []
    for question, sentence, template, _ in questions:
        human.append(copies(question, sentence))
        verbatim.append(copies(sentence, sentence))
        cloze.append(copies(template.replace("\0", question_word).rstrip("。；！.") + mark, sentence))
    return {"questions": len(questions), "human": _rate(human), "verbatim": _rate(verbatim), "cloze": _rate(cloze)}


def _duplicates(questions: list[str], groups: list[str], drop: Callable[[str], str | None], alike: float) -> dict:
    less = [(q, d) for q in questions if (d := drop(q))]
    by: dict[str, list[str]] = {}
    for q, g in zip(questions, groups, strict=True):
        by.setdefault(g, []).append(q)
    pairs = [p for qs in by.values() for p in itertools.combinations(qs, 2)]
    return {
        "one_word_less": _rate([_jaccard(a, b) >= alike for a, b in less]),
        "different_pairs": len(pairs),
        "different": _rate([_jaccard(a, b) >= alike for a, b in pairs]),
    }


def chinese() -> dict[str, float]:
    import jieba

    jieba.setLogLevel(logging.WARNING)
    passages = {r["_id"]: r["text"] for r in _rows(CMRC / "corpus.jsonl")}
    cases = []
    for r in _rows(CMRC / "questions.jsonl"):
        text, span = passages[r["corpus_id"]], r["answer_spans"][0]
        a, b = _zh_bounds(text, span["start_index"], span["end_index"])
        template = text[a : span["start_index"]] + "\0" + text[span["end_index"] : b]
        cases.append((r["question"], text[a:b].strip(), template.strip(), r["corpus_id"]))
    rnd = random.Random(0)

    def drop(q: str) -> str | None:
        words = list(jieba.cut(q))
        at = [i for i, w in enumerate(words) if re.match(r"\w", w) and not _QUESTION_WORDS.search(w)]
        if not at:
            return None
        words[rnd.choice(at)] = ""
        return "".join(words)

    out = _cases(cases, "什么", "？")
    out |= _duplicates([c[0] for c in cases], [c[3] for c in cases], drop, DUPLICATE_JACCARD_UNSPACED)
    return out


def english() -> dict[str, float]:
    texts: dict[str, str] = {}
    cases = []
    for r in _rows(SQUAD / "questions.jsonl"):
        text = texts.setdefault(r["corpus_id"], (SQUAD / "corpora" / f"{r['corpus_id']}.txt").read_text("utf-8"))
        lo, hi = r["paragraph_span"]
        span = r["answer_spans"][0]
        s, e = span["start_index"], span["end_index"]
        a = max([m.end() for m in re.finditer(r"[.!?]\s+", text[lo:s])] or [0]) + lo
        m = re.search(r"[.!?](\s|$)", text[e:hi])
        b = e + m.end() if m else hi
        cases.append((r["question"], text[a:b].strip(), (text[a:s] + "\0" + text[e:b]).strip(), r["paragraph_id"]))
    rnd = random.Random(0)

    def drop(q: str) -> str | None:
        parts = re.findall(r"\w+|\W+", q)
        at = [i for i, w in enumerate(parts) if re.match(r"\w", w) and w.lower() not in _STOPWORDS]
        if not at:
            return None
        parts[rnd.choice(at)] = ""
        return "".join(parts)

    out = _cases(cases, "what", "?")
    out |= _duplicates([c[0] for c in cases], [c[3] for c in cases], drop, DUPLICATE_JACCARD)
    return out


if __name__ == "__main__":
    for name, measure in (("Chinese, CMRC 2018", chinese), ("English, SQuAD v1.1", english)):
        print(name, json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in measure().items()}))
