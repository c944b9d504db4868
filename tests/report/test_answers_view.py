"""What `bench answers score` prints, from answers scored against a real tiny run: retrieval and the answers
side by side and never one score, a judge's figures marked uncalibrated, answers with no claim counted apart,
and every table within 100 columns with its ids whole."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from bench.answers.contexts import open_run
from bench.answers.score import Scored, score_file
from bench.report.answers_view import answers_lines, answers_tables, print_answers
from tests.helpers import QUESTIONS, finished_runs, run_cli, write_project

# A question id as long as real goldsets write them: the failures table must show it whole.
LONG_ID = "hr/vacation-policy/carry-over-of-unused-days-until-march-q002"
GOLD = [(LONG_ID if q[0] == "q2" else q[0], *q[1:]) for q in QUESTIONS]
JUDGE_META = {"labels": "judge", "judge": {"model": "judge-model-1", "rubric_version": "claims-v1"}}


def build_run(root: Path) -> Path:
    """A finished tiny run (no reports yet), q2 asked under a long id."""
    config = write_project(root, questions=GOLD)
    result = run_cli("run", str(config), "--no-report")
    assert result.returncode == 0, result.stderr
    [folder] = finished_runs(root / "results")
    return folder


def answer_lines(folder: Path) -> list[dict]:
    """One answer per layer outcome: q1 passes, the long-id question adds a claim, q3 makes none and dodges the
    question, q4 was written from a distractor only, q5's claims are undecided; q6 is left unanswered."""
    source = open_run(folder, folder.parent, None)
    distractor = next(u.id for u in source.records["q4"].ranking if u.grade == 0)
    return [
        {
            "question_id": "q1",
            "answer": "Twenty-five days a year.",
            "claims": [{"text": "Staff get twenty-five vacation days a year", "supported": True}],
            "addresses_question": True,
        },
        {
            "question_id": LONG_ID,
            "answer": "Until the end of March, with a manager's approval.",
            "claims": [
                {"text": "Unused days carry over until the end of March", "supported": True},
                {"text": "Carrying days over needs a manager's approval", "supported": False},
            ],
            "addresses_question": True,
        },
        {"question_id": "q3", "answer": "I don't know.", "claims": [], "addresses_question": False},
        {
            "question_id": "q4",
            "answer": "Backups are kept for a year.",
            "context_units": [distractor],
            "claims": [{"text": "Backups are kept for a year", "supported": False}],
            "addresses_question": True,
        },
        {
            "question_id": "q5",
            "answer": "Within fifteen minutes.",
            "contexts": ["Pages must be acknowledged within fifteen minutes, day or night."],
            "claims": [{"text": "Pages are acknowledged within fifteen minutes", "supported": None}],
            "addresses_question": True,
        },
    ]


