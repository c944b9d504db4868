"""Generating answers from a run and judging them, against a scripted chat-completions server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import re
import traceback
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from bench.answers import claim_judge
from bench.answers.calls import replies_path
from bench.answers.claim_judge import judge_answers, judged_path, read_goldset_questions, resolve_sources
from bench.answers.contexts import RunContexts, open_run
from bench.answers.generate import PROMPT, generate_answers
from bench.errors import BenchError
from bench.inputs.answers import JUDGE, load_answers, meta_path
from bench.llm.settings import ChatSettings
from tests.answers.chat_server import ChatServer, quick_retries
from tests.helpers import CONFIG, finished_runs, run_cli, write_project

KEY_ENV = "BENCH_TEST_ANSWERS_KEY"
KEY = "sk-answers-test-NEVER-SHOWN-5e1f"


def _between(text: str, start: str, end: str) -> str:
    found = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.S)
    assert found, f"{start!r} … {end!r} not in {text!r}"
    return found.group(1)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=\.)\s+", text.strip()) if s]


def _has(haystack: str, claim: str) -> bool:
    return claim.rstrip(".").lower() in haystack.lower()


def scripted(body: dict) -> str | None:
    """A model that answers with its first context's first line, splits at sentences, and calls a
    claim supported when the contexts contain it word for word. Markers in the text script the rest."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system.startswith("You answer questions"):
        if "hand over" in user:
            return None  # a refusal
        return _between(user, "[1]\n", "\n").strip()
    if '{"claims": [' in user:
        answer = _between(user, "Answer: ", "\n\nReply with JSON only")
        if "UNPARSABLE" in answer:
            return "claims: the first, the second"
        return json.dumps({"claims": _sentences(answer)})
    if '{"supported":' in user:
        claim, contexts = _between(user, "Claim: ", "\n\nReply"), _between(user, "Contexts:\n\n", "\n\nClaim:")
        if "GARBLE" in claim:
            return "I would say it is, mostly."
        if "MAYBE" in claim:
            return json.dumps({"supported": "maybe", "reason": "unsure"})
        if "REFUSE" in claim:
            return None
        verdict = {"supported": _has(contexts, claim), "reason": "compared word for word"}
        return f"```json\n{json.dumps(verdict)}\n```"  # a fenced reply is read too
    if '{"addresses_question":' in user:
        answer = _between(user, "Answer: ", "\n\nReply")
        return json.dumps({"addresses_question": "weather" not in answer, "reason": "on topic"})
    if '{"stated":' in user:
        answer, claim = _between(user, "Answer: ", "\n\nClaim:"), _between(user, "Claim: ", "\n\nReply")
        return json.dumps({"stated": _has(answer, claim), "reason": "compared"})
    raise AssertionError(f"unexpected request: {user[:200]!r}")


@pytest.fixture(autouse=True)
def quick_and_keyed(monkeypatch):
    quick_retries(monkeypatch, KEY_ENV, KEY)


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    """A finished run of the tiny project with the hashing model: one candidate, k = 3."""
    root = tmp_path_factory.mktemp("project")
    config = CONFIG.replace('models = ["hash", "bm25"]', 'models = ["hash"]').split("[chunkers.rec24]")[0]
    done = run_cli("run", str(write_project(root, config)), cwd=root)
    assert done.returncode == 0, done.stderr
    (folder,) = finished_runs(root / "results")
    return folder


@pytest.fixture
def run(run_folder) -> RunContexts:
    return open_run(run_folder, run_folder.parent, None)


def quiet() -> Console:
    return Console(file=StringIO(), width=200)


def settings(server: ChatServer, model: str, chat: dict) -> ChatSettings:
    return ChatSettings(server.base_url, model, api_key_env=KEY_ENV, **chat)


def generate(run: RunContexts, out: Path, server: ChatServer, force: bool = False, **chat):
    return generate_answers(run, out, settings(server, "gen-test", chat), force=force, console=quiet())


def judge(source: Path, server: ChatServer, out: Path | None = None, run=None, questions=None, **chat):
    return judge_answers(
        load_answers(source), out, settings(server, "judge-test", chat), run=run, questions=questions, console=quiet()
    )


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def no_key_in(*paths: Path) -> bool:
    return all(KEY not in p.read_text() for p in paths)


