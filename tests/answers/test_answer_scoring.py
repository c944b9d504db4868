"""The answer layer's figures by hand, the answers file's strictness, scoring against a real run, a judge's
agreement with a person, and the figures in `bench history` and `bench check`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.answers.contexts import open_run
from bench.answers.score import agree, agreement_path, score_file
from bench.errors import BenchError
from bench.evaluation import answers as figures
from bench.evaluation.answers import (
    CALIBRATED,
    GENERATION,
    OK,
    PEOPLE,
    QUESTION_HANDLING,
    RETRIEVAL,
    UNCALIBRATED,
    UNKNOWN,
    Retrieval,
)
from bench.inputs.answers import Answer, Claim, load_answers, meta_path
from bench.results import store
from tests.helpers import finished_runs, run_cli, write_project

DENSE = "hash/tok24/flat"


def _answer(qid="q1", claims=None, addresses=None, references=None) -> Answer:
    return Answer(
        qid,
        "an answer",
        claims=None if claims is None else tuple(Claim(f"claim {i}", s) for i, s in enumerate(claims)),
        addresses_question=addresses,
        reference_claims=None if references is None else tuple(Claim(f"ref {i}", s) for i, s in enumerate(references)),
    )


# --- figures by hand ------------------------------------------------------------------------------------------


def test_two_claims_one_supported_is_half_grounded_and_an_answer_on_topic_is_relevant():
    score = figures.score_answer(_answer(claims=[True, False], addresses=True), Retrieval({}, reached=True))
    assert (score.claims, score.supported, score.groundedness) == (2, 1, 0.5)
    assert score.answer_relevance == 1.0
    assert score.unsupported == ("claim 1",)
    assert score.layer == GENERATION and score.failing == (GENERATION,)


def test_undecided_claims_are_left_out_and_reference_claims_give_recall():
    score = figures.score_answer(_answer(claims=[True, None, True], references=[True, False, False, None]))
    assert (score.claims, score.undecided, score.groundedness) == (2, 1, 1.0)
    assert (score.reference_claims, score.covered) == (3, 1)
    assert score.claim_recall == pytest.approx(1 / 3)
    assert score.answer_relevance is None and score.layer == UNKNOWN  # relevance and retrieval unmeasured


@pytest.mark.parametrize(
    ("reached", "claims", "addresses", "layer", "failing"),
    [
        (False, [False], True, RETRIEVAL, (RETRIEVAL, GENERATION)),  # the first layer to fail is named
        (True, [True, True], False, QUESTION_HANDLING, (QUESTION_HANDLING,)),
        (True, [True], True, OK, ()),
        (True, [], False, QUESTION_HANDLING, (QUESTION_HANDLING,)),  # "I don't know" with the evidence there
    ],
)
def test_the_layer_that_failed(reached, claims, addresses, layer, failing):
    score = figures.score_answer(_answer(claims=claims, addresses=addresses), Retrieval({}, reached))
    assert (score.layer, score.failing) == (layer, failing)


def test_answers_without_claims_are_counted_apart_never_scored():
    scores = [
        figures.score_answer(_answer("q1", claims=[True, False], addresses=True)),
        figures.score_answer(_answer("q2", claims=[], addresses=False)),  # split: makes no claim
        figures.score_answer(_answer("q3", addresses=True)),  # never split into claims
    ]
    summary = figures.summarise(scores)
    assert summary["metrics"]["groundedness"]["mean"] == 0.5 and summary["metrics"]["groundedness"]["n"] == 1
    assert summary["metrics"]["answer_relevance"]["mean"] == pytest.approx(2 / 3)
    assert summary["no_claim_answers"] == ["q2"] and summary["not_split"] == ["q3"]
    assert summary["claims"] == 2 and summary["supported_claims"] == 1
    assert summary["metrics"]["claim_recall"] == {"mean": None, "ci": None, "n": 0}
    assert any("made no factual claim" in line for line in figures.findings(summary, None))


def test_kappa_and_the_confusion_matrix_by_hand():
    # person × judge: 4 both supported, 2 only the person, 1 only the judge, 3 neither.
    pairs = [(True, True)] * 4 + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 3
    result = figures.agreement(pairs)
    # p_o = 7/10; the person says supported 6/10, the judge 5/10: p_e = .6 × .5 + .4 × .5 = .5; κ = .2 / .5
    assert result.agreement == pytest.approx(0.7) and result.kappa == pytest.approx(0.4)
    assert result.confusion == ((3, 1), (2, 4))
    assert result.to_dict()["confusion"] == {
        "human_supported_judge_supported": 4,
        "human_supported_judge_unsupported": 2,
        "human_unsupported_judge_supported": 1,
        "human_unsupported_judge_unsupported": 3,
    }
    assert not result.calibrates()  # 10 claims < 30
    assert figures.agreement([(True, True)] * 30).kappa is None  # chance agreement is total: κ undefined
    assert figures.agreement(pairs * 3).calibrates(min_kappa=0.39) and not figures.agreement(pairs * 3).calibrates()


def test_the_findings_read_the_two_layers_together():
    def summary(reached: float, ground: float, relevance: float) -> dict:
        return {
            "metrics": {
                "groundedness": {"mean": ground},
                "answer_relevance": {"mean": relevance},
                "claim_recall": {"mean": None},
            },
            "retrieval": {"context_hit_rate": {"mean": reached}},
            "layers": {RETRIEVAL: 0, GENERATION: 0, QUESTION_HANDLING: 0, OK: 10, UNKNOWN: 0},
            "no_claim_answers": [],
        }

    assert "fix retrieval" in figures.findings(summary(0.3, 0.9, 0.9), 5)[0]
    assert "generation contract" in figures.findings(summary(0.9, 0.5, 0.9), 5)[0]
    assert "Question handling" in figures.findings(summary(0.9, 0.95, 0.5), 5)[0]
    assert figures.findings(summary(0.9, 0.95, 0.95), 5) == []


# --- the answers file -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"question_id": "q1", "answer": "x", "claims": [{"text": "a", "supported": NaN}]}',
            "NaN is not a JSON number",
        ),
        ('{"question_id": "q1", "answer": "x", "score": Infinity}', "Infinity is not a JSON number"),
        ('{"question_id": "q1", "answer": "x", "claims": [{"text": "a", "supported": "yes"}]}', "true, false or null"),
        ('{"question_id": "q1", "answer": "x", "contexts": ["a"], "context_units": ["u"]}', "keep one"),
        ('{"question_id": "q1", "answer": 3}', '"answer" must be'),
        ('{"answer": "x"}', '"question_id"'),
        ('{"question_id": "q1", "answer": "x", "claims": [{"supported": true}]}', "expected an object like"),
    ],
)
def test_a_bad_answers_line_is_one_error_naming_file_and_line(tmp_path, line, message):
    path = tmp_path / "answers.jsonl"
    path.write_text('{"question_id": "q0", "answer": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(BenchError, match=message) as raised:
        load_answers(path)
    assert str(raised.value).startswith(f"{path}:2:")


def test_a_second_answer_to_one_question_is_refused(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text('{"question_id": "q1", "answer": "a"}\n\n{"question_id": "q1", "answer": "b"}\n')
    with pytest.raises(BenchError, match=r":3: a second answer to question 'q1' \(first on line 1\)"):
        load_answers(path)


def test_an_answers_file_reads_back_as_written(tmp_path):
    from bench.inputs.answers import save_answers

    answers = (
        _answer("q1", claims=[True, False], addresses=True, references=[True]),
        Answer("q2", "", contexts=("text",), extra={"refused": True}),
    )
    path = tmp_path / "a.jsonl"
    save_answers(path, answers, {"labels": "judge"})
    back = load_answers(path)
    assert back.answers == answers and back.labelled_by == "judge"
    assert json.loads(path.read_text().splitlines()[0])["reference_claims"][0] == {"text": "ref 0", "covered": True}


# --- scoring against a real run -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """The tiny project's run (hashing model and BM25), without reports."""
    root = tmp_path_factory.mktemp("answers")
    config = write_project(root)
    done = run_cli("run", str(config), cwd=root)
    assert done.returncode == 0, done.stderr
    [folder] = finished_runs(root / "results")
    return folder


