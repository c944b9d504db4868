"""Drafting a goldset with a chat model, against a scripted chat-completions server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from bench.drafting import generate
from bench.drafting.draft import load_draft
from bench.drafting.generate import DraftPlan, generate_draft, log_path, windows
from bench.errors import BenchError
from bench.inputs.corpus import Corpus, Document
from bench.llm.client import ChatClient
from bench.llm.settings import ChatSettings
from tests.helpers import free_port, run_cli

KEY_ENV = "BENCH_TEST_LLM_KEY"
KEY = "sk-llm-test-NEVER-SHOWN-8d41c0ffee"

DOCS = {
    "hr/vacation.md": "# Vacation\n\nFull-time employees accrue twenty-five days of paid vacation per calendar "
    "year.\n\nUnused vacation days may be carried over until the end of March of the following year.\n",
    "it/laptops.md": "# Laptops\n\nEngineers receive a laptop with 32 GB of memory and a 1 TB disk.\n\n"
    "Laptops are replaced every three years, or sooner when the battery fails.\n\n"
    "Disk encryption must stay enabled on every company laptop.\n",
    "ops/backups.txt": "Database backups run every night at 02:00 UTC and are kept for thirty-five days.\n\n"
    "A restore drill is performed every quarter by the on-call engineer.\n",
    "ops/oncall.txt": "The on-call rotation changes every Monday at 10:00 local time.\n\n"
    "Pages must be acknowledged within fifteen minutes, day or night.\n",
    "finance/expenses.md": "Receipts for expenses above forty euros must be uploaded within ten working days.\n\n"
    "Taxi rides are reimbursed only after 22:00 or when carrying equipment.\n",
    "it/security.md": "Passwords are rotated every ninety days for administrator accounts.\n\n"
    "Lost badges must be reported to the front desk on the same day.\n",
    "facilities/parking.md": "Each employee may register one car for the underground garage.\n",
    "travel/travel.md": "Flights longer than six hours may be booked in premium economy.\n",
    "hr/training.md": "Every employee has a yearly learning budget of 1,200 euros.\n\n"
    "Courses during working hours need the manager's consent.\n",
    "finance/payroll.md": "Salaries are paid on the twenty-fifth of each month.\n\n"
    "Payslips are available in the HR portal from the twentieth.\n",
}


def q(question: str, *evidence: tuple[str, str]) -> dict:
    return {"question": question, "evidence": [{"doc": d, "quote": t} for d, t in evidence]}


VACATION = "Full-time employees accrue twenty-five days of paid vacation per calendar year."
LAPTOP = "Engineers receive a laptop with 32 GB of memory and a 1 TB disk."
# What the model answers for a prompt showing each document; a string is sent as it is.
SCRIPT: dict[str, list | str] = {
    "hr/vacation.md": [
        q("How much paid time off do I build up in a year?", ("hr/vacation.md", VACATION)),
        q(
            "Can leftover holiday still be taken next spring?",
            ("hr/vacation.md", "Unused vacation days may be carried over until the end of March"),
        ),
        q(
            "Do developers get a big machine and more than twenty days off?",  # two pieces of evidence
            ("hr/vacation.md", VACATION),
            ("it/laptops.md", LAPTOP),
        ),
    ],
    "it/laptops.md": [  # sent inside a code fence, with words around it
        q("How often do we get a new notebook computer?", ("it/laptops.md", "Laptops are replaced every three years")),
        q("Am I allowed to turn off drive protection?", ("it/laptops.md", "Disk encryption must stay enabled")),
        q("What storage size comes with a developer machine?", ("it/laptops.md", LAPTOP)),
    ],
    "ops/backups.txt": [
        q(
            "For how long can old database copies be restored?",
            ("ops/backups.txt", "Database backups run every night at 02:00 UTC and are kept for thirty-five days."),
        ),
        q("When do recovery tests happen?", ("ops/backups.txt", "Restore drills happen monthly.")),  # invented
        q("Who looks after the copies?", ("ops/backups.txt", "The backup team checks every backup.")),  # invented
    ],
    "ops/oncall.txt": [
        q("How fast do I have to respond to an alert?", ("ops/oncall.txt", "Pages must be acknowledged within")),
        q(  # copies its quote
            "When does the on-call rotation change every Monday?",
            ("ops/oncall.txt", "The on-call rotation changes every Monday at 10:00 local time."),
        ),
        q(  # copies its quote
            "Must pages be acknowledged within fifteen minutes day or night?",
            ("ops/oncall.txt", "Pages must be acknowledged within fifteen minutes, day or night."),
        ),
    ],
    "finance/expenses.md": [
        q("How long do I have to hand in my receipts?", ("finance/expenses.md", "Receipts for expenses above forty")),
        q("How long do I have to hand in receipts?", ("finance/expenses.md", "must be uploaded within ten")),  # dup
        q("Will the company pay for a cab home in the evening?", ("finance/expenses.md", "Taxi rides are reimbursed")),
    ],
    "it/security.md": [
        q("How often must admins change their login secret?", ("it/security.md", "Passwords are rotated every ninety")),
        q("What should I do if I lose my access card?", ("it/security.md", "Lost badges must be reported")),
        q("Is there a VPN?", ("it/vpn.md", "A VPN is required.")),  # no such document
    ],
    "facilities/parking.md": 'Sure! Here are the questions: {questions: [{"question": "Where',  # not JSON
    "travel/travel.md": "",
    "hr/training.md": [
        q(  # a curly apostrophe where the document has a straight one: still found
            "Does my boss have to agree before I study on company time?",
            ("hr/training.md", "Courses during working hours need the manager\u2019s consent."),
        ),
        q(
            "How much can I spend on courses?", ("hr/training.md", "a yearly learning budget of 2,000 euros")
        ),  # invented
        {"question": "Who approves courses?"},  # no evidence
    ],
    "finance/payroll.md": [
        q("On which day does my pay arrive?", ("finance/payroll.md", "Salaries are paid on the twenty-fifth")),
        q("Where can I download my salary statement?", ("finance/payroll.md", "Payslips are available in the HR")),
        q("How much paid time off do I build up each year?", ("hr/vacation.md", VACATION)),  # dup of vacation's first
    ],
}
KEPT, ASKED = 15, 30
DROPPED = {
    "invented quote": 3,
    "copies its evidence": 2,
    "near-duplicate": 2,
    "unknown document": 1,
    "malformed question": 1,
    "unparsable reply": 1,
    "empty reply": 1,
}


def reply_for(prompt: str) -> str:
    docs = re.findall(r'<passage doc="([^"]+)">', prompt)
    if len(docs) == 1 and isinstance(SCRIPT[docs[0]], str):
        return str(SCRIPT[docs[0]])
    questions = [item for d in docs if isinstance(SCRIPT[d], list) for item in SCRIPT[d]]
    text = json.dumps({"questions": questions})
    return f"Here you go:\n```json\n{text}\n```\nHope this helps." if "it/laptops.md" in docs else text


class ChatServer:
    """A chat-completions endpoint answering from SCRIPT; ``plan`` scripts the first answers
    (``"429:<retry-after>"``, ``"500"``, ``"503"``, ``"401"``, ``"ok"``), then it answers ``default``."""

    def __init__(self, plan=(), default="ok", reject_response_format=False, jitter=False) -> None:
        self.plan, self.default = list(plan), default
        self.reject_response_format, self.jitter = reject_response_format, jitter
        self.received: list[dict] = []
        self.lock = threading.Lock()
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ChatServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    action = server.plan.pop(0) if server.plan else server.default
                prompt = body["messages"][-1]["content"]
                if server.jitter:  # later calls tend to come back first
                    time.sleep(0.002 * (len(prompt) % 7))
                if action.startswith("429"):
                    self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": action.partition(":")[2]})
                elif action in ("500", "503"):
                    self._send(int(action), {"error": "overloaded"})
                elif action == "401":  # echoes the header, as careless servers do
                    self._send(401, {"error": {"message": f"bad key {self.headers.get('Authorization')}"}})
                elif server.reject_response_format and "response_format" in body:
                    self._send(400, {"error": {"message": "response_format is not supported by this model"}})
                else:
                    message = {"role": "assistant", "content": reply_for(prompt)}
                    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
                    self._send(200, {"choices": [{"index": 0, "message": message}], "usage": usage})

            def _send(self, status: int, obj: dict, headers: dict | None = None) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(autouse=True)
def quick_and_keyed(monkeypatch):
    monkeypatch.setattr(ChatClient, "backoff_base", 0.001)
    monkeypatch.setattr(ChatClient, "backoff_cap", 0.005)
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def corpus(tmp_path) -> Corpus:
    return Corpus.from_documents(tmp_path / "corpus", [Document(i, DOCS[i]) for i in sorted(DOCS)])


def draft(corpus: Corpus, out: Path, server: ChatServer, n: int = ASKED, seed: int = 0, force: bool = False, **chat):
    """One document a call, so that each reply is the script of one document."""
    settings = ChatSettings(server.base_url, "chat-test", api_key_env=KEY_ENV, **chat)
    plan = DraftPlan(per_call=3, passages_per_call=1, seed=seed)
    return generate_draft(corpus, n, out, settings, plan, force=force, console=quiet())


def quiet() -> Console:
    return Console(file=StringIO(), width=200)


def kept(out: Path) -> list[tuple]:
    return [(x.question, x.evidence) for x in load_draft(out).questions]


def test_replies_are_checked_kept_and_counted(tmp_path, corpus):
    out = tmp_path / "goldsets" / "kb.draft.jsonl"
    with ChatServer() as server:
        report = draft(corpus, out, server)
    assert len(server.received) == 10  # every passage asked about once
    assert (report.kept, report.asked, report.dropped) == (KEPT, ASKED, DROPPED)
    assert report.stopped == "passages used up" and report.calls_sent == 10 and report.calls_cached == 0
    assert (report.prompt_tokens, report.completion_tokens) == (1000, 200)
    questions = load_draft(out).questions
    assert [x.id for x in questions] == [f"g{i:03d}" for i in range(1, KEPT + 1)]
    for x in questions:
        assert x.origin == "llm" and x.status == "pending" and x.evidence
        assert all(e.grade == 2 for e in x.evidence)
        assert [(p.doc, [(f.retriever, f.rank, f.score) for f in p.found_by]) for p in x.passages] == [
            (x.passages[0].doc, [("llm", 1, None)])
        ]
        assert x.passages[0].start == 0 and x.passages[0].end == len(DOCS[x.passages[0].doc].rstrip())
    by_text = {x.question: x for x in questions}
    multi = by_text["Do developers get a big machine and more than twenty days off?"]
    assert [(e.doc, DOCS[e.doc][e.start : e.end]) for e in multi.evidence] == [
        ("hr/vacation.md", VACATION),
        ("it/laptops.md", LAPTOP),
    ]
    assert "How often do we get a new notebook computer?" in by_text  # from the fenced reply
    curly = by_text["Does my boss have to agree before I study on company time?"].evidence[0]
    assert DOCS["hr/training.md"][curly.start : curly.end] == "Courses during working hours need the manager's consent."
    assert "How long do I have to hand in receipts?" not in by_text  # the later of two near-duplicates
    meta = json.loads(out.with_name("kb.draft.meta.json").read_text())
    assert meta["method"] == "llm" and meta["model"] == "chat-test" and meta["base_url"] == server.base_url
    assert meta["prompt_version"] == generate.PROMPT_VERSION and meta["prompt"]["user"] == generate.USER_PROMPT
    assert (meta["per_call"], meta["seed"], meta["kept"], meta["dropped"]) == (3, 0, KEPT, DROPPED)
    assert meta["tokens"] == {"prompt": 1000, "completion": 200, "estimated": False}
    rows = [json.loads(line) for line in log_path(out).read_text().splitlines()]
    assert len(rows) == 10 and {r["model"] for r in rows} == {"chat-test"}
    assert all(set(r) >= {"key", "reply", "usage", "prompt_version"} for r in rows)
    first = server.received[0]
    assert first["path"] == "/v1/chat/completions" and first["headers"]["Authorization"] == f"Bearer {KEY}"
    assert first["body"]["response_format"] == {"type": "json_object"} and first["body"]["temperature"] == 0
    for path in (out, out.with_name("kb.draft.meta.json"), log_path(out)):
        assert KEY not in path.read_text()


def test_concurrency_keeps_the_same_questions_in_the_same_order(tmp_path, corpus):
    with ChatServer(jitter=True) as server:
        draft(corpus, tmp_path / "one.draft.jsonl", server, concurrency=1)
        draft(corpus, tmp_path / "four.draft.jsonl", server, concurrency=4)
        draft(corpus, tmp_path / "stop.draft.jsonl", server, n=7, concurrency=4)
    assert kept(tmp_path / "one.draft.jsonl") == kept(tmp_path / "four.draft.jsonl")
    assert kept(tmp_path / "stop.draft.jsonl") == kept(tmp_path / "one.draft.jsonl")[:7]


def test_a_rerun_resumes_from_the_reply_log(tmp_path, corpus):
    out = tmp_path / "kb.draft.jsonl"
    with ChatServer() as server:
        draft(corpus, out, server)
        before = kept(out)
        again = draft(corpus, out, server)  # the same command typed again: nothing is sent
        assert len(server.received) == 10 and again.calls_cached == 10 and kept(out) == before
        assert again.cost_usd == 0 and again.prompt_tokens == 1000  # what the draft used, not what this run paid
        # a crash after four replies, the last line cut short, and no draft written yet
        lines = log_path(out).read_text().splitlines(keepends=True)
        log_path(out).write_text("".join(lines[:4]) + lines[4][:30])
        out.unlink()
        resumed = draft(corpus, out, server, concurrency=2)
    assert (resumed.calls_cached, resumed.calls_sent) == (4, 6) and len(server.received) == 16
    assert kept(out) == before


def test_an_existing_draft_is_not_overwritten_unless_forced(tmp_path, corpus):
    out = tmp_path / "kb.draft.jsonl"
    with ChatServer() as server:
        draft(corpus, out, server, n=3)
        with pytest.raises(BenchError, match=r"other settings \(seed\).*--force"):
            draft(corpus, out, server, n=3, seed=1)
        text = out.read_text()
        out.write_text(text.replace('"status":"pending"', '"status":"accepted"', 1))
        with pytest.raises(BenchError, match=r"1 of its questions have been reviewed"):
            draft(corpus, out, server, n=3)
        draft(corpus, out, server, n=3, seed=1, force=True)
    assert json.loads(out.with_name("kb.draft.meta.json").read_text())["seed"] == 1


def test_max_cost_stops_before_a_call_that_would_pass_it(tmp_path, corpus):
    # Each call is estimated at its max_tokens (950) of reply, $1 a token; a reply bills 20 tokens:
    # three calls ($60 spent) leave too little for a fourth.
    for concurrency in (1, 4):
        with ChatServer() as server:
            out = tmp_path / f"c{concurrency}.draft.jsonl"
            report = draft(corpus, out, server, price_out=1e6, max_cost=1000.5, concurrency=concurrency)
        assert len(server.received) == 3 and report.stopped == "budget" and report.calls_sent == 3
        assert report.cost_usd == pytest.approx(60.0)


@pytest.mark.parametrize("plan", [["429:0.3", "ok"], ["500", "503", "ok"]])
def test_transient_failures_are_retried(tmp_path, corpus, monkeypatch, plan):
    monkeypatch.setattr(ChatClient, "backoff_base", 30.0)  # only Retry-After or a short backoff keeps it quick
    monkeypatch.setattr(ChatClient, "backoff_cap", 0.01 if plan[0] == "500" else 30.0)
    with ChatServer(plan=plan) as server:
        start = time.monotonic()
        report = draft(corpus, tmp_path / "kb.draft.jsonl", server, n=1, concurrency=1)
    assert 0.3 <= time.monotonic() - start < 5 or plan[0] == "500"
    assert report.kept == 1 and len(server.received) == len(plan)


def test_exhausted_retries_fail_in_one_line_without_the_key(tmp_path, corpus):
    with ChatServer(default="503") as server, pytest.raises(BenchError) as info:
        draft(corpus, tmp_path / "kb.draft.jsonl", server, max_attempts=3, concurrency=2)
    message = str(info.value)
    assert "\n" not in message and "3 attempts" in message and "503" in message and server.base_url in message
    assert KEY not in "".join(traceback.format_exception(info.value))
    assert not (tmp_path / "kb.draft.jsonl").exists()


def test_a_dead_server_is_one_line(tmp_path, corpus):
    dead = ChatServer()  # never started
    with pytest.raises(BenchError, match=r"failed 2 attempts \(last: connection refused\); check that the server"):
        draft(corpus, tmp_path / "kb.draft.jsonl", dead, max_attempts=2, concurrency=1)


def test_401_names_the_env_var_and_never_the_key(tmp_path, corpus):
    with ChatServer(default="401") as server, pytest.raises(BenchError) as info:
        draft(corpus, tmp_path / "kb.draft.jsonl", server, concurrency=1)
    message = str(info.value)
    assert "401" in message and f"${KEY_ENV}" in message and "\n" not in message
    assert KEY not in message and KEY not in "".join(traceback.format_exception(info.value))
    assert len(server.received) == 1


def test_a_server_without_response_format_is_asked_without_it(tmp_path, corpus):
    with ChatServer(reject_response_format=True) as server:
        report = draft(corpus, tmp_path / "kb.draft.jsonl", server, concurrency=1)
    assert report.kept == KEPT
    with_format = [r for r in server.received if "response_format" in r["body"]]
    assert len(with_format) == 1 and len(server.received) == 11  # asked once with it, then never again


def test_the_key_is_optional_on_loopback_and_needed_elsewhere(monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    client = ChatClient("http://127.0.0.1:9/v1", "m", api_key_env=KEY_ENV)
    assert "unset" in repr(client)
    with pytest.raises(BenchError, match=rf"\${KEY_ENV} is not set"):
        ChatClient("https://llm.example.com/v1", "m", api_key_env=KEY_ENV)
    monkeypatch.setenv(KEY_ENV, KEY)
    client = ChatClient("https://llm.example.com/v1", "m", api_key_env=KEY_ENV)
    assert KEY not in repr(client) and KEY not in str(vars(client))


def test_windows_cut_at_paragraphs():
    text = "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(10))
    spans = windows(text, 700)
    assert all(text[s:e].startswith("Paragraph") and e - s <= 700 for s, e in spans)
    assert " ".join(text[s:e] for s, e in spans).split() == text.split()


def test_the_command_drafts_and_refuses_two_sources(tmp_path):
    for rel, text in DOCS.items():
        (tmp_path / "corpus" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "corpus" / rel).write_text(text)
    out = tmp_path / "goldsets" / "kb.draft.jsonl"
    args = ["goldset", "draft", "--corpus", str(tmp_path / "corpus"), "--out", str(out)]
    with ChatServer() as server:
        llm = ["--llm-base-url", server.base_url, "--llm-model", "chat-test", "--llm-api-key-env", KEY_ENV]
        done = run_cli(*args, "--generate", "4", *llm, "--price-in", "2", "--price-out", "8")
        assert done.returncode == 0, done.stderr
        again = run_cli(*args, "--generate", "4", *llm, "--price-in", "2", "--price-out", "8")
        both = run_cli(*args, "--generate", "4", "--questions", str(tmp_path / "q.txt"), *llm)
        no_model = run_cli(*args, "--generate", "4", "--llm-base-url", server.base_url)
    assert f"draft: {out} (4 questions" in done.stdout and f"bench goldset review {out}" in done.stdout
    assert "kept 4 of 4" in done.stderr and "cost $" in done.stderr
    assert again.returncode == 0 and len(server.received) == 2  # three passages a call; the rerun sent nothing
    assert len(load_draft(out).questions) == 4
    for failed in (both, no_model):
        assert failed.returncode == 2 and len(failed.stderr.strip().splitlines()) == 1
    assert "one of --questions FILE" in both.stderr and "--llm-model" in no_model.stderr
    for text in (done.stdout, done.stderr, again.stdout, again.stderr, out.read_text()):
        assert KEY not in text
