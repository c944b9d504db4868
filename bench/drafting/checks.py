"""Which questions a chat model proposed are kept: every quote resolves in its document (as a reader
copies it), the question does not copy its evidence, and it is no near-duplicate of one kept before.
Each question dropped is counted by its reason.

Both checks compare content terms: words of spaced scripts less English stopwords, and character
bigrams of runs of unspaced scripts (Chinese, Japanese, Thai …), where no space marks a word. Chinese
question words break a run the way a stopword leaves an English question: "什么", like "what", is what
a question adds to the sentence it asks about. Measured on CMRC 2018 (3,219 questions people wrote
from Chinese Wikipedia passages) against SQuAD (10,570 from English ones), "copies its evidence"
fires on the answer's sentence copied verbatim in both (100%), on that sentence with its answer
replaced by the question word in 97% (English 99%), and on the real questions in 18% (English 13%).
A bigram Jaccard drops more than a word Jaccard when a word is left out (the bigrams across the gap
are new), so questions in unspaced scripts are near-duplicates from 0.7: a question less one of its
words is then caught in 66% of cases (English at 0.8: 69%), two different questions on one passage
in 0.1% (English 0.5%). ``python -m tests.drafting.copy_rates`` measures them again. Japanese and
Thai are compared by bigrams too, with no question words of theirs left out (not measured).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from bench.drafting.draft import Span
from bench.inputs.corpus import Corpus
from bench.inputs.quotes import QuoteError, find_quote
from bench.llm.client import json_in_reply
from bench.text.scripts import collapse_spaces, has_unspaced
from bench.text.words import content_terms

# What a call showed the model: (document id, start, end) of each passage.
Shown = tuple[tuple[str, int, int], ...]

INVENTED, UNKNOWN_DOC, COPYING, DUPLICATE = (
    "invented quote",
    "unknown document",
    "copies its evidence",
    "near-duplicate",
)
MALFORMED, UNPARSABLE, EMPTY = "malformed question", "unparsable reply", "empty reply"
COPY_IN_ORDER, COPY_JACCARD, DUPLICATE_JACCARD = 0.8, 0.7, 0.8
DUPLICATE_JACCARD_UNSPACED = 0.7  # for a question in an unspaced script: its terms are bigrams
_STOPWORD_TEXT = """a an the and or but if of to in on at by for with from as into about over under than then so
is are was were be been being am do does did done have has had having can could will would shall should may
might must not no nor this that these those it its there here what which who whom whose when where why how
i me my we our you your he she they them their his her us any all some each get gets got"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Chinese question words (simplified and traditional), longest first; each is replaced by a break (no
# bigram across it). "哪" covers 哪个, 哪些, 哪里 …; "几" 几年, 几个 ….
_QUESTION_WORDS = re.compile("为什么|為什麼|为何|為何|什么|什麼|怎么|怎麼|怎样|怎樣|如何|多少|哪|谁|誰|几|幾|吗|嗎|呢")


def parse_reply(text: str) -> list | None:
    """The list of questions in a reply (``{"questions": [...]}`` or a bare list); None when there is none."""
    obj = json_in_reply(text)
    found = obj.get("questions") if isinstance(obj, dict) else obj
    return found if isinstance(found, list) else None


def content_words(text: str) -> list[str]:
    """The terms a question is compared by (``content_terms``: words, and bigrams in unspaced
    scripts) less English stopwords and Chinese question words; all of its terms when none would be left."""
    bare = _QUESTION_WORDS.sub(" ", text) if has_unspaced(text) else text
    terms = content_terms(bare)
    return [w for w in terms if w not in _STOPWORDS] or (terms if bare is text else content_terms(text))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _in_order(q: list[str], quote: list[str]) -> int:
    """Length of the longest run of ``q``'s words found in order (not necessarily adjacent) in ``quote``."""
    row = [0] * (len(quote) + 1)
    for w in q:
        prev = 0
        for j, v in enumerate(quote, 1):
            prev, row[j] = row[j], prev + 1 if w == v else max(row[j], row[j - 1])
    return row[-1]


def copies(question: str, quote: str) -> bool:
    """Whether a question is its quote reworded too little to test retrieval rather than word matching."""
    q, t = content_words(question), content_words(quote)
    if len(q) >= 3 and _in_order(q, t) >= COPY_IN_ORDER * len(q):
        return True
    return _jaccard(set(q), set(t)) >= COPY_JACCARD


@dataclass(frozen=True)
class Kept:
    question: str
    evidence: tuple[Span, ...]
    shown: Shown  # the passages of the call that proposed it


class QuestionChecks:
    """Keeps or drops each proposed question, in call order, counting why."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.dropped: Counter[str] = Counter()
        self.kept: list[Kept] = []
        self._words: list[set[str]] = []

    def read(self, shown: Shown, reply: str, room: int) -> None:
        """Check the questions of one reply to a call that showed ``shown``, keeping no more than ``room`` in all."""
        if not reply.strip():
            self.dropped[EMPTY] += 1
            return
        items = parse_reply(reply)
        if items is None:
            self.dropped[UNPARSABLE] += 1
        elif not items:
            self.dropped[EMPTY] += 1
        for item in items or ():
            if len(self.kept) >= room:
                return
            why = self._check(item, shown)
            if why:
                self.dropped[why] += 1

    def _check(self, item: object, shown: Shown) -> str | None:
        if not isinstance(item, dict) or not isinstance(item.get("question"), str) or not item["question"].strip():
            return MALFORMED
        evidence = item.get("evidence")
        if not isinstance(evidence, list) or not evidence:
            return MALFORMED
        question, spans = collapse_spaces(item["question"]), []
        for e in evidence:
            if not isinstance(e, dict) or not isinstance(e.get("doc"), str) or not isinstance(e.get("quote"), str):
                return MALFORMED
            if e["doc"] not in self.corpus:
                return UNKNOWN_DOC
            found = self._resolve(shown, e["doc"], e["quote"])
            if found is None:
                return INVENTED
            if copies(question, e["quote"]):
                return COPYING
            span = Span(e["doc"], *found, grade=2)
            if span not in spans:
                spans.append(span)
        words = set(content_words(question))
        alike = DUPLICATE_JACCARD_UNSPACED if has_unspaced(question) else DUPLICATE_JACCARD
        if any(_jaccard(words, earlier) >= alike for earlier in self._words):
            return DUPLICATE
        self._words.append(words)
        self.kept.append(Kept(question, tuple(spans), shown))
        return None

    def _resolve(self, shown: Shown, doc: str, quote: str) -> tuple[int, int] | None:
        """The quote's span in its document; a quote found more than once there counts where it is
        once in a passage the model was shown."""
        text = self.corpus.get(doc).text
        try:
            return find_quote(text, quote)
        except QuoteError:
            pass
        for d, start, end in shown:
            if d == doc:
                try:
                    s, e = find_quote(text[start:end], quote)
                    return start + s, start + e
                except QuoteError:
                    continue
        return None
