"""Questions as people type them: each perturbation does what it says, nothing else, and the same
seed and id always give the same text."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from bench.text.perturb import KINDS, NEIGHBOURS, perturbed
from tests.helpers import finished_runs, run_cli, write_project

QUESTION = "How many vacation days do full-time employees accrue per year?"


def test_typos_are_keyboard_slips_in_latin_words():
    typed = perturbed(QUESTION, "typos", "q1")
    assert typed != QUESTION and typed == perturbed(QUESTION, "typos", "q1")  # deterministic
    assert perturbed(QUESTION, "typos", "q1", seed=1) != typed or perturbed(QUESTION, "typos", "q2") != typed
    words, slipped = QUESTION.split(), typed.split()
    assert len(words) == len(slipped)
    changed = [(a, b) for a, b in zip(words, slipped) if a != b]
    assert 1 <= len(changed) <= 3
    for a, b in changed:
        assert abs(len(a) - len(b)) <= 1 and len(a) >= 3
    assert set(NEIGHBOURS["a"]) == {"q", "w", "s", "z"} and set(NEIGHBOURS["g"]) == {"f", "h", "t", "y", "v", "b"}
    chinese = "《战国无双3》是由哪两个公司合作开发的？"
    assert perturbed(chinese, "typos", "q1") == chinese  # no Latin word of three letters: left as typed


def test_case_punctuation_and_width():
    assert perturbed("Où est le Café, SVP?", "case", "q") == "où est le café, svp?"
    assert perturbed("Où est le Café, SVP?", "punctuation", "q") == "Ou est le Cafe SVP"
    assert perturbed("नमस्ते, दुनिया!", "punctuation", "q") == "नमस्ते दुनिया"  # vowel signs are not accents
    assert perturbed("“Full-time” (FT) staff…", "punctuation", "q") == "Full time FT staff"
    assert perturbed("ＡＢＣ１２３，ok", "width", "q") == "ABC123,ｏｋ"
    assert perturbed("《战国无双3》是由哪两个公司", "width", "q") == "《战国无双３》是由哪两个公司"


@given(st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E) | st.sampled_from("战国ＡＢ１，")))
def test_width_twice_gives_the_text_back(text):
    assert perturbed(perturbed(text, "width", "q"), "width", "q") == text


@given(st.text(), st.sampled_from(KINDS), st.text(max_size=8), st.integers(0, 3))
def test_every_kind_is_deterministic(text, kind, key, seed):
    assert perturbed(text, kind, key, seed) == perturbed(text, kind, key, seed)


def test_a_run_asks_the_perturbed_questions_and_keeps_them(tmp_path: Path):
    write_project(tmp_path)
    first = run_cli("run", "--perturb", "typos,case,punctuation", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = run_cli("run", "--perturb", "typos,case,punctuation", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    a, b = finished_runs(tmp_path / "results")
    listed = (a / "perturbed_questions.jsonl").read_text()
    assert listed == (b / "perturbed_questions.jsonl").read_text()  # same seed, same questions
    rows = [json.loads(line) for line in listed.splitlines()]
    assert len(rows) == 6 * 3 and {r["kind"] for r in rows} == {"typos", "case", "punctuation"}
    summary = json.loads((a / "summary.json").read_text())
    records = [json.loads(line) for line in (a / "per_question.jsonl").read_text().splitlines()]
    for c in summary["candidates"]:
        robust = c["robustness"]
        mine = [r for r in records if r["candidate"] == c["id"]]
        for kind in ("typos", "case", "punctuation"):
            typed = [r["perturbed"][kind]["mrr@3"] for r in mine]
            assert robust[kind]["perturbed"] == sum(typed) / len(typed)
            assert abs(robust[kind]["drop"] - (robust[kind]["original"] - robust[kind]["perturbed"])) < 1e-12
            assert robust[kind]["n"] == 6 and 0 <= robust[kind]["wilcoxon_p"] <= 1
    assert "Robustness to real typing" in first.stdout
    again = run_cli("report", str(a), cwd=tmp_path)
    assert again.returncode == 0, again.stderr  # recomputed from disk: no figure differs
    bad = run_cli("run", "--perturb", "typo", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown perturbation 'typo'; did you mean 'typos'" in bad.stderr