def test_generate_answers_from_the_candidates_top_k(tmp_path, run):
    out = tmp_path / "answers.jsonl"
    with ChatServer(scripted) as server:
        report = generate(run, out, server, price_in=2.0, price_out=8.0)
        assert len(server.received) == 6 and (report.answered, report.refused) == (6, 1)
        with pytest.raises(BenchError, match=r"answers.jsonl exists; pass --force"):
            generate(run, out, server)
        again = generate(
            run, out, server, force=True, price_in=2.0, price_out=8.0
        )  # every reply is in the log: nothing is sent
        assert len(server.received) == 6 and (again.tally.sent, again.tally.cached) == (0, 6)
        prompts = server.prompts()
    answers = rows(out)
    assert [a["question_id"] for a in answers] == ["q1", "q2", "q3", "q4", "q5", "q6"]  # goldset order
    for a in answers:
        top = run.top(run.records[a["question_id"]])
        assert a["context_units"] == [u.id for u in top]
        assert a["generation"]["model"] == "gen-test" and a["generation"]["prompt_version"] == "answer-v2"
        assert a["generation"]["usage"] == {"prompt_tokens": 100, "completion_tokens": 10, "estimated": False}
        if a["question_id"] == "q6":
            assert a["answer"] == "" and a["refused"] is True and a["generation"]["reply"] == ""
            assert a["refusal"] == "I can't help with that."  # what the model said instead
        else:
            assert a["answer"] == run.text(top[0]).split("\n")[0].strip() and "refused" not in a
    meta = json.loads(meta_path(out).read_text())
    assert meta["labels"] is None and meta["generated"] is True
    assert (meta["run_id"], meta["candidate"], meta["k"]) == (run.run_id, "hash/tok24/flat", 3)
    assert meta["run_path"] == str(run.run.path) and meta["goldset"]["path"].endswith("gold.jsonl")
    assert meta["generator"]["model"] == "gen-test" and meta["generator"]["base_url"] == server.base_url
    assert meta["generator"]["max_tokens"] == 800  # an answer's default
    text = PROMPT.read_text()
    assert meta["prompt"] == {
        "name": "answer_v2.md",
        "version": "answer-v2",
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "text": text,
    }
    assert meta["tokens"] == {"prompt": 600, "completion": 60, "estimated": False}
    assert meta["cost_usd"] == pytest.approx((600 * 2 + 60 * 8) / 1e6)
    assert meta["calls"] == {"sent": 0, "from_cache": 6, "not_sent_budget": 0}
    assert load_answers(out).answers[0].context_units  # the file reads back as an answers file
    assert all(KEY not in p for p in prompts) and no_key_in(out, meta_path(out), replies_path(out))
    assert not any(re.search(r"#\d{4}|score|grade", p) for p in prompts)  # no unit id or retrieval figure


def test_max_cost_leaves_out_the_questions_it_cannot_pay_for(tmp_path, run):
    # $1 a prompt token: a call bills $100 and is estimated at its prompt's characters / 4
    with ChatServer(scripted) as server:
        report = generate(run, tmp_path / "a.jsonl", server, price_in=1e6, max_cost=350.0, concurrency=1)
    assert 1 <= report.answered < 6 and len(server.received) == report.answered
    assert report.not_asked == tuple(f"q{i}" for i in range(report.answered + 1, 7))
    assert report.tally.cost <= 350.0 and report.tally.skipped == 6 - report.answered
    assert json.loads(meta_path(tmp_path / "a.jsonl").read_text())["not_asked"] == list(report.not_asked)


def test_transient_failures_are_retried(tmp_path, run):
    with ChatServer(scripted, plan=("429", "500", "503")) as server:
        report = generate(run, tmp_path / "a.jsonl", server, concurrency=1)
    assert report.answered == 6 and len(server.received) == 9


def test_a_401_is_one_line_without_the_key(tmp_path, run):
    with ChatServer(scripted, plan=("401",)) as server, pytest.raises(BenchError) as info:
        generate(run, tmp_path / "a.jsonl", server, concurrency=1)
    message = str(info.value)
    assert "401" in message and f"${KEY_ENV}" in message and "\n" not in message
    assert KEY not in "".join(traceback.format_exception(info.value))
    assert not (tmp_path / "a.jsonl").exists()


CONTEXTS = [
    "Full-time employees accrue twenty-five days of paid vacation per calendar year.",
    "Laptops are replaced every three years.",
]
VACATION, LAPTOPS = CONTEXTS
HAND_MADE: list[dict[str, Any]] = [
    {"question_id": "q1", "answer": f"{VACATION} {LAPTOPS}"},
    {"question_id": "q2", "answer": f"{VACATION} Unused days expire in January."},
    {
        "question_id": "q3",
        "answer": f"{LAPTOPS} GARBLE laptops are blue. MAYBE laptops are red. REFUSE laptops are green.",
    },
    {"question_id": "q4", "answer": "UNPARSABLE answer."},
    {"question_id": "q5", "answer": ""},
    {
        "question_id": "q6",
        "answer": "Who knows, the weather is nice.",
        "claims": [
            {"text": LAPTOPS, "supported": False, "note": "checked"},
            {"text": "It is sunny.", "supported": True},
        ],
    },
]
GOLD = {
    "q1": VACATION,
    "q2": "Unused vacation days may be carried over until the end of March.",
    "q5": "Pages must be acknowledged within fifteen minutes.",
}


