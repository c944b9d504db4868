"""BM25 as an inverted index built in one streaming pass: Lucene BM25 (k1 = 1.5, b = 0.75), the
scores bm25s computes, without holding every chunk's tokens as Python objects; optionally over
Snowball stems (``Tokenizer(stemmer="english")``).

Each chunk contributes only its distinct term ids and their counts (compact integer arrays);
the per-(term, chunk) scores are precomputed into a column-compressed matrix, as bm25s does, so
a query adds up one column per query term. Scores equal bm25s's to the last bit: the same
float32 storage, the same float64 intermediates and the same summation order.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable

import numpy as np

from bench.errors import BenchError
from bench.registry import suggest

_PATTERN = r"\w+"
_WORD = re.compile(_PATTERN)
_SCORE_BATCH = 4_000_000  # (term, chunk) entries scored at a time: bounds the float64 temporaries
SCORING = "bm25s-lucene-k1.5-b0.75"


def stemmer_languages() -> list[str]:
    """The Snowball stemmers PyStemmer ships ("english", "porter", "german" …)."""
    import Stemmer

    return list(Stemmer.algorithms())


def check_stemmer(value: object) -> str | None:
    """A ``stemmer`` setting as given (a Snowball language name, or None for no stemming)."""
    if value is None:
        return None
    languages = stemmer_languages()
    if not isinstance(value, str):
        raise BenchError(f'stemmer = {value!r} must be a Snowball language name, e.g. stemmer = "english"')
    if value not in languages:
        raise BenchError(
            f"stemmer = {value!r} is not a Snowball language; {suggest(value, languages)}"
            f"use one of {', '.join(languages)}"
        )
    return value


def revision(stemmer: str | None = None) -> str:
    """A BM25 model's revision: the scoring and every choice of the tokenizer, so that stemmed and
    unstemmed results (and anything keyed by revision) never pass for one another."""
    stem = f"snowball-{stemmer}" if stemmer else "none"
    return f"{SCORING}; tokens: lowercase, {_PATTERN}, stopwords bm25s-en, stemmer {stem}"


class _Stems(dict[str, str | None]):
    """word → what the index stores: its stem, computed once per distinct word; None for a stopword."""

    def __init__(self, stemmer: str | None, stopwords: frozenset[str]) -> None:
        super().__init__(dict.fromkeys(stopwords))  # stopwords go before stemming, as in bm25s
        self._stem = _stem_function(stemmer)

    def __missing__(self, word: str) -> str | None:
        stem = self[word] = self._stem(word)
        return stem


def _stem_function(stemmer: str | None) -> Callable[[str], str]:
    if stemmer is None:
        return str
    import Stemmer

    return Stemmer.Stemmer(stemmer).stemWord


class Tokenizer:
    """Lower-cased words (``\\w+``) minus English stopwords (bm25s's list), then optionally
    Snowball stems (PyStemmer, as bm25s stems): the same for chunks and questions."""

    def __init__(self, stemmer: str | None = None) -> None:
        from bm25s.stopwords import STOPWORDS_EN

        self.stemmer = check_stemmer(stemmer)
        self.stopwords = frozenset(STOPWORDS_EN)
        self.revision = revision(self.stemmer)
        self._stems = _Stems(self.stemmer, self.stopwords) if self.stemmer else None

    def __call__(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        if self._stems is None:
            stop = self.stopwords
            return [w for w in words if w not in stop]
        return [s for s in map(self._stems.__getitem__, words) if s is not None]

    def counts(self, text: str) -> Counter:
        """Each term's count in ``text``: what indexing needs, counted without a list of every word."""
        words = _WORD.findall(text.lower())
        if self._stems is not None:
            # Dict look-ups per occurrence; the stemmer runs once per distinct word of the corpus.
            counts = Counter(map(self._stems.__getitem__, words))
            counts.pop(None, None)
            return counts
        counts = Counter(words)
        for word in self.stopwords.intersection(counts):
            del counts[word]
        return counts


class BM25Index:
    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.vocab: dict[str, int] = {}

    def build(
        self, term_counts: Iterable[Counter], progress: Callable[[int], None] | None = None, every: int = 10_000
    ) -> None:
        """Index documents given as term counts (``Tokenizer.counts``), one at a time
        (``progress(n)`` every ``every`` documents)."""
        vocab = self.vocab
        terms, counts, distinct, lengths = array("i"), array("i"), array("i"), array("q")
        n = 0
        for tf in term_counts:
            # Within a document the order of terms does not matter: entries are sorted by term, then document.
            terms.extend([vocab.setdefault(w, len(vocab)) for w in tf])
            counts.extend(tf.values())
            distinct.append(len(tf))
            lengths.append(tf.total())
            n += 1
            if progress and n % every == 0:
                progress(every)
        if progress and n % every:
            progress(n % every)
        self._compile(
            np.frombuffer(terms, dtype=np.int32),
            np.frombuffer(counts, dtype=np.int32),
            np.frombuffer(distinct, dtype=np.int32),
            np.frombuffer(lengths, dtype=np.int64),
        )

    def _compile(self, terms: np.ndarray, counts: np.ndarray, distinct: np.ndarray, lengths: np.ndarray) -> None:
        n_docs, n_terms = len(lengths), len(self.vocab)
        self.n_docs = n_docs
        doc = np.repeat(np.arange(n_docs, dtype=np.int32), distinct)
        df = np.bincount(terms, minlength=n_terms)
        # bm25s: idf in float32 from math.log; tf component in float64 against the mean length
        idf = np.array([math.log(1 + (n_docs - f + 0.5) / (f + 0.5)) for f in df.tolist()], dtype=np.float32)
        l_avg = lengths.mean() if n_docs else np.float64(0)
        norm = self.k1 * ((1 - self.b) + self.b * lengths / l_avg) if n_docs and l_avg else np.zeros(n_docs)
        scores = np.empty(len(terms), dtype=np.float32)
        for lo in range(0, len(terms), _SCORE_BATCH):
            part = slice(lo, lo + _SCORE_BATCH)
            tf = counts[part].astype(np.float32)
            scores[part] = idf[terms[part]] * (tf / (norm[doc[part]] + tf))
        order = np.argsort(terms, kind="stable")  # by term, then chunk: one column per term
        self.indices = doc[order]
        self.data = scores[order]
        del order, scores, doc
        self.indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(df, out=self.indptr[1:])

    def scores(self, tokens: list[str]) -> np.ndarray:
        """float32 score of every document; 0 where no query term occurs. Repeated terms count again."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        for w in tokens:
            t = self.vocab.get(w)
            if t is None:
                continue
            s, e = self.indptr[t], self.indptr[t + 1]
            out[self.indices[s:e]] += self.data[s:e]  # a column lists each document once
        return out

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes + self.indices.nbytes + self.indptr.nbytes)
