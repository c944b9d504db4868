"""Lexical tokenizers: the terms a text is matched by (BM25, the hashing embedder, overlap checks),
right in every script.

A text is lower-cased and cut into words: runs of word characters as Python's ``re`` reads ``\\w``,
plus combining marks, so a Devanagari virama or an Arabic vowel sign stays in its word. On a text
whose lower case holds no mark and no character of an unspaced script the words are exactly
``re.findall(r"\\w+", text.lower())``, so English tokenises as it always has (``regex``'s own
``\\w`` differs from ``re``'s on ``½``, ``²`` or ``Ⓐ``, so it is not used for words).

Scripts written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar) have no words to find by
spaces; their runs are cut by a segmenter of :data:`TOKENIZERS` over grapheme clusters, so a Thai
vowel sign never leaves its consonant: ``unigrams``, ``bigrams``, ``unigrams+bigrams``, ``words``
(the run kept whole, as ``\\w+`` did), ``jieba`` and ``jieba-search`` (Chinese words from jieba's
dictionary; Thai and the rest as unigrams+bigrams). Then stopwords of the language go (bm25s's lists;
English's for a language without one, and with Chinese, Korean and Russian) and, optionally, Snowball
stems.

``auto`` is unigrams+bigrams, measured best on CMRC 2018 (848 Chinese Wikipedia passages, 3,219
questions; BM25 with Chinese stopwords; ``benchmarks/lexical_tokenizers.py``): nDCG@10 0.991
against 0.989 for bigrams, 0.986 for jieba's search mode, 0.985 for jieba, 0.973 for unigrams,
0.229 for unspaced runs kept whole and 0.166 for the ``\\w+`` words BM25 read before (2,661 questions
without a single match). Cut into 150-character pieces it leads too: 0.878 against 0.864 (bigrams)
and 0.852 (jieba). Chinese stopwords add 0.005.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import regex

from bench.errors import BenchError
from bench.registry import Registry, suggest
from bench.text.scripts import CJK_CLASS, GRAPHEME, PHRASED_CLASS, UNSPACED, UNSPACED_CLASS

_WORD = re.compile(r"\w+")  # what BM25 read before; on text without marks, the words below
# A word's pieces: CJK runs, runs of the other unspaced scripts, and what lies between, each with the
# marks and other grapheme extenders that follow its characters (a Thai mark on a Latin letter
# stays with it; so do Thai ำ and the half-width voicing marks ﾞ ﾟ, letters that extend a cluster).
_EXTENDER = r"[\p{M}\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=SpacingMark}]"
_EXTEND = _EXTENDER + "*"
_ONLY_EXTENDERS = regex.compile(_EXTENDER + "+")
_PIECE = regex.compile(
    rf"(?P<cjk>(?:[{CJK_CLASS}]{_EXTEND})+)|(?P<other>(?:[{PHRASED_CLASS}]{_EXTEND})+)"
    rf"|(?:[^{UNSPACED_CLASS}]{_EXTEND})+"
)
_HAN = regex.compile(r"\p{Han}+")  # a run of ideographs only: each character is a grapheme cluster

# Marks lie below U+20000 and in the variation selectors' supplement (a test checks every code point).
_MARK_PLANES = (range(0x20000), range(0xE0000, 0xE1000))


def _ranges(codepoints: Iterable[int]) -> str:
    """Sorted code points as the ranges of a character class."""
    spans: list[list[int]] = []
    for cp in codepoints:
        if spans and spans[-1][1] == cp - 1:
            spans[-1][1] = cp
        else:
            spans.append([cp, cp])
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in spans)


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Words: ``\\w`` as ``re`` reads it plus every combining mark of Python's Unicode; and a quick
    test for text that needs them or a segmenter: a mark or an unspaced character of the BMP, or any
    character beyond it. The test's class ``re`` looks up in a table; the word pattern's, with marks
    beyond the BMP, it scans, three times slower than ``\\w+``, which is why text that fails the
    test (Latin, Greek, Cyrillic … without marks) is cut by ``\\w+``: the same words."""
    marks = [cp for plane in _MARK_PLANES for cp in plane if unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me")]
    special = sorted({*(cp for cp in marks if cp < 0x10000), *(cp for cp in range(0x10000) if UNSPACED.match(chr(cp)))})
    return re.compile(rf"[\w{_ranges(marks)}]+"), re.compile(f"[{_ranges(special)}\\U00010000-\\U0010ffff]")


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``, marks kept, unspaced runs left whole."""
    low = text.lower()
    if text.isascii():
        return _WORD.findall(low)
    word, special = _patterns()
    return (_WORD if special.search(low) is None else word).findall(low)


def graphemes(run: str) -> list[str]:
    """The grapheme clusters of a run of an unspaced script: its characters, a mark kept with its letter."""
    return list(run) if _HAN.fullmatch(run) else GRAPHEME.findall(run)


def _bigrams(units: list[str]) -> list[str]:
    """Adjacent pairs; a run of one unit is that unit, so a one-character word is still found."""
    return [a + b for a, b in zip(units, units[1:])] if len(units) > 1 else units


def _unigrams_bigrams(run: str, cjk: bool) -> list[str]:
    units = graphemes(run)
    return units + _bigrams(units) if len(units) > 1 else units


_JIEBA_LOCK = threading.Lock()
_JIEBA: list[Any] = []  # jieba's tokenizer, once loaded


def jieba_tokenizer() -> Any:
    """jieba's tokenizer over the dictionary inside its package, loaded once (about 60 MB) for
    every stage that cuts Chinese into words, and quietly."""
    if not _JIEBA:
        with _JIEBA_LOCK:
            if not _JIEBA:
                import jieba

                # loading logs at DEBUG, and at ERROR a cache file it cannot write: neither is the user's concern
                jieba.setLogLevel(logging.CRITICAL)
                tokenizer = jieba.Tokenizer()
                tokenizer.initialize()
                jieba.setLogLevel(logging.WARNING)
                _JIEBA.append(tokenizer)
    return _JIEBA[0]


@dataclass(frozen=True)
class Segmenter:
    """How a run of an unspaced script becomes terms: ``split(run, cjk)``, ``cjk`` telling a Han or
    kana run from a Thai, Lao, Khmer or Myanmar one. ``about`` is what the revision says of it."""

    name: str
    split: Callable[[str, bool], list[str]]
    about: str


TOKENIZERS: Registry[Segmenter] = Registry("lexical tokenizer")


def _register(name: str, split: Callable[[str, bool], list[str]], about: str, aliases: tuple[str, ...] = ()) -> None:
    TOKENIZERS.register(name, Segmenter(name, split, about), aliases)


_register("words", lambda run, cjk: [run], "kept whole")
_register("unigrams", lambda run, cjk: graphemes(run), "unigrams of graphemes")
_register("bigrams", lambda run, cjk: _bigrams(graphemes(run)), "bigrams of graphemes")
_register("unigrams+bigrams", _unigrams_bigrams, "unigrams+bigrams of graphemes", aliases=("auto",))


def _jieba_words(run: str, search: bool) -> list[str]:
    """jieba's words of a CJK run (kana one by one, as jieba cuts what it has no word for).

    jieba cuts a voicing mark or a variation selector from its character: every word that ends
    before one takes it back (in search mode a word's pieces too), so no term splits a character."""
    out: list[str] = []
    for word, start, end in jieba_tokenizer().tokenize(run, mode="search" if search else "default"):
        if _ONLY_EXTENDERS.fullmatch(word):
            if start == 0:  # nothing before it to belong to
                out.append(word)
            continue
        marks = _ONLY_EXTENDERS.match(run, end)
        out.append(word + marks.group() if marks else word)
    return out


_register(
    "jieba",
    lambda run, cjk: _jieba_words(run, False) if cjk else _unigrams_bigrams(run, cjk),
    "jieba words (Thai, Lao, Khmer, Myanmar unigrams+bigrams of graphemes)",
)
_register(
    "jieba-search",
    lambda run, cjk: _jieba_words(run, True) if cjk else _unigrams_bigrams(run, cjk),
    "jieba search-mode words (Thai, Lao, Khmer, Myanmar unigrams+bigrams of graphemes)",
)


def segment(text: str, segmenter: Segmenter | str = "auto") -> list[str]:
    """The terms of ``text`` before stopwords: lower-cased words (marks kept), unspaced runs cut by
    ``segmenter``, in the order they occur."""
    low = text.lower()
    if text.isascii():
        return _WORD.findall(low)
    pattern, special = _patterns()
    if special.search(low) is None:
        return _WORD.findall(low)
    found = pattern.findall(low)
    if UNSPACED.search(low) is None:
        return found
    split = (segmenter if isinstance(segmenter, Segmenter) else TOKENIZERS.get(segmenter)).split
    out: list[str] = []
    for word in found:
        if UNSPACED.search(word) is None:
            out.append(word)
            continue
        for m in _PIECE.finditer(word):
            if m.lastgroup is None:
                out.append(m.group())
            else:
                out.extend(t for t in split(m.group(), m.lastgroup == "cjk") if t)
    return out


def content_terms(text: str) -> list[str]:
    """Terms for word-overlap checks: lower-cased words of spaced scripts, character bigrams of
    unspaced runs (a run of one character is that character); no stopwords removed."""
    return segment(text, TOKENIZERS.get("bigrams"))


# bm25s's stopword lists by ISO 639-1 code. A language written in other letters than Latin gets
# English's too (English words in its text are English; in French, "an" and "on" are words); a
# language without a list gets English's, as does an undetermined one ("und").
_STOPWORDS = {
    "en": ("en",),
    "zh": ("zh", "en"),
    "ko": ("ko", "en"),
    "ru": ("ru", "en"),
    "da": ("da",),
    "nl": ("nl",),
    "fr": ("fr",),
    "de": ("de",),
    "it": ("it",),
    "no": ("no",),
    "nb": ("no",),
    "pt": ("pt",),
    "es": ("es",),
    "sv": ("sv",),
    "tr": ("tr",),
}
_BM25S_LISTS = {
    "en": "STOPWORDS_EN", "zh": "STOPWORDS_CHINESE", "ko": "STOPWORDS_KOREAN", "ru": "STOPWORDS_RUSSIAN",
    "da": "STOPWORDS_DANISH", "nl": "STOPWORDS_DUTCH", "fr": "STOPWORDS_FRENCH", "de": "STOPWORDS_GERMAN",
    "it": "STOPWORDS_ITALIAN", "no": "STOPWORDS_NORWEGIAN", "pt": "STOPWORDS_PORTUGUESE",
    "es": "STOPWORDS_SPANISH", "sv": "STOPWORDS_SWEDISH", "tr": "STOPWORDS_TURKISH",
}  # fmt: skip
# PyStemmer's Snowball stemmers by ISO 639-1 code.
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish",
    "nl": "dutch", "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french",
    "de": "german", "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish",
    "it": "italian", "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian", "fa": "persian",
    "pl": "polish", "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "st": "sesotho",
    "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
UNDETERMINED = "und"
MAIN_BUT_ENGLISH = "main-but-english"  # BM25's stemmer when unset: the main language's, none for English
# Languages bench knows by code: those with a list or a stemmer, and the unspaced and other common ones.
LANGUAGES = frozenset(
    {*_STOPWORDS, *SNOWBALL, UNDETERMINED, "ja", "th", "lo", "km", "my", "vi", "he", "uk", "bg", "bn", "ur", "ms"}
)
_MISTAKEN = {"cn": "zh", "jp": "ja", "kr": "ko", "cz": "cs", "gr": "el", "dk": "da", "se": "sv", "ua": "uk"}


def check_language(value: object) -> str:
    """A ``language`` setting: an ISO 639-1 code bench knows, or "und"."""
    if not isinstance(value, str):
        raise BenchError(f'language = {value!r} must be an ISO 639-1 code, e.g. language = "zh"')
    if value not in LANGUAGES:
        hint = f"did you mean {_MISTAKEN[value]!r}? " if value in _MISTAKEN else suggest(value, sorted(LANGUAGES))
        raise BenchError(f"language = {value!r} is not an ISO 639-1 code bench knows; {hint}use one of "
                         f"{', '.join(sorted(LANGUAGES))}")  # fmt: skip
    return value


def stopword_list(language: str) -> str:
    """The name of the stopwords ``language`` gets: ``bm25s-en``, ``bm25s-zh+en`` …"""
    return "bm25s-" + "+".join(_STOPWORDS.get(language, ("en",)))


def stopwords(language: str) -> frozenset[str]:
    import bm25s.stopwords

    lists = _STOPWORDS.get(language, ("en",))
    return frozenset(w for name in lists for w in getattr(bm25s.stopwords, _BM25S_LISTS[name]))


class _Stems(dict[str, str | None]):
    """word → what is kept: its stem, computed once per distinct word; None for a stopword."""

    def __init__(self, stemmer: str, stop: frozenset[str]) -> None:
        import Stemmer

        super().__init__(dict.fromkeys(stop))  # stopwords go before stemming, as in bm25s
        self._stem = Stemmer.Stemmer(stemmer).stemWord

    def __missing__(self, word: str) -> str | None:
        stem = self[word] = self._stem(word)
        return stem


def describe(segmenter: str, stop: str, stemmer: str | None) -> str:
    """The tokenizer in words, for a revision: every choice that changes a term (``stemmer = "auto"``:
    the main language's, found later)."""
    about = TOKENIZERS.get(segmenter).about
    stem = (
        "none"
        if not stemmer
        else "snowball of the main language"
        if stemmer == "auto"
        else "snowball of the main language, none for English"
        if stemmer == MAIN_BUT_ENGLISH
        else f"snowball-{stemmer}"
    )
    return rf"lowercase, \w+ with marks, unspaced runs {about}, stopwords {stop}, stemmer {stem}"


class LexicalTokenizer:
    """Terms of a text: words, unspaced runs by ``segmenter``, minus ``language``'s stopwords (none
    with ``use_stopwords=False``), then Snowball stems when ``stemmer`` names one."""

    def __init__(
        self,
        segmenter: str = "auto",
        language: str = UNDETERMINED,
        stemmer: str | None = None,
        use_stopwords: bool = True,
    ) -> None:
        self.segmenter = TOKENIZERS.canonical(segmenter)
        self._segmenter = TOKENIZERS.get(segmenter)
        self.language, self.stemmer = language, stemmer
        self.stopword_list = stopword_list(language) if use_stopwords else "none"
        self.stopwords = stopwords(language) if use_stopwords else frozenset()
        self.revision = describe(self.segmenter, self.stopword_list, stemmer)
        self._stems = _Stems(stemmer, self.stopwords) if stemmer else None

    @property
    def summary(self) -> str:
        """The choices in short: ``zh: unigrams+bigrams, stopwords bm25s-zh+en, stemmer none``."""
        return f"{self.language}: {self.segmenter}, stopwords {self.stopword_list}, stemmer {self.stemmer or 'none'}"

    def __repr__(self) -> str:
        return f"LexicalTokenizer(language {self.language}: {self.revision})"

    def __call__(self, text: str) -> list[str]:
        terms = segment(text, self._segmenter)
        if self._stems is None:
            stop = self.stopwords
            return [w for w in terms if w not in stop] if stop else terms
        return [s for s in map(self._stems.__getitem__, terms) if s is not None]

    def counts(self, text: str) -> Counter:
        """Each term's count in ``text``: what indexing needs, counted without a list of every term."""
        terms = segment(text, self._segmenter)
        if self._stems is not None:
            # Dict look-ups per occurrence; the stemmer runs once per distinct word of the corpus.
            counts = Counter(map(self._stems.__getitem__, terms))
            counts.pop(None, None)
            return counts
        counts = Counter(terms)
        for word in self.stopwords.intersection(counts):
            del counts[word]
        return counts
