"""The relevance judge end to end against a scripted chat-completions server on 127.0.0.1: `bench judge`
on a finished run (good, malformed, refusing, 429/5xx replies; the cache; the budget; the key), the
figures it adds (κ by hand, metrics with the judge by hand), and `bench run --questions` with no goldset."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from bench.core.records import EvidenceSpan, RankedUnit, Retrieved, UnitLabel
from bench.core.summary import CandidateResult
from bench.evaluation import judged
from bench.judging.relevance_judge import RUBRIC, grade_in
from tests.answers.chat_server import ChatServer, quick_retries
from tests.helpers import CONFIG, QUESTIONS, REPO, finished_runs, run_cli, write_project

KEY_ENV = "BENCH_TEST_JUDGE_KEY"
KEY = "sk-judge-test-NEVER-SHOWN-77aa"
# Passages a person marked not relevant (grade 0), so calibration has both kinds of judgment.
NOT_RELEVANT = {
    "q1": ("kb/vacation.md", "Requests longer than two weeks need approval from a department head."),
    "q3": ("kb/laptops.md", "Laptops are replaced every three years, or sooner when the battery fails."),
    "q4": ("ops/backups.txt", "A restore drill is performed every quarter by the on-call engineer."),
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]{4,}", text.lower()))


def grader(body: dict) -> str | None:
    """A judge that grades by the share of the question's words in the passage; a passage about the
    restore drill gets prose instead of JSON, one about the second region a refusal."""
    user = body["messages"][-1]["content"]
    question = user.split("Question: ", 1)[1].split("\n\nPassage: ", 1)[0]
    passage = user.split("\n\nPassage: ", 1)[1].rsplit("\n\nReply with JSON", 1)[0]
    if "restore drill" in passage:
        return "I would call this passage fairly relevant."
    if "second region" in passage:
        return None
    share = len(_words(question) & _words(passage)) / max(1, len(_words(question)))
    grade = 3 if share > 0.5 else 2 if share > 0.3 else 1 if share > 0.1 else 0
    return f"```json\n{json.dumps({'grade': grade})}\n```"


@pytest.fixture(autouse=True)
def quick_and_keyed(monkeypatch):
    quick_retries(monkeypatch, KEY_ENV, KEY)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The tiny project (hash and BM25 over two chunkers) with grade-0 passages, run once."""
    root = tmp_path_factory.mktemp("judge")
    write_project(root, CONFIG)
    lines = []
    for line in (root / "gold.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["id"] in NOT_RELEVANT:
            doc, quote = NOT_RELEVANT[row["id"]]
            row["evidence"].append({"doc": doc, "quote": quote, "grade": 0})
        lines.append(json.dumps(row))
    (root / "gold.jsonl").write_text("\n".join(lines) + "\n")
    done = run_cli("run", "bench.toml", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def _judge_cli(root: Path, run: Path, server: ChatServer, *extra: str):
    return run_cli(
        "judge", str(run), "--results", str(run.parent), "--judge-model", extra[0] if extra else "judge-test",
        "--llm-base-url", server.base_url, "--llm-api-key-env", KEY_ENV, *extra[1:], cwd=root,
    )  # fmt: skip


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bench_judge_grades_the_holes_once_keeps_the_rubric_and_never_the_key(project):
    (run,) = finished_runs(project / "results")
    before = json.loads((run / "summary.json").read_text())
    with ChatServer(grader, plan=("429", "500", "503")) as server:
        done = _judge_cli(project, run, server, "judge-test")
        assert done.returncode == 0, done.stderr
        sent = len(server.received)
        assert sent > 10
        again = _judge_cli(project, run, server, "judge-test")
        assert again.returncode == 0, again.stderr
        assert len(server.received) == sent  # every unit has its label: nothing is asked again
        assert "0 sent" in again.stdout
        labels_before = (run / "judgments.jsonl").read_text()
        (run / "judgments.jsonl").unlink()
        cached = _judge_cli(project, run, server, "judge-test")
        assert cached.returncode == 0, cached.stderr
        assert len(server.received) == sent  # the replies are in the cache folder's log: still nothing sent
        assert re.search(r"calls: 0 sent, \d+ from cache", " ".join(cached.stdout.split()))
        assert sorted((run / "judgments.jsonl").read_text().splitlines()) == sorted(labels_before.splitlines())
        headers = [r["headers"].get("Authorization") for r in server.received]
        prompts = server.prompts()
    assert all(h == f"Bearer {KEY}" for h in headers)
    # each request holds the question and the passage only: no unit id, rank or score
    assert not any("#0" in p or "score" in p.lower() for p in prompts)

    labels = _rows(run / "judgments.jsonl")
    sha = hashlib.sha256(RUBRIC.read_text(encoding="utf-8").encode()).hexdigest()
    assert {(x["model"], x["rubric"], x["rubric_sha256"], x["by"]) for x in labels} == {
        ("judge-test", "relevance-v1", sha, "judge")
    }
    by_text = {}
    texts = {(t["doc_id"], t["start"], t["end"]): t["text"] for t in _rows(run / "texts.jsonl")}
    for x in labels:
        by_text[texts[(x["doc_id"], x["start"], x["end"])]] = x
    drill = next(x for t, x in by_text.items() if "restore drill" in t)
    region = next(x for t, x in by_text.items() if "second region" in t)
    assert (drill["grade"], drill["problem"]) == (None, "no grade 0–3 in the reply")
    assert region["grade"] is None and region["problem"].startswith("refused")
    graded = [x for x in labels if x["grade"] is not None]
    assert graded and all(x["grade"] in (0, 1, 2, 3) for x in graded)
    assert all(json.loads(x["reply"].strip("`json\n"))["grade"] == x["grade"] for x in graded)

    summary = json.loads((run / "summary.json").read_text())
    section = summary["judge"]
    assert section["mode"] == "goldset + judge" and section["labels"] == len(labels)
    assert section["judge"]["model"] == "judge-test" and section["judge"]["rubric"]["sha256"] == sha
    # the goldset's figures are untouched; the judge's stand beside them
    assert [c["quality"] for c in summary["candidates"]] == [c["quality"] for c in before["candidates"]]
    assert set(section["candidates"]) == {c["id"] for c in summary["candidates"]}
    assert all(v["judged_at_k"] >= c["diagnostics"]["judged_at_k"] for c in summary["candidates"]
               for v in [section["candidates"][c["id"]]])  # fmt: skip
    calibration = section["calibration"]
    assert calibration["status"] == "uncalibrated" and "needs at least 30" in calibration["why"]
    confusion = calibration["confusion"]
    assert confusion["person_not_judge_relevant"] + confusion["person_not_judge_not"] > 0  # grade-0 passages compared
    assert sum(confusion.values()) == calibration["pairs"]
    assert "uncalibrated" in done.stdout and "Relevance judge judge-test" in done.stdout
    # the holes carry the judge's grade for the review queue
    assert all("judge_grade" in h for h in section["holes"])

    for path in [*project.rglob("*")]:
        if path.is_file() and path.suffix in (".json", ".jsonl", ".html", ".csv", ".toml"):
            assert KEY not in path.read_text(encoding="utf-8", errors="replace"), path

    inspector = (run / "inspector.html").read_text()
    assert '"judge 3"' in inspector or '"judge 2"' in inspector
    assert '"person"' in inspector


def test_the_budget_stops_before_overspending(project, tmp_path):
    (run,) = finished_runs(project / "results")
    copy = tmp_path / "results" / run.name
    shutil.copytree(run, copy)
    (copy / "judgments.jsonl").unlink(missing_ok=True)
    with ChatServer(grader) as server:
        # a call bills 100 prompt tokens at $1,000 a million ($0.10); each is estimated higher before it goes
        done = _judge_cli(project, copy, server, "judge-budget", "--price-in", "1000", "--max-cost", "0.5")
        sent = len(server.received)
    assert done.returncode == 0, done.stderr
    about = json.loads((copy / "summary.json").read_text())["judge"]["judge"]
    assert 1 <= sent < about["asked"] + about["not_asked"]
    assert about["cost_usd"] <= 0.5 and about["calls"]["not_sent_budget"] == about["not_asked"] > 0
    assert "not asked: the budget" in done.stdout


def test_grades_are_read_from_the_reply_or_not_at_all():
    assert grade_in({"reply": '{"grade": 2}'}) == (2, None)
    assert grade_in({"reply": 'Sure: ```json\n{"grade": "3"}\n```'}) == (3, None)
    assert grade_in({"reply": '{"grade": 5}'})[0] is None
    assert grade_in({"reply": '{"grade": true}'})[0] is None
    assert grade_in({"reply": "three"}) == (None, "no grade 0–3 in the reply")
    assert grade_in({"reply": "", "refusal": "no"})[1] == "refused: no"


def test_kappa_by_hand():
    # 10 units: person and judge agree on 8 (4 relevant, 4 not); each calls one relevant the other does not.
    pairs = [(True, True)] * 4 + [(False, False)] * 4 + [(True, False), (False, True)]
    small = judged.calibration(pairs)
    # p_o = 0.8; both say relevant half the time, so p_e = 0.5·0.5 + 0.5·0.5 = 0.5; κ = (0.8 − 0.5) / 0.5 = 0.6
    assert small["agreement"] == pytest.approx(0.8) and small["kappa"] == pytest.approx(0.6)
    assert small["confusion"] == {
        "person_relevant_judge_relevant": 4, "person_relevant_judge_not": 1,
        "person_not_judge_relevant": 1, "person_not_judge_not": 4,
    }  # fmt: skip
    assert small["status"] == "uncalibrated" and "on 10 units" in small["why"]
    assert judged.calibration(pairs * 3)["status"] == "calibrated"  # 30 units at κ 0.6
    worse = [(True, True)] * 12 + [(False, False)] * 12 + [(True, False)] * 3 + [(False, True)] * 3
    # p_o = 0.8, p_e = 0.5: κ 0.6 again; one more disagreement each way takes it below
    assert judged.calibration(worse)["kappa"] == pytest.approx(0.6)
    assert judged.calibration([*worse, (True, False), (False, True)])["status"] == "uncalibrated"
    only_relevant = judged.calibration([(True, True)] * 40)
    assert only_relevant["status"] == "uncalibrated" and "judged not relevant" in only_relevant["why"]


def _unit(uid: str, start: int, grade: int = 0) -> RankedUnit:
    return RankedUnit(id=uid, doc_id="d", start=start, end=start + 10, score=1.0, grade=grade)


def test_metrics_with_the_judge_by_hand():
    """Question q: the goldset's evidence is unit b; a candidate ranks a (a hole), then b. The judge
    grades a 3 (answers): with its grades, a is relevant (grade 2) and joins the expected units."""
    evidence = [EvidenceSpan(doc="d", start=10, end=20, grade=2)]
    rec = Retrieved(
        candidate="c", question_id="q", question="?", tags=[], ranking=[_unit("a", 0), _unit("b", 10, 2)],
        expected=[_unit("b", 10, 2)], evidence=evidence,
    )  # fmt: skip
    other = Retrieved(
        candidate="o", question_id="q", question="?", tags=[], ranking=[_unit("c", 30), _unit("a", 0)],
        expected=[_unit("b", 10, 2)], evidence=evidence,
    )  # fmt: skip
    label = UnitLabel(
        question_id="q", unit="a", doc_id="d", start=0, end=10, grade=3, by="judge", model="m", rubric="r",
        rubric_sha256="s", reply='{"grade": 3}',
    )  # fmt: skip
    cands = [CandidateResult(id=c, model="x", chunker="ch", index="flat", search="") for c in ("c", "o")]
    records, ranked = judged.with_judge(
        cands, [rec, other], [label], k=2, depth=2, gain="exponential", unit="chunk", min_overlap=0.5
    )
    assert [u.grade for u in records["c"][0].ranking] == [2, 2]
    assert sorted(u.id for u in records["o"][0].expected) == ["a", "b"]
    by_id = {c.id: c for c in ranked}
    # c: relevant at 1 and 2 of 2 expected; o: "a" at rank 2 of the 2 expected (b not retrieved)
    assert by_id["c"].quality["mrr@2"] == 1.0 and by_id["c"].quality["recall@2"] == 1.0
    assert by_id["o"].quality["mrr@2"] == 0.5 and by_id["o"].quality["recall@2"] == 0.5
    keyed = judged.by_key([label], "chunk")
    assert judged.judged_at_k([rec], keyed, 2, "chunk") == 1.0
    assert judged.judged_at_k([other], keyed, 2, "chunk") == 0.5  # "c" nobody judged
    # a person's judgment wins over the judge's: a unit the evidence covers keeps its grade
    assert judged.relevance_grade(3) == 2 and judged.relevance_grade(2) == 1 and judged.relevance_grade(1) == 0


def test_questions_only_run_on_the_bundled_corpus_is_a_whole_run_folder(tmp_path):
    """No goldset: BM25 on the bundled corpus, twelve of its questions, graded by the test server; the
    run folder is complete, `bench report` recomputes it unchanged and the inspector marks the judge."""
    gold = [json.loads(line) for line in (REPO / "goldsets" / "northwind.jsonl").read_text().splitlines()[:12]]
    questions = tmp_path / "questions.txt"
    questions.write_text("".join(row["question"] + "\n" for row in gold))
    results = tmp_path / "results"
    with ChatServer(grader) as server:
        done = run_cli(
            "run", "bench.toml", "--questions", str(questions), "--only", "bm25/md256/inverted",
            "--only", "bm25/rec256/inverted",
            "--results", str(results), "--cache-dir", str(tmp_path / "cache"), "--judge-model", "judge-test",
            "--llm-base-url", server.base_url, "--llm-api-key-env", KEY_ENV, cwd=REPO, reports=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        asked = len(server.received)
    (run,) = finished_runs(results)
    for name in ("summary.json", "per_question.jsonl", "texts.jsonl", "judgments.jsonl", "manifest.json",
                 "report.pdf", "inspector.html", "rank_matrix.csv"):  # fmt: skip
        assert (run / name).is_file(), name
    summary = json.loads((run / "summary.json").read_text())
    assert summary["judge"]["mode"] == "judge only" and summary["judge"]["calibration"]["status"] == "uncalibrated"
    assert summary["judge"]["rank_by"] == ["ndcg@5", "precision@5"]
    ranked = sorted(summary["candidates"], key=lambda c: c["rank"])
    keys = [(-c["quality"]["ndcg@5"], -c["quality"]["precision@5"]) for c in ranked]
    assert keys == sorted(keys)
    # the recommendation decides on what ranks the candidates: the judge's nDCG, not MRR
    assert summary["recommendation"]["metric"] == "ndcg@5" and summary["recommendation"]["best"] == ranked[0]["id"]
    assert json.loads((run / "manifest.json").read_text())["goldset"]["questions_only"] is True
    assert "No goldset" in done.stdout and asked == summary["judge"]["labels"]
    assert any(c["quality"]["ndcg@5"] > 0 for c in ranked)  # the judge's grades are the run's relevance
    again = run_cli("report", str(run), "--results", str(results), cwd=tmp_path)
    assert again.returncode == 0, again.stderr + again.stdout  # recomputed from disk: no figure differs
    inspector = (run / "inspector.html").read_text()
    assert re.search(r'"judge [0-3]"', inspector)
    from pypdf import PdfReader

    pages = [page.extract_text() for page in PdfReader(run / "report.pdf").pages]
    assert all("no goldset" in text for text in pages)
    assert any("Goldset completeness" in text for text in pages)


def test_dry_run_estimates_the_judge_and_sends_nothing(project, tmp_path):
    questions = tmp_path / "questions.txt"
    questions.write_text("".join(q[1] + "\n" for q in QUESTIONS))
    args = (
        "run",
        "--dry-run",
        "--questions",
        str(questions),
        "--judge-model",
        "judge-test",
        "--llm-api-key-env",
        KEY_ENV,
    )
    with ChatServer(grader) as server:
        done = run_cli(*args, "--llm-base-url", server.base_url, "--price-in", "2", cwd=project)
        assert done.returncode == 0, done.stderr
        assert server.received == []
    said = done.stdout + done.stderr
    # 4 candidates × 6 questions × top 3
    assert re.search(r"relevance judge judge-test: at most 72 passages .*\$0\.0\d+", " ".join(said.split()))
    dead = run_cli(*args, "--llm-base-url", "http://127.0.0.1:9/v1", cwd=project)
    assert dead.returncode == 2, dead.stderr
    assert "relevance judge: cannot connect to http://127.0.0.1:9/v1" in dead.stderr
    no_judge = run_cli("run", "--questions", str(questions), cwd=project)
    assert no_judge.returncode == 2 and "--questions needs --judge-model" in no_judge.stderr
