"""Drafting a goldset over Chinese documents, against a chat-completions server on 127.0.0.1 that
replies in Chinese (UTF-8, as real servers send it)."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from bench.drafting import generate
from bench.drafting.draft import load_draft
from bench.drafting.generate import DraftPlan, generate_draft
from bench.inputs.corpus import Corpus, Document
from bench.llm.client import ChatClient, estimate_tokens
from bench.llm.settings import ChatSettings
from tests.answers.chat_server import ChatServer

KEY_ENV = "BENCH_TEST_LLM_KEY"

DOCS = {
    "hr/年假.md": "# 年假制度\n\n全职员工每个日历年可享受二十五天带薪年假。\n\n"
    "未休完的年假可以顺延至次年三月底，逾期作废。\n",
    "it/电脑.md": "# 办公电脑\n\n工程师入职时领取一台配备32GB内存和1TB硬盘的笔记本电脑。\n\n"
    "笔记本电脑每三年更换一次，电池故障时可提前更换。\n",
    # a line wrapped inside a sentence, as text extracted from a PDF has it
    "ops/备份.txt": "数据库每晚凌晨两点（UTC）自动备份，备份文件保留三十五天。\n\n"
    "值班工程师每季度进行一次恢复演练，演练结果记录在运维\n手册中。\n",
}


def q(question: str, doc: str, quote: str) -> dict:
    return {"question": question, "evidence": [{"doc": doc, "quote": quote}]}


LEAVE, CARRY = "全职员工每个日历年可享受二十五天带薪年假。", "未休完的年假可以顺延至次年三月底"
LAPTOP = "工程师入职时领取一台配备32GB内存和1TB硬盘的笔记本电脑。"
REPLIES = {
    "hr/年假.md": [
        q("我一年能休几天带薪假？", "hr/年假.md", LEAVE),
        q("没休完的假期能留到明年吗？", "hr/年假.md", CARRY),
        # the sentence with its answer asked about: every bigram of it in order in the quote
        q("全职员工每个日历年可享受多少天带薪年假？", "hr/年假.md", LEAVE),
    ],
    "it/电脑.md": [
        q("公司发的笔记本电脑内存有多大？", "it/电脑.md", LAPTOP),
        # one character changed: bigram Jaccard 11/15 = 0.73, a near-duplicate from 0.7
        q("公司配的笔记本电脑内存有多大？", "it/电脑.md", LAPTOP),
        q("笔记本电脑多久换一次？", "it/电脑.md", "笔记本电脑每三年更换一次"),
    ],
    "ops/备份.txt": [
        q("数据库备份\n能保存多久？", "ops/备份.txt", "备份文件保留三十五天。"),  # a wrapped question
    ],
}
KEPT = [
    ("我一年能休几天带薪假？", "hr/年假.md", LEAVE),
    ("没休完的假期能留到明年吗？", "hr/年假.md", CARRY),
    ("公司发的笔记本电脑内存有多大？", "it/电脑.md", LAPTOP),
    ("笔记本电脑多久换一次？", "it/电脑.md", "笔记本电脑每三年更换一次"),
    ("数据库备份能保存多久？", "ops/备份.txt", "备份文件保留三十五天。"),
]


def scripted(body: dict) -> str:
    prompt = body["messages"][-1]["content"]
    (doc,) = re.findall(r'<passage doc="([^"]+)">', prompt)
    return json.dumps({"questions": REPLIES[doc]}, ensure_ascii=False)


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(ChatClient, "backoff_base", 0.001)
    monkeypatch.setenv(KEY_ENV, "sk-test")


@pytest.fixture
def corpus(tmp_path) -> Corpus:
    return Corpus.from_documents(tmp_path / "corpus", [Document(i, DOCS[i]) for i in sorted(DOCS)])


def draft(corpus: Corpus, out: Path, server: ChatServer, n: int = 20):
    chat = ChatSettings(server.base_url, "chat-test", api_key_env=KEY_ENV, concurrency=1)
    plan = DraftPlan(per_call=3, passages_per_call=1)
    return generate_draft(corpus, n, out, chat, plan, console=Console(file=StringIO(), width=200))


def test_chinese_questions_with_verbatim_quotes_are_kept_and_copies_and_duplicates_dropped(tmp_path, corpus):
    out = tmp_path / "kb.draft.jsonl"
    with ChatServer(scripted, utf8=True) as server:
        report = draft(corpus, out, server)
    assert len(server.received) == 3  # each document (one passage) asked about once
    assert report.dropped == {"copies its evidence": 1, "near-duplicate": 1}
    found = [(x.question, e.doc, DOCS[e.doc][e.start : e.end]) for x in load_draft(out).questions for e in x.evidence]
    assert sorted(found) == sorted(KEPT)  # in the order the seed drew the documents
    # every request asks for the passages' language and verbatim quotes in their own script
    for request in server.received:
        system, user = (m["content"] for m in request["body"]["messages"])
        assert "each question is in the language of the passages it asks about" in system
        assert "never translated" in system and "in their own script" in system
        assert "Write each question in the same language as the passages that answer it" in user
        assert "full-width 。，、 stay full-width" in user and "no spaces added" in user
        assert re.search(r"<passage doc=\"[^\"]+\">\n[^\n]*[\u4e00-\u9fff]", user)  # the passage as it is written
    meta = json.loads(out.with_name("kb.draft.meta.json").read_text(encoding="utf-8"))
    assert meta["prompt_version"] == generate.PROMPT_VERSION == "llm-draft-v2"
    assert meta["prompt"]["system"] == generate.SYSTEM_PROMPT


def test_a_chinese_prompt_is_estimated_at_a_token_a_character():
    assert estimate_tokens("Engineers receive a laptop.") == 7  # 27 ASCII characters: as before
    assert estimate_tokens(LAPTOP) == (7 + 3) // 4 + 24  # "32GB" and "1TB" ASCII; 24 other characters
    # cl100k counts 1.21 tokens a character over CMRC 2018's passages; characters / 4 would say 0.25
    assert estimate_tokens("数据库每晚凌晨两点自动备份。") == 14


def test_quotes_with_a_line_break_between_chinese_characters_are_found(tmp_path, corpus):
    """The document wraps 运维\n手册 and the model quotes it unwrapped; the model wraps a quote the
    document has on one line."""
    replies = {doc: [] for doc in DOCS}
    replies["ops/备份.txt"] = [q("恢复演练的结果写在哪里？", "ops/备份.txt", "演练结果记录在运维手册中。")]
    replies["hr/年假.md"] = [q("没休完的假期能留到明年吗？", "hr/年假.md", "未休完的年假可以\n顺延至次年三月底")]

    def reply(body: dict) -> str:
        (doc,) = re.findall(r'<passage doc="([^"]+)">', body["messages"][-1]["content"])
        return json.dumps({"questions": replies[doc]}, ensure_ascii=False)

    out = tmp_path / "wrapped.draft.jsonl"
    with ChatServer(reply, utf8=True) as server:
        report = draft(corpus, out, server)
    assert report.dropped == {"empty reply": 1} and report.kept == 2
    found = {x.question: [DOCS[e.doc][e.start : e.end] for e in x.evidence] for x in load_draft(out).questions}
    assert found == {
        "恢复演练的结果写在哪里？": ["演练结果记录在运维\n手册中。"],
        "没休完的假期能留到明年吗？": ["未休完的年假可以顺延至次年三月底"],
    }


def test_the_review_search_finds_chinese_terms_across_a_wrapped_line(tmp_path, corpus):
    from bench.drafting.review.search import search
    from bench.drafting.review.store import ReviewStore

    out = tmp_path / "kb.draft.jsonl"
    with ChatServer(scripted, utf8=True) as server:
        draft(corpus, out, server)
    store = ReviewStore(out, corpus, tmp_path / "kb.jsonl")
    text = DOCS["ops/备份.txt"]

    def found(query: str) -> list[tuple[str, str]]:
        return [(h["doc"], DOCS[h["doc"]][h["start"] : h["end"]]) for h in search(store, query)["hits"]]

    assert found("运维手册") == [("ops/备份.txt", "运维\n手册")]  # the document wraps it
    assert found("演练 手册") == [("ops/备份.txt", "演练"), ("ops/备份.txt", "演练")]  # both terms in one document
    assert found("笔记本电脑") == [("it/电脑.md", "笔记本电脑"), ("it/电脑.md", "笔记本电脑")]
    assert found("年假 电脑") == [] and text.count("演练") == 2
