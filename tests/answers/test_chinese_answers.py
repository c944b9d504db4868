"""Answers generated and judged in Chinese, against a chat-completions server on 127.0.0.1 that replies
in UTF-8: the prompts ask for the question's language, and claims are cut at Chinese sentence ends."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from bench.answers.claim_judge import judge_answers, judged_path, resolve_sources, sentences
from bench.answers.contexts import RunContexts, open_run
from bench.answers.generate import generate_answers
from bench.answers.score import agree
from bench.inputs.answers import load_answers, meta_path
from bench.llm.client import ChatClient
from bench.llm.settings import ChatSettings
from tests.answers.chat_server import ChatServer
from tests.helpers import finished_runs, run_cli

KEY_ENV = "BENCH_TEST_ANSWERS_KEY"

DOCS = {
    "hr/年假.md": "全职员工每个日历年可享受二十五天带薪年假。未休完的年假可以顺延至次年三月底，逾期作废。\n",
    "it/电脑.md": "工程师入职时领取一台配备32GB内存的笔记本电脑。笔记本电脑每三年更换一次。\n",
    "ops/备份.txt": "数据库每晚凌晨两点自动备份，备份文件保留三十五天。值班工程师每季度进行一次恢复演练。\n",
}
QUESTIONS = [
    ("q1", "我一年能休几天带薪假？", "hr/年假.md", "全职员工每个日历年可享受二十五天带薪年假。"),
    ("q2", "笔记本电脑多久换一次？", "it/电脑.md", "笔记本电脑每三年更换一次。"),
    ("q3", "数据库备份能保存多久？", "ops/备份.txt", "备份文件保留三十五天。"),
]
CONFIG = """\
corpus = "corpus"
goldset = "gold.jsonl"
results = "results"
cache_dir = "cache"
k = 2
depth = 4
models = ["hash"]

[chunkers.tok24]
kind = "tokens"
size = 24
overlap = 4
"""
# what the model adds to its answer to each question: in no context
INVENTED = {"q1": "公司每年发放两次奖金。", "q2": "食堂每天中午供应免费午餐。", "q3": "停车场周末不对外开放。"}
_BY_TEXT = {text: INVENTED[qid] for qid, text, _, _ in QUESTIONS}


def _between(text: str, start: str, end: str) -> str:
    found = re.search(re.escape(start) + r"(.*?)" + re.escape(end), text, re.S)
    assert found, f"{start!r} … {end!r} not in {text!r}"
    return found.group(1)


def scripted(body: dict) -> str:
    """A model that answers with its first context's first sentence and an invented one; splits an
    answer lazily (one string, wrapped mid-sentence); finds a claim supported when the contexts hold it."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if system.startswith("You answer questions"):
        first = _between(user, "[1]\n", "\n").strip()
        return first.split("。")[0] + "。" + _BY_TEXT[_between(user, "Question: ", "\n")]
    if '{"claims": [' in user:
        answer = _between(user, "Answer: ", "\n\nReply with JSON only")
        return json.dumps({"claims": [answer[:4] + "\n" + answer[4:]]}, ensure_ascii=False)
    if '{"supported":' in user:
        claim, contexts = _between(user, "Claim: ", "\n\nReply"), _between(user, "Contexts:\n\n", "\n\nClaim:")
        return json.dumps({"supported": claim.rstrip("。") in contexts, "reason": "逐字比较"}, ensure_ascii=False)
    if '{"addresses_question":' in user:
        return json.dumps({"addresses_question": True, "reason": "回答了问题"}, ensure_ascii=False)
    raise AssertionError(f"unexpected request: {user[:200]!r}")


@pytest.fixture(autouse=True)
def quick_and_keyed(monkeypatch):
    monkeypatch.setattr(ChatClient, "backoff_base", 0.001)
    monkeypatch.setenv(KEY_ENV, "sk-test")


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    """A finished run over the Chinese documents with the hashing model: one candidate, k = 2."""
    root = tmp_path_factory.mktemp("zh")
    for rel, text in DOCS.items():
        (root / "corpus" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / rel).write_text(text, encoding="utf-8")
    gold = [{"id": i, "question": t, "evidence": [{"doc": d, "quote": e}]} for i, t, d, e in QUESTIONS]
    (root / "gold.jsonl").write_text("".join(json.dumps(g, ensure_ascii=False) + "\n" for g in gold), "utf-8")
    (root / "bench.toml").write_text(CONFIG, encoding="utf-8")
    done = run_cli("run", str(root / "bench.toml"), cwd=root)
    assert done.returncode == 0, done.stderr
    (folder,) = finished_runs(root / "results")
    return folder


@pytest.fixture
def run(run_folder) -> RunContexts:
    return open_run(run_folder, run_folder.parent, None)