def hand_made(tmp_path: Path) -> tuple[Path, Path]:
    answers, gold = tmp_path / "answers.jsonl", tmp_path / "gold.jsonl"
    answers.write_text("".join(json.dumps({**r, "contexts": CONTEXTS}) + "\n" for r in HAND_MADE))
    gold.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "question": f"Question {i}?", "answer": GOLD.get(f"q{i}", "")}) + "\n"
            for i in range(1, 7)
        )
    )
    return answers, gold


def test_judge_labels_claim_by_claim_and_never_guesses(tmp_path):
    source, gold = hand_made(tmp_path)
    questions = read_goldset_questions(gold)
    with ChatServer(scripted) as server:
        report = judge(source, server, questions=questions, price_in=1.0, price_out=1.0)
        sent = len(server.received)
        again = judge(
            source, server, questions=questions, price_in=1.0, price_out=1.0
        )  # the same command again: all from cache
        assert len(server.received) == sent and (again.tally.sent, again.tally.cached) == (0, sent)
        prompts = server.prompts()
    assert sent == report.tally.sent == 21  # identical requests (one claim, the same contexts) are asked once
    out = judged_path(source)
    assert out == tmp_path / "answers.judged.jsonl"
    by = {r["question_id"]: r for r in rows(out)}
    labels = {q: [(c["text"], c["supported"]) for c in r.get("claims") or []] for q, r in by.items()}
    assert labels["q1"] == [(VACATION, True), (LAPTOPS, True)]
    assert labels["q2"] == [(VACATION, True), ("Unused days expire in January.", False)]
    assert labels["q3"] == [
        (LAPTOPS, True),
        ("GARBLE laptops are blue.", None),
        ("MAYBE laptops are red.", None),
        ("REFUSE laptops are green.", None),
    ]
    assert "claims" not in by["q4"] and by["q4"]["judge"]["problems"] == [
        'claims: malformed reply: no "claims" list of strings'
    ]
    assert by["q3"]["judge"]["problems"] == [
        'claim 2: malformed reply: no true/false "supported"',
        'claim 3: malformed reply: no true/false "supported"',
        "claim 4: refused (empty reply)",
    ]
    assert by["q3"]["judge"]["supported"][1]["reply"] == "I would say it is, mostly."
    assert by["q1"]["claims"][0]["reason"] == "compared word for word"
    # a person's claims keep their texts and notes; the judge's verdicts replace their labels
    assert labels["q6"] == [(LAPTOPS, True), ("It is sunny.", False)] and by["q6"]["claims"][0]["note"] == "checked"
    assert by["q6"]["judge"]["claims"] == {"given": True} and by["q6"]["addresses_question"] is False
    # an empty answer makes no claims, addresses nothing and states no reference claim, unasked
    assert by["q5"]["claims"] == [] and by["q5"]["addresses_question"] is False
    assert by["q5"]["reference_claims"] == [{"text": GOLD["q5"], "covered": False, "reason": "the answer is empty"}]
    assert [(c["text"], c["covered"]) for c in by["q1"]["reference_claims"]] == [(VACATION, True)]
    assert [(c["text"], c["covered"]) for c in by["q2"]["reference_claims"]] == [(GOLD["q2"], False)]
    assert all(by[q]["addresses_question"] is True for q in ("q1", "q2", "q3", "q4"))
    assert (report.claims, report.supported, report.undecided) == (10, 5, 3)
    assert report.problems == {"malformed reply": 3, "refused (empty reply)": 1}
    meta = json.loads(meta_path(out).read_text())
    rubric = claim_judge.RUBRIC.read_text()
    assert meta["labels"] == JUDGE and meta["source"]["path"] == str(source)
    assert meta["source"]["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert meta["judge"]["model"] == "judge-test" and meta["judge"]["base_url"] == server.base_url
    assert meta["judge"]["max_tokens"] == 600 and meta["judge"]["response_format"] is True
    assert meta["judge"]["rubric_version"] == meta["rubric"]["version"] == "rubric-v2"
    assert meta["judge"]["rubric_sha256"] == meta["rubric"]["sha256"] == hashlib.sha256(rubric.encode()).hexdigest()
    assert meta["tokens"] == {"prompt": 100 * sent, "completion": 10 * sent, "estimated": False}
    assert meta["cost_usd"] == pytest.approx(110 * sent / 1e6)
    assert meta["calls"]["from_cache"] == sent and meta["problems"] == report.problems
    assert load_answers(out).labelled_by == JUDGE
    # what the judge is shown: the question, the answer, the contexts, the rubric; a claim at a time
    support = [p for p in prompts if '{"supported":' in p]
    assert len(support) == 7 and all(p.count("Claim: ") == 1 and "Answer:" not in p for p in support)
    assert all(f"[1]\n{VACATION}\n\n[2]\n{LAPTOPS}\n\nClaim: " in p for p in support)  # the contexts, numbered
    assert all(KEY not in p for p in prompts) and no_key_in(out, meta_path(out), replies_path(out))


def test_judging_a_generated_file_reads_contexts_and_questions_from_its_run(tmp_path, run):
    generated = tmp_path / "gen.jsonl"
    with ChatServer(scripted) as server:
        generate(run, generated, server)
        server.received.clear()
        source = load_answers(generated)
        found, questions = resolve_sources(source, results=tmp_path / "elsewhere")  # the meta's run_path
        assert found is not None and found.run_id == run.run_id and set(questions) == set(run.records)
        report = judge(generated, server, run=found, questions=questions)
        prompts = [m["content"] for r in server.received for m in r["body"]["messages"][1:]]
    judged = {r["question_id"]: r for r in rows(judged_path(generated))}
    assert report.answers == 6 and judged["q6"]["claims"] == [] and judged["q1"]["claims"][0]["supported"] is True
    assert judged["q1"]["generation"]["model"] == "gen-test"  # the generator's record is kept, never sent
    meta = json.loads(meta_path(judged_path(generated)).read_text())
    assert (meta["run_id"], meta["candidate"], meta["generated"]) == (run.run_id, run.candidate, True)
    units = {u.id for r in run.records.values() for u in r.ranking}
    scores = {f"{u.score:.4f}" for r in run.records.values() for u in r.ranking if u.score}
    for p in prompts:
        assert not any(uid in p for uid in units) and not any(s in p for s in scores)
        assert not re.search(r"score|rank|grade|gen-test|prompt_version", p)
    asked_about = {r.question for r in run.records.values()}
    assert any(q in p for p in prompts for q in asked_about)  # the questions themselves are sent


def test_judge_needs_contexts_or_a_run_and_keeps_a_persons_file(tmp_path):
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"question_id": "q1", "answer": "Yes."}) + "\n")
    with pytest.raises(BenchError, match=r"give no contexts and the file names no run; pass --run RUN"):
        resolve_sources(load_answers(bare))
    source, gold = hand_made(tmp_path)
    out = tmp_path / "labelled.jsonl"
    out.write_text(source.read_text())  # a person's file, no meta
    with ChatServer(scripted) as server:
        with pytest.raises(BenchError, match=r"not a judge's output; pass --force"):
            judge(source, server, out=out, questions=read_goldset_questions(gold))
        with pytest.raises(BenchError, match=r"is the file being judged"):
            judge(source, server, out=source, questions=read_goldset_questions(gold))
    assert not server.received