def _records(run: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in (run / store.PER_QUESTION).read_text().splitlines()]
    return {r["question_id"]: r for r in rows if r["candidate"] == DENSE}


def _write(path: Path, rows: list[dict], meta: dict | None = None) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if meta is not None:
        meta_path(path).write_text(json.dumps(meta), encoding="utf-8")
    return path


def _labelled(run: Path) -> list[dict]:
    """An answer to every question but q6: q1 fully grounded, q2 half, q3 dodges, q4 makes no claim."""
    claims = {
        "q1": [True, True],
        "q2": [True, False],
        "q3": [True],
        "q4": [],
        "q5": [True],
    }
    addresses = {"q1": True, "q2": True, "q3": False, "q4": False, "q5": True}
    return [
        {
            "question_id": qid,
            "answer": f"answer to {qid}",
            "claims": [{"text": f"{qid} claim {i}", "supported": s} for i, s in enumerate(labels)],
            "addresses_question": addresses[qid],
        }
        for qid, labels in claims.items()
    ]


def test_scoring_beside_the_run_uses_the_candidates_top_k_and_writes_both_files(run, tmp_path):
    path = _write(tmp_path / "answers.jsonl", _labelled(run))
    scored = score_file(path, open_run(run, run.parent, DENSE))
    assert scored.folder == run
    summary = json.loads((run / store.ANSWERS_SUMMARY).read_text())
    rows = [json.loads(line) for line in (run / store.ANSWERS_PER_QUESTION).read_text().splitlines()]
    assert summary == scored.summary and [r["question_id"] for r in rows] == ["q1", "q2", "q3", "q4", "q5"]
    assert summary["candidate"] == DENSE and summary["k"] == 3 and summary["labels"] == "human"
    assert summary["calibration"]["status"] == PEOPLE
    # groundedness: q1 1.0, q2 0.5, q3 1.0, q5 1.0 (q4 made no claim) → 0.875; relevance 3 of 5.
    assert summary["metrics"]["groundedness"]["mean"] == pytest.approx(0.875)
    assert summary["metrics"]["groundedness"]["n"] == 4
    assert summary["metrics"]["answer_relevance"]["mean"] == pytest.approx(0.6)
    assert summary["no_claim_answers"] == ["q4"] and summary["unanswered"] == ["q6"]
    records = _records(run)
    for row in rows:  # retrieval's own figures, for the same questions, beside the answers'
        record = records[row["question_id"]]
        assert row["retrieval"]["recall@3"] == record["metrics"]["recall@3"]
        reached = any(u["grade"] > 0 for u in record["ranking"][:3])
        assert row["retrieval"]["evidence_in_contexts"] == reached
        if not reached:
            assert row["layer"] == RETRIEVAL
    mean_recall = sum(records[q]["metrics"]["recall@3"] for q in ("q1", "q2", "q3", "q4", "q5")) / 5
    assert summary["retrieval"]["recall@3"]["mean"] == pytest.approx(mean_recall)
    lo, hi = summary["metrics"]["groundedness"]["ci"]
    assert lo <= 0.875 <= hi


