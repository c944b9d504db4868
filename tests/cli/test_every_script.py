"""Every command over a corpus and a goldset in many scripts, and in random Unicode: each one
exits 0 and prints no traceback; what a reader sees of the questions and documents is kept."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.helpers import finished_runs, run_cli

# One document per script, each with a sentence a question quotes (as a reader copies it: the
# Chinese quote without the line break the document has inside it).
DOCS = {
    "zh.md": (
        "# 电池\n\n扫地机器人的电池每隔十八个\n月需要更换一次。更换时请使用原厂电池；旧电池交回门店。\n",
        "每隔十八个月需要更换一次",
    ),
    "ja.md": (
        "# バッテリー\n\nロボット掃除機のバッテリーは十八か月ごとに交換してください。\n",
        "十八か月ごとに交換してください",
    ),
    "ko.md": ("# 배터리\n\n로봇 청소기의 배터리는 십팔 개월마다 교체해야 합니다.\n", "십팔 개월마다 교체해야 합니다"),
    "th.md": ("# แบตเตอรี่\n\nควรเปลี่ยนแบตเตอรี่ของหุ่นยนต์ดูดฝุ่นทุกสิบแปดเดือน ครับ\n", "ทุกสิบแปดเดือน"),
    "hi.md": ("# बैटरी\n\nरोबोट वैक्यूम की बैटरी हर अठारह महीने में बदलनी चाहिए।\n", "हर अठारह महीने में बदलनी चाहिए"),
    "ar.md": ("# البطارية\n\nيجب استبدال بطارية المكنسة الآلية كل ثمانية عشر شهرا.\n", "كل ثمانية عشر شهرا"),
    "ru.md": (
        "# Батарея\n\nБатарею робота-пылесоса нужно менять каждые восемнадцать месяцев.\n",
        "каждые восемнадцать месяцев",
    ),
    "en.md": (
        "# Battery\n\nThe robot vacuum's battery must be replaced every eighteen months.\n",
        "every eighteen months",
    ),
}
QUESTIONS = {
    "zh.md": "电池多久换一次？",
    "ja.md": "バッテリーはいつ交換しますか？",
    "ko.md": "배터리는 얼마나 자주 교체하나요?",
    "th.md": "ควรเปลี่ยนแบตเตอรี่บ่อยแค่ไหน",
    "hi.md": "बैटरी कितनी बार बदलनी चाहिए?",
    "ar.md": "كم مرة يجب استبدال البطارية؟",
    "ru.md": "Как часто менять батарею?",
    "en.md": "How often is the battery replaced?",
}

# Characters a text can hold that trip naive code: combining marks, a variation selector, an emoji
# sequence joined by ZWJ, bidi and zero-width marks, full-width forms, Han beyond the basic plane,
# private use, a non-character, Tibetan, Mongolian, Hebrew and a letter outside every font.
_ODD = (
    "e\u0301 a\u0308\u0323 \u2764\ufe0f \U0001f469\u200d\U0001f4bb \u200f\u202e\u200b\ufeff \uff21\uff0c\uff1f "
    "\U00020000\U0002a6d6 \ue000\U000f0000 \ufdd0 \u0f40\u0f72 \u1820\u1821 \u05e9\u05dc\u05d5\u05dd \U0001e900"
)
_RANGES = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x52F), (0x590, 0x6FF), (0x900, 0x97F),
           (0xE00, 0xE7F), (0x1100, 0x11FF), (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
           (0xFF00, 0xFFEF), (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF)]  # fmt: skip


def _random_text(rng: random.Random, n: int) -> str:
    chars = []
    for _ in range(n):
        lo, hi = rng.choice(_RANGES)
        chars.append(chr(rng.randint(lo, hi)) if rng.random() > 0.15 else rng.choice(" \n\n，。"))
    return "".join(chars)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("every-script")
    rng = random.Random(27)
    (root / "corpus").mkdir()
    for name, (text, _) in DOCS.items():
        (root / "corpus" / name).write_text(text, encoding="utf-8")
    for i in range(4):
        (root / "corpus" / f"random-{i}.txt").write_text(_random_text(rng, 400) + _ODD, encoding="utf-8")
    lines = [
        {"id": f"q-{name[:2]}", "question": QUESTIONS[name], "evidence": [{"doc": name, "quote": quote}]}
        for name, (_, quote) in DOCS.items()
    ]
    lines += [
        {
            "id": f"q-random-{i}",
            "question": _random_text(rng, 60) + _ODD[i * 9 : i * 9 + 12],
            "evidence": [{"doc": "en.md", "quote": DOCS["en.md"][1]}],
        }
        for i in range(3)
    ]
    lines = [{**q, "evidence": [{**e, "grade": 1} for e in q["evidence"]]} for q in lines]
    (root / "gold.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in lines), "utf-8")
    (root / "bench.toml").write_text(
        'corpus = "corpus"\ngoldset = "gold.jsonl"\nresults = "results"\ncache_dir = "cache"\nk = 3\n'
        'models = ["hash", "bm25"]\nfusions = ["hash+bm25"]\nexclude = ["hash/sent/*", "hash+bm25/sent/*"]\n\n'
        '[chunkers.tok24]\nkind = "tokens"\nsize = 24\noverlap = 4\n\n'
        '[chunkers.rec24]\nkind = "recursive"\nsize = 24\n\n'
        '[chunkers.sent]\nkind = "sentences"\nsentences = 2\noverlap = 1\nsize = 24\n',
        encoding="utf-8",
    )
    return root


def _ok(*args: str, cwd: Path, reports: bool = False) -> str:
    result = run_cli(*args, cwd=cwd, reports=reports)
    assert result.returncode == 0, f"bench {' '.join(args)}: {result.stderr}"
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result.stdout


def test_every_command_reads_every_script(project: Path):
    _ok("goldset", "validate", "gold.jsonl", "--corpus", "corpus", cwd=project)
    _ok("goldset", "lock", "gold.jsonl", "--corpus", "corpus", cwd=project)
    _ok("goldset", "stats", "gold.jsonl", "--corpus", "corpus", cwd=project)
    _ok("corpus", "stats", "corpus", cwd=project)
    _ok("chunk", "bench.toml", cwd=project)
    _ok("run", "bench.toml", cwd=project)  # its reports are drawn by `bench report` below
    [run] = finished_runs(project / "results")
    for args in (
        ("report", str(run)),
        ("compare", str(run)),
        ("history",),
        ("check", str(run), "--baseline", str(run)),
    ):
        _ok(*args, cwd=project)
    _ok("export", str(run), "--format", "trec", "--out", str(project / "export"), cwd=project)
    assert (run / "report.pdf").stat().st_size > 0 and (run / "inspector.html").is_file()

    records = [json.loads(line) for line in (run / "per_question.jsonl").read_text(encoding="utf-8").splitlines()]
    for record in records:  # BM25 finds each scripted question's own document first
        if record["candidate"] == "bm25/rec24/inverted" and not record["question_id"].startswith("q-random"):
            assert record["ranking"][0]["doc_id"][:2] == record["question_id"][2:], record["question_id"]
    inspector = (run / "inspector.html").read_text(encoding="utf-8")
    for question in QUESTIONS.values():  # the questions as written, every script
        assert json.dumps(question, ensure_ascii=False)[1:-1] in inspector or question in inspector
