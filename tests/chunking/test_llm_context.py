"""Contextual chunks a chat model writes ([context.NAME], "md256+situated"), end to end through
`bench run` against a local chat server: the context joins what is indexed but never the unit,
each chunk is asked once (the reply log is the cache), within the budget, and priced into the
index cost and the monthly cost at [scale]."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from bench.chunking.situate import window
from bench.config import load_config
from bench.retrieval.retrievers import BM25Retriever, DenseRetriever
from bench.run.dry_run import dry_run
from tests.answers.chat_server import ChatServer, quick_retries
from tests.helpers import CONFIG_HEAD, finished_runs, next_second, run_cli

KEY_ENV, KEY = "BENCH_TEST_CONTEXT_KEY", "sk-context-test-5b1f"
RARE = "brightwater"  # in the contexts of pumps.md's chunks, in question q1, nowhere in the corpus

DOCS = {
    "pumps.md": (
        "# Pump maintenance\n\n"
        "The seals are replaced every six months by the day shift.\n\n"
        "The impeller is inspected after each storm that floods the basin.\n\n"
        "Oil is changed whenever the pressure gauge turns red.\n"
    ),
    "valves.md": (
        "# Valve maintenance\n\n"
        "The seals and the stem seals are replaced every two years.\n\n"
        "The actuator is inspected after each storm that trips the breaker.\n\n"
        "Grease is applied whenever the handle sticks in winter.\n"
    ),
    "notes.md": "# Shift notes\n\nThe night shift logs every alarm in the red binder.\n",
}
QUESTIONS = [
    ("q1", f"How often are the {RARE} seals replaced?", "pumps.md", "The seals are replaced every six months"),
    ("q2", "Where are alarms logged at night?", "notes.md", "logs every alarm in the red binder"),
    ("q3", "When is grease applied?", "valves.md", "Grease is applied whenever the handle sticks"),
]
CONFIG = (
    CONFIG_HEAD
    + """
[chunkers.rec16]
kind = "recursive"
size = 16

[scale]
documents = 3000
queries_per_month = 1000
reindexes_per_month = 2

[llm]
base_url = "{base_url}"
api_key_env = "{key_env}"
concurrency = {concurrency}