def test_context_units_are_resolved_in_the_candidates_ranking(run, tmp_path):
    record = _records(run)["q1"]
    last = record["ranking"][-1]  # below the top k: the answer was given a unit retrieval ranked low
    rows = [{"question_id": "q1", "answer": "x", "context_units": [last["id"]], "claims": []}]
    source = open_run(run, run.parent, DENSE)
    answer = load_answers(_write(tmp_path / "a.jsonl", rows)).answers[0]
    assert source.contexts(answer, "here") == (source.texts[(last["doc_id"], last["start"], last["end"])],)
    assert source.retrieval(answer, "here").reached == (last["grade"] > 0)
    rows[0]["context_units"] = ["kb/nowhere.md#0001"]
    answer = load_answers(_write(tmp_path / "b.jsonl", rows)).answers[0]
    with pytest.raises(BenchError, match=r"context unit 'kb/nowhere\.md#0001' of question 'q1' is not among"):
        source.contexts(answer, "here")


def test_an_answer_to_a_question_the_run_did_not_ask_is_refused(run, tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"question_id": "q1", "answer": "x"}\n\n{"question_id": "q99", "answer": "x"}\n')
    with pytest.raises(BenchError, match=r"a\.jsonl:3: question 'q99' is not in run"):  # its line, blank lines counted
        score_file(path, open_run(run, run.parent, DENSE))
    with pytest.raises(BenchError, match=r"--candidate 'hash/tok24/fla': not in run .*did you mean 'hash/tok24/flat'"):
        open_run(run, run.parent, "hash/tok24/fla")


def test_without_a_run_the_figures_go_beside_the_file(tmp_path):
    path = _write(
        tmp_path / "a.jsonl", [{"question_id": "q1", "answer": "x", "claims": [{"text": "c", "supported": True}]}]
    )
    scored = score_file(path, None)
    assert scored.folder == tmp_path and (tmp_path / store.ANSWERS_SUMMARY).is_file()
    assert "retrieval" not in scored.summary and scored.rows[0]["layer"] == UNKNOWN


# --- a judge against a person ---------------------------------------------------------------------------------


def _judged(path: Path, human: list[dict], flip: set[str], model: str = "judge-1") -> Path:
    rows = [
        {
            **row,
            "claims": [
                {**c, "supported": (not c["supported"]) if c["text"] in flip else c["supported"]} for c in row["claims"]
            ],
        }
        for row in human
    ]
    meta = {"labels": "judge", "judge": {"model": model, "rubric_version": "1"}}
    return _write(path, rows, meta)


def _human_sample(n: int) -> list[dict]:
    return [
        {
            "question_id": f"q{i}",
            "answer": "a",
            "claims": [{"text": f"c{i}-{j}", "supported": (i + j) % 3 != 0} for j in range(2)],
            "addresses_question": True,
        }
        for i in range(n)
    ]