def test_the_commands_generate_and_judge_end_to_end(tmp_path, run_folder):
    out = tmp_path / "answers.jsonl"
    with ChatServer(scripted) as server:
        chat = ["--llm-base-url", server.base_url, "--llm-api-key-env", KEY_ENV, "--price-in", "3", "--price-out", "15"]
        made = run_cli("answers", "generate", str(run_folder), "--out", str(out), "--llm-model", "gen-test", *chat)
        judged = run_cli("answers", "judge", str(out), "--judge-model", "judge-test", *chat)
        refused = run_cli("answers", "generate", str(run_folder), "--out", str(out), "--llm-model", "gen-test", *chat)
        no_url = run_cli("answers", "judge", str(out), "--judge-model", "judge-test")
    assert made.returncode == 0, made.stderr
    assert f"answers: {out} (6 from hash/tok24/flat" in made.stdout and "answered 6 questions (1 refused" in made.stderr
    assert judged.returncode == 0, judged.stderr
    assert "judged 6 answers:" in judged.stderr and "cost $" in judged.stderr
    assert f"bench answers score {tmp_path / 'answers.judged.jsonl'}" in judged.stdout
    assert refused.returncode == 2 and "exists; pass --force" in refused.stderr
    assert no_url.returncode == 2 and "--llm-base-url" in no_url.stderr
    for done in (made, judged, refused, no_url):
        assert KEY not in done.stdout + done.stderr
    assert load_answers(tmp_path / "answers.judged.jsonl").labelled_by == JUDGE