[context.situated]
chunkers = ["rec16"]
model = "ctx-model"
price_in = 1000
price_out = 2000
price_cached_in = 500
"""
)
CACHED = 32  # prompt tokens the server says it read from its prompt cache, every request


def _project(root: Path, base_url: str, concurrency: int = 4, extra: str = "") -> Path:
    for name, text in DOCS.items():
        (root / "corpus").mkdir(parents=True, exist_ok=True)
        (root / "corpus" / name).write_text(text, encoding="utf-8")
    rows = [
        {"id": qid, "question": q, "evidence": [{"doc": doc, "quote": quote, "grade": 2}]}
        for qid, q, doc, quote in QUESTIONS
    ]
    (root / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    toml = CONFIG.format(base_url=base_url, key_env=KEY_ENV, concurrency=concurrency) + extra
    (root / "bench.toml").write_text(toml, encoding="utf-8")
    return root / "bench.toml"


def _parts(body: dict) -> tuple[str, str, str]:
    """The system prompt, the document and the chunk a request was sent."""
    system, user = (m["content"] for m in body["messages"])
    document = re.search(r"<document>\n(.*?)\n</document>", user, re.S)
    chunk = re.search(r"<chunk>\n(.*?)\n</chunk>", user, re.S)
    assert document and chunk, user
    return system, document.group(1), chunk.group(1)


def _context(body: dict) -> str | None:
    """A context naming the document's first heading; pumps.md's carry the rare word. The actuator's
    chunk is refused, the grease chunk gets an empty reply."""
    _, document, chunk = _parts(body)
    if "actuator" in chunk:
        return None
    if "Grease" in chunk:
        return "  "
    heading = document.splitlines()[0].lstrip("# ")
    return f"From the {RARE} {heading.lower()} guide." if "Pump" in heading else f"From the {heading.lower()} guide."


class Billed:
    """The usage the server reports for each reply it gives, kept to price them by hand."""

    def __init__(self) -> None:
        self.usages: list[dict] = []

    def __call__(self, body: dict) -> dict:
        prompt = sum(len(m["content"]) for m in body["messages"]) // 4
        usage = {"prompt_tokens": prompt, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": CACHED}}
        self.usages.append(usage)
        return usage

    def cost(self, price_in: float = 1000, price_out: float = 2000, price_cached: float = 500) -> float:
        return sum(
            ((u["prompt_tokens"] - CACHED) * price_in + CACHED * price_cached + u["completion_tokens"] * price_out)
            / 1e6
            for u in self.usages
        )


@pytest.fixture(autouse=True)
def quick_and_keyed(monkeypatch):
    quick_retries(monkeypatch, KEY_ENV, KEY)


@pytest.fixture
def indexed(monkeypatch) -> dict[str, list[str]]:
    """The texts each first stage is built from, by the class of its chunk table and retriever."""
    seen: dict[str, list[str]] = {}
    for cls in (BM25Retriever, DenseRetriever):
        build = cls.build

        def recording(self, table, progress=None, _build=build, _cls=cls):
            seen[f"{_cls.__name__}:{type(table).__name__}"] = list(table.iter_texts())
            return _build(self, table, progress)

        monkeypatch.setattr(cls, "build", recording)
    return seen


def _summary(root: Path) -> tuple[dict, dict, list[dict]]:
    run = finished_runs(root / "results")[-1]
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    records = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    return {c["id"]: c for c in summary["candidates"]}, manifest, records


def test_contexts_are_indexed_priced_and_cached(tmp_path: Path, indexed: dict[str, list[str]]):
    billed = Billed()
    with ChatServer(_context, plan=("429", "500", "slow"), usage=billed) as server:
        _project(tmp_path, server.base_url)
        done = run_cli("run", "bench.toml", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        ok = [r for r in server.received]
        cands, manifest, records = _summary(tmp_path)

        # (1) what BM25 and the embedder index carries the contexts; the units stay the plain chunker's
        plain_texts = indexed["BM25Retriever:ChunkTable"]
        situated_texts = indexed["BM25Retriever:ContextualTable"]
        assert indexed["DenseRetriever:ContextualTable"] == situated_texts
        assert len(plain_texts) == len(situated_texts)
        with_context = [s for p, s in zip(plain_texts, situated_texts) if s != p]
        assert all(s.endswith("\n\n" + p) for p, s in zip(plain_texts, situated_texts) if s != p)
        assert any(s.startswith(f"From the {RARE} pump maintenance guide.\n\n") for s in with_context)
        spans = {
            (r["candidate"].replace("rec16+situated", "rec16"), r["question_id"], "+situated" in r["candidate"]): [
                (u["id"], u["start"], u["end"]) for u in r["expected"]
            ]
            for r in records
        }
        for (cand, qid, situated), expected in spans.items():
            if situated:
                assert expected == spans[(cand, qid, False)]

        # (2) the rare word of pumps.md's contexts lifts BM25 on the question that uses it
        def rr(cand: str, qid: str) -> float:
            return next(r["metrics"]["mrr@3"] for r in records if r["candidate"] == cand and r["question_id"] == qid)

        assert rr("bm25/rec16/inverted", "q1") < rr("bm25/rec16+situated/inverted", "q1") == 1.0

        # (5) retried after a 429 and a 500, a slow reply waited for; a refusal and an empty reply
        # leave their chunks without a context, counted and said in one line
        assert len(ok) == len(plain_texts) + 2
        ops = cands["bm25/rec16+situated/inverted"]["ops"]
        assert ops["contexts_failed"] == 2 == len(plain_texts) - len(with_context)
        assert "rec16+situated: 2 of" in done.stderr and "1 refused, 1 empty" in done.stderr
        assert "indexed without one" in done.stderr

        # (6) the contexts' cost, every request at its reported usage (cached prompt tokens at their
        # price), joins the index cost, and the monthly cost follows through re-indexing
        plain_ops = cands["bm25/rec16/inverted"]["ops"]
        assert ops["context_cost_usd"] == pytest.approx(billed.cost())
        assert ops["index_cost_usd"] == pytest.approx(plain_ops["index_cost_usd"] + billed.cost())
        assert ops["context_calls_sent"] == len(plain_texts) and ops["context_calls_cached"] == 0
        assert ops["context_tokens_cached"] == CACHED * len(plain_texts)
        assert ops["context_tokens_in"] == sum(u["prompt_tokens"] for u in billed.usages)
        assert ops["context_tokens_out"] == 12 * len(plain_texts) and ops["context_model"] == "ctx-model"
        factor = 3000 / len(DOCS) * 2  # [scale] documents over the corpus's, times re-indexings a month
        assert ops["monthly_cost_usd"] - plain_ops["monthly_cost_usd"] == pytest.approx(billed.cost() * factor)
        dense = cands["hash/rec16+situated/flat"]["ops"]
        dense_plain = cands["hash/rec16/flat"]["ops"]
        assert dense["index_cost_usd"] == pytest.approx(dense_plain["index_cost_usd"] + billed.cost())
        assert plain_ops["context_cost_usd"] is None
        spent = manifest["llm"]["contexts"]["situated"]
        assert spent["calls"] == {"sent": len(plain_texts), "from_cache": 0, "not_sent_budget": 0}
        assert spent["cost_usd"] == pytest.approx(billed.cost(), abs=1e-6)
        assert spent["prompt"]["version"] == "situate-v1" and len(spent["prompt"]["sha256"]) == 64
        assert "plain chunker" in done.stdout  # the diagnosis sets it against its plain chunker

        # (7) the key goes in the Authorization header and into no file
        assert {r["headers"]["Authorization"] for r in server.received} == {f"Bearer {KEY}"}
        assert not [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]

        # (8) the document first, then the chunk; every request of a document starts the same way
        by_doc: dict[str, set[str]] = {}
        for r in server.received:
            system, document, chunk = _parts(r["body"])
            user = r["body"]["messages"][1]["content"]
            assert user.index("<document>") < user.index("<chunk>") and chunk in document
            by_doc.setdefault(document.splitlines()[0], set()).add(system + user[: user.index("</document>")])
        assert len(by_doc) == len(DOCS) and all(len(prefixes) == 1 for prefixes in by_doc.values())
        assert all(r["body"]["model"] == "ctx-model" and "response_format" not in r["body"] for r in server.received)
        replies = tmp_path / "cache" / "contexts" / "replies.jsonl"
        log = [json.loads(line) for line in replies.read_text().splitlines()]
        assert {(row["doc_id"], row["prompt"]) for row in log} == {(d, "situate-v1") for d in DOCS}
        assert all(0 <= row["start"] < row["end"] for row in log)

        # (3) a second run sends nothing: every context is in the reply log, priced as it was billed
        next_second()
        again = run_cli("run", "bench.toml", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert len(server.received) == len(ok)
        cands, manifest, _ = _summary(tmp_path)
        ops = cands["bm25/rec16+situated/inverted"]["ops"]
        assert ops["context_calls_sent"] == 0 and ops["context_calls_cached"] == len(plain_texts)
        assert ops["context_cost_usd"] == pytest.approx(billed.cost())
        assert manifest["llm"]["contexts"]["situated"]["cost_sent_usd"] == 0


def test_a_budget_that_leaves_chunks_without_context_stops_before_indexing(tmp_path: Path):
    billed = Billed()
    with ChatServer(_context, usage=billed) as server:
        _project(tmp_path, server.base_url, concurrency=1)
        short = run_cli("run", "bench.toml", "--max-cost", "1.5", cwd=tmp_path)
        assert short.returncode == 2, short.stderr
        (line,) = [x for x in short.stderr.splitlines() if "error" in x]
        assert short.stderr.strip().endswith(line)
        chunks = len(load_and_chunk(tmp_path))
        sent = len(server.received)
        assert 0 < sent < chunks
        assert f"allowed {sent} of {chunks} contexts" in line
        assert "raise --max-cost or [llm] max_cost; what was paid for is kept and a rerun resumes" in line
        assert not finished_runs(tmp_path / "results")  # nothing written half
        log = (tmp_path / "cache" / "contexts" / "replies.jsonl").read_text().splitlines()
        assert len(log) == sent  # what was paid for is kept

        done = run_cli("run", "bench.toml", "--max-cost", "100", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert len(server.received) == chunks  # only the rest was sent
        cands, manifest, _ = _summary(tmp_path)
        ops = cands["bm25/rec16+situated/inverted"]["ops"]
        assert (ops["context_calls_sent"], ops["context_calls_cached"]) == (chunks - sent, sent)
        assert ops["context_cost_usd"] == pytest.approx(billed.cost())
        assert manifest["llm"]["contexts"]["situated"]["max_cost_usd"] == 100


def load_and_chunk(root: Path) -> list[str]:
    """The plain chunks of the project, as the run cuts them."""
    from bench.chunking.table import ChunkTable
    from bench.inputs.corpus import load_corpus

    config = load_config(root / "bench.toml")
    corpus = load_corpus(config.corpus, None)
    return list(ChunkTable.chunk_corpus(corpus, config.chunker("rec16").build()).iter_texts())


def test_the_dry_run_estimates_and_sends_nothing(tmp_path: Path):
    with ChatServer(_context) as server:
        _project(tmp_path, server.base_url)
        done = run_cli("run", "bench.toml", "--dry-run", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert server.received == []
        chunks = len(load_and_chunk(tmp_path))
        line = next(x for x in done.stderr.splitlines() if x.startswith("[context.situated]"))
        found = re.search(r"about ([\d,]+) prompt and at most ([\d,]+) reply tokens, at most \$([\d.]+)", line)
        assert found and f"{chunks} chunks of rec16, 0 replies in the cache, {chunks} to ask" in line
        prompt, reply = int(found.group(1).replace(",", "")), int(found.group(2).replace(",", ""))
        assert reply == 150 * chunks and prompt > 100 * chunks
        assert float(found.group(3)) == pytest.approx((prompt * 1000 + reply * 2000) / 1e6, rel=0.05)
        assert "no prompt caching assumed: an upper bound" in line
        planned = {p.candidate.id: p for p in dry_run(tmp_path / "bench.toml", Console(file=io.StringIO()))}
        assert server.received == []
        assert planned["bm25/rec16/inverted"].index_cost_usd == 0  # the contexts' upper bound joins the index cost
        assert planned["bm25/rec16+situated/inverted"].index_cost_usd == pytest.approx(float(found.group(3)), rel=0.05)
        assert planned["bm25/rec16+situated/inverted"].monthly_embedding_usd > 0
        short = run_cli("run", "bench.toml", "--dry-run", "--max-cost", "0.5", cwd=tmp_path)
        assert "over the budget ($0.50): the run would stop before indexing" in short.stderr
    (tmp_path / "bench.toml").write_text(
        (tmp_path / "bench.toml").read_text().replace(server.base_url, "http://127.0.0.1:9/v1")
    )
    dead = run_cli("run", "bench.toml", "--dry-run", cwd=tmp_path)
    assert dead.returncode == 2 and "[context.situated]: cannot connect to" in dead.stderr


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        ('chunkers = ["rec16"]', 'chunkers = ["rec61"]', "chunkers: no chunker 'rec61'; did you mean 'rec16'? the"),
        ("[context.situated]", "[context.ctx]", "[context.ctx]: the name may not be 'ctx'"),
        ("[context.situated]", '[context."a+b"]', "[context.a+b]: the name may not be 'ctx'"),
        ('model = "ctx-model"\n', "", "[context.situated]: needs model = the chat model's name"),
        ("price_in = 1000", "price_inn = 1000", "unknown key 'price_inn'; did you mean 'price_in'?"),
    ],
    ids=["unknown chunker", "ctx", "plus", "no model", "misspelt"],
)
def test_config_errors_are_one_line(tmp_path: Path, old: str, new: str, error: str):
    toml = _project(tmp_path, "http://127.0.0.1:9/v1")
    toml.write_text(toml.read_text().replace(old, new))
    done = run_cli("run", "bench.toml", "--dry-run", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("bench: error: bench.toml: [context.") and error in line


def test_a_config_without_contexts_hashes_as_before(tmp_path: Path):
    toml = _project(tmp_path, "http://127.0.0.1:9/v1")
    situated = load_config(toml)
    toml.write_text(toml.read_text().split("[context.situated]")[0])
    plain = load_config(toml)
    assert "contexts" not in plain.resolved() and "situated" not in json.dumps(plain.resolved())
    assert situated.hash != plain.hash
    assert situated.resolved()["contexts"]["situated"]["prompt"]["version"] == "situate-v1"
    assert "127.0.0.1" not in json.dumps(situated.resolved()) and KEY_ENV not in json.dumps(situated.resolved())
    assert load_config(Path(__file__).parents[2] / "bench.toml").hash == "e18ea1"


def test_a_long_document_is_sent_as_a_window_around_the_chunk():
    text = "word " * 10_000  # 12,500 tokens as estimated
    lo, hi = window(text, 20_000, 20_100, 2000)
    assert lo <= 20_000 and hi >= 20_100 and 7_000 < hi - lo < 9_000
    assert window(text, 20_050, 20_150, 2000) == (lo, hi)  # a neighbour is sent the same window
    assert window("short", 0, 5, 2000) == (0, 5)
    assert window(text, 0, 100, 2000)[0] == 0 and window(text, len(text) - 100, len(text), 2000)[1] == len(text)


def test_a_prompt_of_ones_own_is_read_beside_the_config(tmp_path: Path):
    toml = _project(tmp_path, "http://127.0.0.1:9/v1")
    shipped = load_config(toml)
    mine = (Path(__file__).parents[2] / "bench" / "chunking" / "prompts" / "situate_v1.md").read_text()
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "mine.md").write_text(mine.replace("version: situate-v1", "version: mine-v1"))
    toml.write_text(toml.read_text() + 'prompt = "prompts/mine.md"\n')
    config = load_config(toml)
    assert config.resolved()["contexts"]["situated"]["prompt"]["version"] == "mine-v1"
    assert config.hash != shipped.hash and "prompts/mine.md" not in json.dumps(config.resolved())
    (tmp_path / "prompts" / "mine.md").write_text(mine.replace("{chunk}", "the chunk"))
    done = run_cli("run", "bench.toml", "--dry-run", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "bench: error: bench.toml: [context.situated] prompt: prompts/mine.md: section "
        "'## user' lacks {chunk}; put it where the text goes"
    ]
