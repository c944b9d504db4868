"""BM25 as an inverted index built in one streaming pass: Lucene BM25 (k1 = 1.5, b = 0.75), the
scores bm25s computes, without holding every chunk's tokens as Python objects; over the terms of
bench.text.words in every script (``Tokenizer``), optionally Snowball stems.

Each chunk contributes only its distinct term ids and their counts (compact integer arrays);
the per-(term, chunk) scores are precomputed into a column-compressed matrix, as bm25s does, so
a query adds up one column per query term. Scores equal bm25s's to the last bit: the same
float32 storage, the same float64 intermediates and the same summation order.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable

import numpy as np

from bench.errors import BenchError
from bench.registry import suggest
from bench.text import words
from bench.text.words import TOKENIZERS, UNDETERMINED, LexicalTokenizer

_SCORE_BATCH = 4_000_000  # (term, chunk) entries scored at a time: bounds the float64 temporaries
SCORING = "bm25s-lucene-k1.5-b0.75"
AUTO = "auto"
SETTINGS = ("tokenizer", "language", "stemmer")  # what a [model.NAME] table of a BM25 model may set


def stemmer_languages() -> list[str]:
    """The Snowball stemmers PyStemmer ships ("english", "porter", "german" …)."""
    import Stemmer

    return list(Stemmer.algorithms())


NONE = "none"


def check_stemmer(value: object) -> str | None:
    """A ``stemmer`` setting as given: a Snowball language name, "auto" (the Snowball stemmer of the
    model's language, where there is one), "none", or None (unset: see ``stemmer_for``)."""
    if value is None or value in (AUTO, NONE):
        return value
    languages = stemmer_languages()
    if not isinstance(value, str):
        raise BenchError(f'stemmer = {value!r} must be a Snowball language name, e.g. stemmer = "english"')
    if value not in languages:
        raise BenchError(
            f"stemmer = {value!r} is not a Snowball language; {suggest(value, languages)}"
            f'use one of {", ".join(languages)}, or "auto" for the language\'s own'
        )
    return value


def check_tokenizer(value: object) -> str:
    """A ``tokenizer`` setting: how runs of unspaced scripts are cut (bench.text.words.TOKENIZERS);
    "auto" is kept as given, so that the revision says what it stands for."""
    if not isinstance(value, str):
        raise BenchError(f'tokenizer = {value!r} must be a name, e.g. tokenizer = "auto"; use one of {_names()}')
    try:
        TOKENIZERS.canonical(value)
    except BenchError as e:
        raise BenchError(f"tokenizer = {value!r}: {e}") from None
    return value


def _names() -> str:
    return ", ".join([AUTO, *TOKENIZERS])


def check_language(value: object) -> str:
    """A ``language`` setting: "auto" (the corpus's main language, found when the index is built) or
    an ISO 639-1 code."""
    return AUTO if value == AUTO else words.check_language(value)


def stemmer_for(setting: str | None, language: str) -> str | None:
    """The Snowball stemmer a ``stemmer`` setting stands for in ``language``. Unset, it is the
    language's own, as Lucene's analyzers for those languages stem (Russian, German, Arabic, Hindi …
    inflect too much to match unstemmed), except English: BM25 over English has always been
    reported unstemmed here, and ``bm25-stem`` stems it."""
    if setting == AUTO:
        return words.SNOWBALL.get(language)
    if setting is None:
        return None if language == "en" else words.SNOWBALL.get(language)
    return None if setting == NONE else setting


def revision(stemmer: str | None = None, tokenizer: str = AUTO, language: str = AUTO) -> str:
    """A BM25 model's revision: the scoring and every choice of the tokenizer, so that results of
    different tokenizers (and anything keyed by revision) never pass for one another. With
    ``language = "auto"`` it says the rule; the language found is the built retriever's ``tokenizer``."""
    if language == AUTO:
        stop = "of the main language (bm25s-en when it has no list)"
        stemmer = words.MAIN_BUT_ENGLISH if stemmer is None else None if stemmer == NONE else stemmer
    else:
        stop = words.stopword_list(language)
        stemmer = stemmer_for(stemmer, language)
    return f"{SCORING}; tokens: {words.describe(TOKENIZERS.canonical(tokenizer), stop, stemmer)}"


class Tokenizer:
    """BM25's terms, the same for chunks and questions: lower-cased words and the pieces of
    unspaced scripts (bench.text.words), minus the language's stopwords (bm25s's lists; English's
    for English, an undetermined language or one without a list), then optionally Snowball stems
    (PyStemmer, as bm25s stems). With ``language = "auto"`` it tokenises as for an undetermined
    language until ``use`` names the corpus's."""

    def __init__(self, stemmer: str | None = None, tokenizer: str = AUTO, language: str = AUTO) -> None:
        self.stemmer = check_stemmer(stemmer)
        self.tokenizer = check_tokenizer(tokenizer)
        self.language = check_language(language)
        self.revision = revision(self.stemmer, self.tokenizer, self.language)
        self.use(UNDETERMINED if self.language == AUTO else self.language)

    def use(self, language: str) -> LexicalTokenizer:
        """Tokenise for ``language`` from now on (what ``language = "auto"`` resolves to)."""
        self.resolved = LexicalTokenizer(self.tokenizer, language, stemmer_for(self.stemmer, language))
        self.stopwords = self.resolved.stopwords
        self.counts: Callable[[str], Counter] = self.resolved.counts  # one call less per chunk
        return self.resolved

    def __call__(self, text: str) -> list[str]:
        return self.resolved(text)


class _Vocabulary(dict[str, int]):
    """Term ids in order of first appearance, a missing term added with the next id."""

    def __missing__(self, term: str) -> int:
        self[term] = found = len(self)
        return found


class BM25Index:
    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.vocab: dict[str, int] = {}

    def build(
        self, term_counts: Iterable[Counter], progress: Callable[[int], None] | None = None, every: int = 10_000
    ) -> None:
        """Index documents given as term counts (``Tokenizer.counts``), one at a time
        (``progress(n)`` every ``every`` documents)."""
        vocab = _Vocabulary(self.vocab)
        term_id = vocab.__getitem__  # a new term gets the next id: one C-level look-up per term
        terms, counts, distinct, lengths = array("i"), array("i"), array("i"), array("q")
        n = 0
        for tf in term_counts:
            # Within a document the order of terms does not matter: entries are sorted by term, then document.
            terms.extend(map(term_id, tf))
            counts.extend(tf.values())
            distinct.append(len(tf))
            lengths.append(tf.total())
            n += 1
            if progress and n % every == 0:
                progress(every)
        if progress and n % every:
            progress(n % every)
        self.vocab = dict(vocab)  # a plain dict again: a look-up of an unknown term must not add it
        postings = [terms, counts, distinct, lengths]
        del terms, counts  # _compile lets go of each as soon as it is used up
        self._compile(postings)

    def _compile(self, postings: list[array]) -> None:
        """The columns from the postings ``[terms, counts, distinct, lengths]`` (emptied): each
        per-entry array freed once used, so no more than four of them are held at once."""
        terms_held, counts_held, distinct, lengths_held = postings
        postings.clear()
        terms, counts = np.frombuffer(terms_held, dtype=np.int32), np.frombuffer(counts_held, dtype=np.int32)
        lengths = np.frombuffer(lengths_held, dtype=np.int64)
        n_docs, n_terms = len(lengths), len(self.vocab)
        self.n_docs = n_docs
        doc = np.repeat(np.arange(n_docs, dtype=np.int32), np.frombuffer(distinct, dtype=np.int32))
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
        del counts, counts_held
        order = np.argsort(terms, kind="stable")  # by term, then chunk: one column per term
        del terms, terms_held
        self.indices = doc[order]
        del doc
        self.data = scores[order]
        del order, scores
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