def test_agreement_is_written_beside_the_judge_and_calibrates_its_scores(tmp_path):
    human_rows = _human_sample(20)  # 40 claims
    human = _write(tmp_path / "human.jsonl", human_rows)
    judge = _judged(tmp_path / "judge.jsonl", human_rows, flip={"c0-0", "c5-1"})
    before = score_file(judge, None).summary["calibration"]
    assert before["status"] == UNCALIBRATED and "bench answers agree" in before["why"]

    result = agree(human, judge)
    assert result["claims"] == 40 and result["agreement"] == pytest.approx(38 / 40)
    assert result["kappa"] > 0.6 and result["calibrates"]
    assert {d["claim"] for d in result["disagreements"]} == {"c0-0", "c5-1"}
    assert json.loads(agreement_path(judge).read_text())["kappa"] == result["kappa"]
    assert score_file(judge, None).summary["calibration"]["status"] == CALIBRATED
    # A sample under the threshold does not calibrate, nor does one measured for another judge.
    assert score_file(judge, None, min_claims=41).summary["calibration"]["status"] == UNCALIBRATED
    other = _judged(tmp_path / "other.jsonl", human_rows, flip=set(), model="judge-2")
    agreement_path(other).write_text(agreement_path(judge).read_text())
    assert "another judge" in score_file(other, None).summary["calibration"]["why"]


def test_agreement_needs_a_human_file_and_a_judged_one_that_share_claims(tmp_path):
    human = _write(tmp_path / "human.jsonl", _human_sample(2))
    with pytest.raises(BenchError, match="not labelled by a judge"):
        agree(human, human)
    other = [{"question_id": "q0", "answer": "a", "claims": [{"text": "other", "supported": True}]}]
    judge = _write(tmp_path / "judge.jsonl", other, {"labels": "judge", "judge": {"model": "m"}})
    with pytest.raises(BenchError, match="share no labelled claim"):
        agree(human, judge)


# --- the command line, history and the gate -------------------------------------------------------------------


def _score(path: Path, results: Path):
    return run_cli(
        "answers", "score", str(path), "--run", "latest", "--candidate", DENSE, "--results", str(results), "--no-report"
    )


def test_scored_answers_join_history_and_the_gate(run, tmp_path):
    results = run.parent
    good = _write(tmp_path / "answers.jsonl", _labelled(run))
    done = run_cli(
        "answers", "score", str(good), "--run", "latest", "--candidate", DENSE, "--results", str(results), "--no-report"
    )
    assert done.returncode == 0, done.stderr
    history = run_cli("history", "--results", str(results))
    assert "answers: groundedness" in history.stdout and "0.875" in history.stdout
    trend = run_cli("history", "--results", str(results), "--candidate", DENSE, "--metric", "groundedness")
    assert trend.returncode == 0 and "0.875" in trend.stdout, trend.stdout + trend.stderr

    baseline = tmp_path / "baseline.json"
    assert run_cli("check", "latest", "--save-baseline", str(baseline), "--results", str(results)).returncode == 0
    assert json.loads(baseline.read_text())["metrics"][DENSE]["groundedness"] == pytest.approx(0.875)

    worse = _labelled(run)
    worse[0]["claims"][0]["supported"] = False  # q1 now half grounded: 0.75 on average
    _write(tmp_path / "worse.jsonl", worse)
    rescored = _score(tmp_path / "worse.jsonl", results)
    assert rescored.returncode == 0, rescored.stderr
    failed = run_cli(
        "check", "latest", "--baseline", str(baseline), "--metrics", "groundedness", "--results", str(results)
    )
    assert failed.returncode == 1 and "groundedness" in failed.stdout
    unknown = run_cli(
        "check", "latest", "--baseline", str(baseline), "--metrics", "groundednes", "--results", str(results)
    )
    assert unknown.returncode == 2 and "did you mean 'groundedness'" in unknown.stderr


def test_a_judges_figures_are_checked_and_said_to_be_uncalibrated(run, tmp_path):
    results = run.parent
    judged = _write(
        tmp_path / "judged.jsonl", _labelled(run), {"labels": "judge", "judge": {"model": "m", "rubric_version": "1"}}
    )
    assert _score(judged, results).returncode == 0
    baseline = tmp_path / "baseline.json"
    assert run_cli("check", "latest", "--save-baseline", str(baseline), "--results", str(results)).returncode == 0
    checked = run_cli("check", "latest", "--baseline", str(baseline), "--results", str(results))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"groundedness, answer_relevance of {DENSE} are a judge's labels, uncalibrated" in checked.stdout
    history = run_cli("history", "--results", str(results))
    assert f"answers scored for {DENSE}: uncalibrated" in " ".join(history.stdout.split())