def settings(server: ChatServer, model: str) -> ChatSettings:
    return ChatSettings(server.base_url, model, api_key_env=KEY_ENV, concurrency=1)


def quiet() -> Console:
    return Console(file=StringIO(), width=200)


def test_chinese_answers_are_generated_and_their_claims_judged_sentence_by_sentence(tmp_path, run):
    out = tmp_path / "answers.jsonl"
    with ChatServer(scripted, utf8=True) as server:
        generate_answers(run, out, settings(server, "gen-test"), console=quiet())
        asked = [r["body"]["messages"] for r in server.received]
        server.received.clear()
        source = load_answers(out)
        found, questions = resolve_sources(source)
        report = judge_answers(
            source, None, settings(server, "judge-test"), run=found, questions=questions, console=quiet()
        )
        judged = [r["body"]["messages"] for r in server.received]
    for system, user in ((m[0]["content"], m[1]["content"]) for m in asked):
        assert "Answer in the language the question is written in" in system and "never translated" in system
        assert user.endswith("in the language of the question, without headings or lists.")
    answers = {a.question_id: a for a in load_answers(out).answers}
    firsts = {qid: run.text(run.top(run.records[qid])[0]).split("。")[0] + "。" for qid in answers}
    assert {qid: a.answer for qid, a in answers.items()} == {
        qid: first + INVENTED[qid] for qid, first in firsts.items()
    }
    assert all(a.extra["generation"]["prompt_version"] == "answer-v2" for a in answers.values())
    # one string of two sentences, wrapped mid-sentence, is two claims without the line break
    rows = {a.question_id: a for a in load_answers(judged_path(out)).answers}
    for qid, a in rows.items():
        assert [(c.text, c.supported) for c in a.claims or ()] == [(firsts[qid], True), (INVENTED[qid], False)]
        assert a.extra["judge"]["claims"]["reply"].count("\\n") == 1  # the model's reply is kept as it came
    assert (report.claims, report.supported, report.undecided) == (6, 3, 0)
    support = [m[1]["content"] for m in judged if '{"supported":' in m[1]["content"]]
    distinct = {
        (tuple(run.text(u) for u in run.top(run.records[qid])), c.text)
        for qid, a in rows.items()
        for c in a.claims or ()
    }
    assert len(support) == len(distinct)  # a claim asked once per set of contexts
    assert all(any(f"Claim: {invented}\n" in u for u in support) for invented in INVENTED.values())
    assert all("Claims are written and judged in the language of the answer" in m[0]["content"] for m in judged)
    claims_asked = [m[1]["content"] for m in judged if '{"claims": [' in m[1]["content"]]
    assert len(claims_asked) == 3
    assert all("at 。！？ or ； and at …… in Chinese and Japanese" in u for u in claims_asked)
    meta = json.loads(meta_path(judged_path(out)).read_text("utf-8"))
    assert meta["judge"]["rubric_version"] == "rubric-v2"

    # a person's labels of the same claims, one of them wrapped, match the judge's claim for claim
    person = tmp_path / "person.jsonl"
    lines = []
    for qid, first in firsts.items():
        claims = [{"text": first[:3] + "\n" + first[3:], "supported": True}, {"text": INVENTED[qid], "supported": True}]
        lines.append(
            json.dumps({"question_id": qid, "answer": answers[qid].answer, "claims": claims}, ensure_ascii=False)
        )
    person.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = agree(person, judged_path(out))
    assert result["claims"] == 6 and result["unmatched_claims"] == 0
    assert [d["claim"] for d in result["disagreements"]] == list(INVENTED.values())


def test_claims_are_cut_at_chinese_and_japanese_sentence_ends():
    assert sentences("员工每年有二十五天年假。未休完的年假可以顺延。") == [
        "员工每年有二十五天年假。",
        "未休完的年假可以顺延。",
    ]
    assert sentences("备份保留多久？三十五天！") == ["备份保留多久？", "三十五天！"]
    assert sentences("白天值班；夜里待命") == ["白天值班；", "夜里待命"]
    assert sentences("他沉默了……然后笑了。") == ["他沉默了……", "然后笑了。"]
    assert sentences("产品包括手机、电脑……等多种设备。") == [
        "产品包括手机、电脑……等多种设备。"
    ]  # an enumeration goes on
    assert sentences("她说：“可以。”随后离开。") == ["她说：“可以。”", "随后离开。"]  # the closing quote stays
    assert sentences("会議室は三階にあります。予約は不要です。") == ["会議室は三階にあります。", "予約は不要です。"]
    assert sentences("Dr. Smith joined the U.S. office in 2019. He leads it.") == [
        "Dr. Smith joined the U.S. office in 2019. He leads it."  # English is the model's to cut
    ]
    assert sentences("。") == ["。"]  # nothing but an end: left as it came