def score(folder: Path, lines: list[dict], name: str = "answers.jsonl", meta: dict | None = None) -> Scored:
    """Write an answers file beside the run and score it against the run's best candidate."""
    path = folder.parent.parent / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    if meta is not None:
        path.with_name(path.name + ".meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return score_file(path, open_run(folder, folder.parent, None))


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> tuple[Scored, Scored, Scored]:
    """The same answers labelled by people, by a judge nobody calibrated, and scored without a run."""
    root = tmp_path_factory.mktemp("answers-view")
    folder = build_run(root)
    lines = answer_lines(folder)
    judged = score(folder, lines, "judged.jsonl", JUDGE_META)
    people = score(folder, lines)  # last: the run folder keeps the people's figures
    alone = root / "alone" / "answers.jsonl"
    alone.parent.mkdir()
    alone.write_text("".join(json.dumps(line) + "\n" for line in lines if "context_units" not in line))
    return people, judged, score_file(alone, None)


def _text(summary: dict, rows: list[dict], width: int = 180) -> str:
    console = Console(width=width, record=True, color_system=None)
    print_answers(console, summary, rows)
    return console.export_text()


def _row(text: str, metric: str) -> str:
    return next(line for line in text.splitlines() if re.search(rf"│ {re.escape(metric)} +│", line))


def test_both_layers_are_shown_side_by_side_each_with_its_interval(scored):
    people, _, _ = scored
    text = _text(people.summary, people.rows)
    retrieval, answers = people.summary["retrieval"], people.summary["metrics"]
    for metric in ("recall@3", "hit_rate@3", "mrr@3"):
        entry = retrieval[metric]
        assert f"{entry['mean']:.3f} [{entry['ci'][0]:.3f}, {entry['ci'][1]:.3f}]" in _row(text, metric)
    assert f"{retrieval['context_hit_rate']['mean']:.3f} [" in _row(text, "evidence in contexts")
    ground = answers["groundedness"]
    assert f"{ground['mean']:.3f} [{ground['ci'][0]:.3f}, {ground['ci'][1]:.3f}] │ {ground['n']} │" in _row(
        text, "groundedness"
    )
    assert f"{answers['answer_relevance']['mean']:.3f} [" in _row(text, "answer relevance")
    assert "—" in _row(text, "claim recall")  # no reference claims: nothing decides it
    # two blocks, the retrieval rows above a rule and the answers below it
    lines = text.splitlines()
    first_answer = lines.index(_row(text, "groundedness"))
    assert lines[first_answer].startswith("│ answers ") and lines[first_answer - 1].startswith("├")
    assert _row(text, "recall@3").startswith("│ retrieval ")


def test_no_combined_score_anywhere(scored):
    people, _, _ = scored
    text = _text(people.summary, people.rows) + "\n".join(answers_lines(people.summary))
    assert not re.search(r"\b(combined|overall|total score|rag score|composite)\b", text, re.I)
    layers = {line.split("│")[1].strip() for line in text.splitlines() if re.match(r"│ (retrieval|answers) ", line)}
    assert layers == {"retrieval", "answers"}
    assert "never one score" in text


def test_judge_figures_read_uncalibrated_wherever_shown(scored):
    people, judged, _ = scored
    assert judged.summary["calibration"]["status"] == "uncalibrated"
    text = _text(judged.summary, judged.rows)
    for metric in ("groundedness", "answer relevance", "claim recall"):
        assert "uncalibrated" in _row(text, metric)
    assert "uncalibrated" not in _row(text, "recall@3")
    flat = " ".join(text.split())
    assert "labelled by a judge (judge-model-1, rubric claims-v1), uncalibrated: no human sample compared yet" in flat
    lines = answers_lines(judged.summary)
    assert "judge-labelled, uncalibrated" in lines[0] and "groundedness" in lines[0]
    assert "uncalibrated" not in _text(people.summary, people.rows) + " ".join(answers_lines(people.summary))
    assert "labelled by people" in answers_lines(people.summary)[0]


@pytest.mark.parametrize("width", [100, 180, 80])
def test_every_line_fits_100_columns_and_no_id_is_cut(scored, width):
    people, judged, alone = scored
    for s in (people, judged, alone):
        text = _text(s.summary, s.rows, width)
        assert max(map(len, text.splitlines())) <= min(width, 100)
    table = _text(people.summary, people.rows, width)
    assert any(f"│ {LONG_ID} " in line for line in table.splitlines())  # whole, on one line
    assert people.summary["run_id"] in " ".join(table.split())


def _cells(text: str, key: str) -> list[str]:
    """The cells of a table row whose first cell is ``key``, across every part a narrow terminal split it into."""
    return [
        cell.strip() for line in text.splitlines() if line.startswith(f"│ {key} ") for cell in line.split("│")[2:-1]
    ]


def test_failures_table_gives_each_failed_questions_figures(scored):
    people, _, _ = scored
    text = _text(people.summary, people.rows)
    assert "Questions that failed a layer (3 of 5)" in text
    assert _cells(text, LONG_ID) == ["1.000", "yes", "0.500 (1/2)", "yes", "generation"]
    assert _cells(text, "q3") == ["1.000", "yes", "—", "no", "question handling"]
    # the candidate found the evidence, but the answer was written from a distractor
    assert _cells(text, "q4") == ["1.000", "no", "0.000 (0/1)", "yes", "retrieval, generation"]
    assert _cells(text, "q1") == [] and _cells(text, "q5") == []  # passed, or not known
    layers = people.summary["layers"]
    assert layers == {"retrieval": 1, "generation": 1, "question handling": 1, "ok": 1, "unknown": 1}
    for layer, n in layers.items():
        assert re.search(rf"│ {layer} +│ +{n} │ [a-z]", text)  # the layer counts, each with its meaning


def test_answers_without_a_claim_are_counted_apart(scored):
    people, _, _ = scored
    text = " ".join(_text(people.summary, people.rows).split())
    assert people.summary["no_claim_answers"] == ["q3"]
    assert 'No factual claim (a refusal or "I don\'t know"; counted apart, not as grounded): q3.' in text
    assert people.summary["metrics"]["groundedness"]["n"] == 3  # q3 is not among them, nor undecided q5
    assert "Never split into claims (no groundedness): q5." in text
    assert "Unanswered (5 of 6 questions answered): q6." in text
    assert "3 of 5 claims supported" not in text and "2 of 4 claims supported" in text
    assert "1 undecided, left out of groundedness" in text
    counts = " ".join(answers_lines(people.summary))
    assert "counted apart" in counts and "q3" in counts


def test_without_a_run_the_retrieval_block_says_it_was_not_measured(scored):
    _, _, alone = scored
    text = " ".join(_text(alone.summary, alone.rows).split())
    assert "no run: retrieval not measured" in text and "retrieval: not measured without a run" in text
    assert "recall@" not in text.split("Questions that failed")[0]
    assert "│ answers │ groundedness" in text
    assert answers_tables(alone.summary, alone.rows) is not None
