"""Which language a text is in, and the mix of languages of a corpus or a goldset.

A script that belongs to one language decides first (Hangul → ko, Thai → th, kana among Han →
ja, Han alone → zh); other text goes to a statistical detector that works offline with its model
inside the package. Each document is sampled in a few bounded windows, so a corpus of long
documents costs what a corpus of short ones does.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import regex

UNDETERMINED = "und"
MIN_LETTERS = 12  # fewer letters than this: a name, a number or a code, not a language
WINDOW = 400  # characters per sampled window
WINDOWS = 3  # windows per document: start, middle, end
MIN_CONFIDENCE = 0.5

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

    def to_json(self) -> dict[str, Any]:
        return {"main": self.main, "shares": dict(self.shares), "scripts": dict(self.scripts), "texts": self.texts}


def script_counts(text: str) -> dict[str, int]:
    """Letters of ``text`` per script (Unicode's Script property), scripts with none left out."""
    counts: dict[str, int] = {}
    letters = len(_LETTER.findall(text))
    if not letters:
        return counts
    if text.isascii():
        return {"Latin": letters}
    named = 0
    for name, pattern in _SCRIPT_RE.items():
        n = len(pattern.findall(text))
        if n:
            counts[name] = n
            named += n
    if letters > named:
        counts["Other"] = letters - named
    return counts


def _by_script(counts: dict[str, int]) -> str | None:
    """The language a text's script alone decides, or None when the script is shared."""
    total = sum(counts.values())
    if not total:
        return None
    han = counts.get("Han", 0)
    kana = counts.get("Hiragana", 0) + counts.get("Katakana", 0)
    if han + kana > total / 2:
        # Japanese mixes kana into nearly every sentence; Chinese has none.
        return "ja" if kana >= 0.05 * (han + kana) else "zh"
    script, n = max(counts.items(), key=lambda kv: kv[1])
    if n > total / 2:
        return _SCRIPT_LANGUAGE.get(script)
    return None


@functools.cache
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _statistical(text: str) -> str:
    code, confidence = _identifier().classify(text)
    return str(code) if confidence >= MIN_CONFIDENCE else UNDETERMINED


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
    letters = sum(counts.values())
    cjk = counts.get("Han", 0) + counts.get("Hiragana", 0) + counts.get("Katakana", 0) + counts.get("Hangul", 0)
    # One CJK character carries about what a word of four letters does.
    if letters - cjk + 4 * cjk < MIN_LETTERS:
        return UNDETERMINED
    by_script = _by_script(counts)
    if by_script is not None:
        return by_script
    return _statistical(" ".join(sample.split()))


def _spread(texts: Iterable[str], sample: int) -> Iterable[str]:
    """At most ``sample`` texts: evenly spaced over a sequence, else the first ones."""
    if isinstance(texts, Sequence) and not isinstance(texts, str):
        n = len(texts)
        if n <= sample:
            yield from texts
            return
        for i in range(sample):
            yield texts[i * n // sample]
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
