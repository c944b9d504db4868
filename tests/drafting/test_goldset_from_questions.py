"""From a text file of real questions to a locked goldset a run accepts, through the commands a user
types: `goldset draft --questions`, `goldset review` (driven over its HTTP API, as its page does),
`goldset validate`, `goldset lock`, `run`."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from bench.inputs.quotes import find_quote
from tests.drafting.test_review import _request, review_process
from tests.helpers import DOCS, QUESTIONS, finished_runs, run_cli, write_project


def test_real_questions_become_a_locked_goldset_that_runs(tmp_path: Path) -> None:
    config = write_project(tmp_path)  # models hash and bm25, six questions with known quotes
    (tmp_path / "gold.jsonl").unlink()
    questions = tmp_path / "questions.txt"
    questions.write_text("".join(q[1] + "\n" for q in QUESTIONS), encoding="utf-8")
    draft = tmp_path / "goldsets" / "kb.draft.jsonl"
    drafted = run_cli(
        "goldset", "draft", "--corpus", str(tmp_path / "corpus"), "--questions", str(questions),
        "--out", str(draft), "--config", str(config), "--depth", "6",
    )  # fmt: skip
    assert drafted.returncode == 0, drafted.stderr
    assert "bench goldset review" in drafted.stdout + drafted.stderr

    proc, srv = review_process(draft, tmp_path / "corpus")
    try:
        _, _, page = _request(srv, "GET", f"/?token={srv.token}")
        csrf = json.loads(page.decode().split('id="bench-data">')[1].split("</script>")[0])["csrf"]
        write = {"X-Bench-Token": srv.token, "X-Bench-CSRF": csrf}
        listed = json.loads(_request(srv, "GET", "/api/questions", write)[2])["questions"]
        assert [q["id"] for q in listed] == [f"q00{i}" for i in range(1, 7)]
        for q, (_, text, doc, quote, grade) in zip(listed, QUESTIONS):
            shown = json.loads(_request(srv, "GET", f"/api/question?id={q['id']}", write)[2])["question"]
            assert shown["question"] == text
            start, end = find_quote(DOCS[doc], quote)
            # the pool put the answering passage before the reviewer
            assert any(p["doc"] == doc and p["start"] <= start and end <= p["end"] for p in shown["passages"])
            change = {"id": q["id"], "op": "evidence_add", "doc": doc, "start": start, "end": end, "grade": grade}
            status, _, body = _request(srv, "POST", "/api/change", write, {**change, "version": shown["version"]})
            assert status == 200, body
            version = json.loads(body)["question"]["version"]
            accept = {"id": q["id"], "version": version, "op": "status", "status": "accepted"}
            assert _request(srv, "POST", "/api/change", write, accept)[0] == 200
    finally:
        proc.send_signal(signal.SIGTERM)  # as Ctrl-C: the review ends cleanly, saying where the goldset is
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, out
    gold = tmp_path / "goldsets" / "kb.jsonl"
    assert str(gold) in out and "bench goldset lock" in out

    rows = [json.loads(line) for line in gold.read_text(encoding="utf-8").splitlines()]
    assert [(r["question"], r["evidence"][0]["doc"], r["evidence"][0]["grade"]) for r in rows] == [
        (text, doc, grade) for _, text, doc, _, grade in QUESTIONS
    ]
    assert all(r["evidence"][0]["quote"] == q[3] for r, q in zip(rows, QUESTIONS))
    corpus = ["--corpus", str(tmp_path / "corpus")]
    assert run_cli("goldset", "validate", str(gold), *corpus).returncode == 0
    assert run_cli("goldset", "lock", str(gold), *corpus).returncode == 0
    config.write_text(config.read_text().replace('goldset = "gold.jsonl"', 'goldset = "goldsets/kb.jsonl"'))
    ran = run_cli("run", str(config), "--no-report")
    assert ran.returncode == 0, ran.stderr
    assert "is not locked" not in ran.stderr
    [run] = finished_runs(tmp_path / "results")
    assert json.loads((run / "manifest.json").read_text())["locked"] is True
