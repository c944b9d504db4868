"""Pooling real questions into a draft: reading the questions, the pool each question gets (the union of
every retriever's top passages, in a fixed order), the cache, and a draft that becomes a valid goldset."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from bench.chunking.table import ChunkTable
from bench.config import load_config
from bench.drafting.draft import ACCEPTED, Draft, DraftQuestion, Found, Passage, Span, load_draft, write_goldset
from bench.drafting.pool import pool_draft, pool_recall
from bench.embedders import load_embedder
from bench.embedders.cache import EmbeddingCache
from bench.errors import BenchError
from bench.inputs.corpus import load_corpus
from bench.inputs.goldset import load_goldset
from bench.inputs.questions import read_questions
from bench.retrieval.faiss_index import INDEXES
from bench.retrieval.retrievers import BM25Retriever, DenseRetriever
from tests.helpers import QUESTIONS, write_project

QUESTION_TEXTS = [q[1] for q in QUESTIONS]


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


@pytest.fixture
def project(tmp_path: Path):
    """The tiny project (models hash and bm25) and its questions as a plain text file."""
    config = write_project(tmp_path)
    questions = tmp_path / "questions.txt"
    questions.write_text("\n".join(QUESTION_TEXTS) + "\n", encoding="utf-8")
    return tmp_path, load_config(config), questions


def pool(root: Path, config, questions: Path, name: str = "d.draft.jsonl", **kwargs) -> Draft:
    return pool_draft(root / "corpus", questions, root / name, config, console=quiet(), **kwargs)


# --- reading questions -----------------------------------------------------------------------------------


def test_plain_text_questions_get_ids_in_order(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("  First question?  \n\nSecond one?\n\n", encoding="utf-8")
    assert read_questions(path) == [("q001", "First question?", ()), ("q002", "Second one?", ())]


def test_ids_are_as_wide_as_the_count_needs(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("".join(f"question {i}\n" for i in range(1000)), encoding="utf-8")
    ids = [qid for qid, _, _ in read_questions(path)]
    assert ids[0] == "q0001" and ids[-1] == "q1000"


def test_jsonl_questions_keep_ids_and_tags(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    rows = [
        {"id": "hr-1", "question": "Vacation days?", "tags": ["hr", "easy"]},
        {"question": "Backups?", "evidence": []},  # other fields (a goldset's) are ignored
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert read_questions(path) == [("hr-1", "Vacation days?", ("hr", "easy")), ("q002", "Backups?", ())]


def test_a_text_file_starting_with_an_object_is_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text('\n{"question": "Vacation days?"}\n', encoding="utf-8")
    assert read_questions(path) == [("q001", "Vacation days?", ())]


def test_crlf_and_byte_order_mark(tmp_path: Path) -> None:
    plain, jsonl = tmp_path / "q.txt", tmp_path / "q.jsonl"
    plain.write_bytes(b"\xef\xbb\xbfFirst?\r\nSecond?\r\n")
    jsonl.write_bytes(b'\xef\xbb\xbf{"id": "a", "question": "First?"}\r\n')
    assert read_questions(plain) == [("q001", "First?", ()), ("q002", "Second?", ())]
    assert read_questions(jsonl) == [("a", "First?", ())]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "not an object"),
        ('{"id": "a"}', 'no "question" text'),
        ('{"question": "  "}', 'no "question" text'),
        ('{"id": 7, "question": "Why?"}', '"id" must be a non-empty string'),
        ('{"question": "Why?", "tags": "hr"}', '"tags" must be a list of strings'),
    ],
)
def test_a_bad_jsonl_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "Fine?"}\n\n' + line + "\n", encoding="utf-8")
    with pytest.raises(BenchError, match=message) as e:
        read_questions(path)
    assert f"{path}:3:" in str(e.value)


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "a", "question": "One?"}\n{"id": "a", "question": "Two?"}\n', encoding="utf-8")
    with pytest.raises(BenchError, match=r"q.jsonl:2: duplicate question id 'a' \(first on line 1\)"):
        read_questions(path)
    path.write_text('{"id": "q002", "question": "One?"}\n{"question": "Two?"}\n', encoding="utf-8")
    with pytest.raises(BenchError, match="duplicate question id 'q002'"):  # an explicit id meets a default one
        read_questions(path)


def test_an_empty_or_missing_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(BenchError, match="no questions"):
        read_questions(path)
    with pytest.raises(BenchError, match="not found"):
        read_questions(tmp_path / "absent.txt")


# --- pooling ---------------------------------------------------------------------------------------------


def test_a_pooled_draft_and_its_meta(project) -> None:
    root, config, questions = project
    draft = pool(root, config, questions, depth=3)
    saved = load_draft(root / "d.draft.jsonl")
    assert saved.questions == draft.questions and saved.meta == draft.meta
    assert [q.id for q in saved.questions] == ["q001", "q002", "q003", "q004", "q005", "q006"]
    assert all(q.origin == "questions" and q.status == "pending" and not q.evidence for q in saved.questions)
    meta = saved.meta
    assert meta["method"] == "pool" and meta["depth"] == 3
    assert meta["corpus"] == {"path": str(root / "corpus"), "sha256": load_corpus(root / "corpus").fingerprint}
    assert meta["questions_file"] == str(questions)
    assert meta["chunker"] == {"name": "rec24", "kind": "recursive", "size": 24}  # recursive beats the first, tokens
    assert meta["retrievers"] == ["hash", "bm25"]
    assert meta["created"].endswith("+00:00") and meta["bench_version"]


def test_two_poolings_write_the_same_bytes(project) -> None:
    root, config, questions = project
    pool(root, config, questions, "a.draft.jsonl")
    pool(root, config, questions, "b.draft.jsonl")
    assert (root / "a.draft.jsonl").read_bytes() == (root / "b.draft.jsonl").read_bytes()
    metas = [json.loads((root / f"{n}.draft.meta.json").read_text()) for n in "ab"]
    for meta in metas:
        del meta["created"]
    assert metas[0] == metas[1]


def own_rankings(root: Path, config, chunker: str, depth: int) -> dict[str, list[list[tuple]]]:
    """Each retriever's own top ``depth`` per question, as (doc, start, end, rank, score)."""
    corpus = load_corpus(root / "corpus")
    table = ChunkTable.chunk_corpus(corpus, config.chunker(chunker).build())
    spec = config.model("hash")
    retrievers = {
        "hash": DenseRetriever(spec, INDEXES.get("flat"), EmbeddingCache(root / "own"), embedder=load_embedder(spec)),
        "bm25": BM25Retriever(config.model("bm25")),
    }
    out = {}
    for name, retriever in retrievers.items():
        retriever.build(table)
        out[name] = [
            [
                (table.doc_ids[table.doc[u]], int(table.start[u]), int(table.end[u]), rank, round(float(s), 4))
                for rank, (u, s) in enumerate(zip(units.tolist(), scores.tolist()), start=1)
            ]
            for units, scores in retriever.search(retriever.encode(QUESTION_TEXTS), depth)
        ]
    return out


@pytest.mark.parametrize("chunker", ["rec24", "tok24"])
def test_the_pool_is_the_union_of_every_retrievers_top_passages(project, chunker: str) -> None:
    root, config, questions = project
    draft = pool(root, config, questions, depth=4, chunker=chunker)
    own = own_rankings(root, config, chunker, 4)
    for q, dq in enumerate(draft.questions):
        spans = [(p.doc, p.start, p.end) for p in dq.passages]
        assert len(spans) == len(set(spans))  # each unit once
        union = {r[:3] for name in own for r in own[name][q]}
        assert set(spans) == union
        for name in own:  # each passage's rank and score is what that retriever itself gives
            seen = [
                (p.doc, p.start, p.end, f.rank, f.score) for p in dq.passages for f in p.found_by if f.retriever == name
            ]
            assert sorted(seen, key=lambda r: r[3]) == own[name][q]
        for p in dq.passages:  # found_by in the order of the retrievers
            order = [f.retriever for f in p.found_by]
            assert order == [n for n in ("hash", "bm25") if n in order]


def test_the_pool_order(project) -> None:
    root, config, questions = project
    draft = pool(root, config, questions, depth=6, chunker="tok24")
    some_found_by_one = False
    for dq in draft.questions:
        keys = [(min(f.rank for f in p.found_by), -len(p.found_by), p.doc, p.start) for p in dq.passages]
        assert keys == sorted(keys)
        some_found_by_one |= any(len(p.found_by) == 1 for p in dq.passages)
    assert some_found_by_one  # the retrievers disagree somewhere, so the union is more than either


def test_a_second_pooling_embeds_nothing(project, monkeypatch) -> None:
    root, config, questions = project
    stats = []
    embed = EmbeddingCache.embed

    def counting(self, *args, **kwargs):
        vectors, s = embed(self, *args, **kwargs)
        stats.append(s)
        return vectors, s

    monkeypatch.setattr(EmbeddingCache, "embed", counting)
    pool(root, config, questions, "a.draft.jsonl")
    assert sum(s.embedded for s in stats) > 0
    stats.clear()
    pool(root, config, questions, "b.draft.jsonl")
    assert stats and sum(s.embedded for s in stats) == 0 and all(s.cached for s in stats)
    assert (root / "cache" / "embeddings").is_dir()  # the config's cache folder


def test_cache_dir_overrides_the_configs_cache(project) -> None:
    root, config, questions = project
    pool(root, config, questions, cache_dir=root / "elsewhere")
    assert (root / "elsewhere" / "embeddings").is_dir() and not (root / "cache").exists()


def test_an_existing_draft_is_kept_unless_forced(project) -> None:
    root, config, questions = project
    out = root / "d.draft.jsonl"
    out.write_text("hours of review\n", encoding="utf-8")
    with pytest.raises(BenchError, match=r"already there.*--force"):
        pool(root, config, questions)
    assert out.read_text() == "hours of review\n"
    pool(root, config, questions, force=True)
    assert len(load_draft(out).questions) == len(QUESTIONS)


def test_chunker_choice(project) -> None:
    root, config, questions = project
    assert pool(root, config, questions, chunker="tok24").meta["chunker"]["name"] == "tok24"
    with pytest.raises(BenchError, match=r"chunker 'rec42' is not in .*did you mean 'rec24'"):
        pool(root, config, questions, chunker="rec42", force=True)
    only_tokens = dataclasses.replace(config, chunkers=(config.chunker("tok24"),))
    assert pool(root, only_tokens, questions, force=True).meta["chunker"]["name"] == "tok24"


def test_a_config_path_an_api_model_left_out_and_bm25_added(project) -> None:
    root, _, questions = project
    toml = root / "bench.toml"
    toml.write_text(toml.read_text().replace('models = ["hash", "bm25"]', 'models = ["hash", "e5-small-serve"]'))
    console = quiet()
    draft = pool_draft(root / "corpus", questions, root / "d.draft.jsonl", toml, depth=2, console=console)
    assert draft.meta["retrievers"] == ["bm25", "hash"]
    assert "e5-small-serve is served by an API" in console.file.getvalue()


def test_bad_depth_is_refused(project) -> None:
    root, config, questions = project
    with pytest.raises(BenchError, match="depth 0"):
        pool(root, config, questions, depth=0)


def test_accepting_the_best_passages_makes_a_valid_goldset(project) -> None:
    root, config, questions = project
    draft = pool(root, config, questions, depth=3)
    corpus = load_corpus(root / "corpus")
    draft.questions = [
        dataclasses.replace(
            q, status=ACCEPTED, evidence=(Span(q.passages[0].doc, q.passages[0].start, q.passages[0].end, 2),)
        )
        for q in draft.questions
    ]
    out = root / "d.jsonl"
    assert write_goldset(draft, corpus, out) == len(QUESTIONS)
    goldset = load_goldset(out, corpus)
    assert [q.id for q in goldset.questions] == [q.id for q in draft.questions]
    # the passage chosen answers (grade 2); every other pooled passage the reviewer saw and left is
    # written as judged not relevant (grade 0), unless it overlaps the chosen one
    expected = []
    for q in draft.questions:
        first = q.passages[0]
        expected.append((first.doc, first.start, first.end, 2))
        expected += [
            (p.doc, p.start, p.end, 0)
            for p in q.passages[1:]
            if not (p.doc == first.doc and p.start < first.end and first.start < p.end)
        ]
    assert [(e.doc, e.start, e.end, e.grade) for q in goldset.questions for e in q.evidence] == expected
    assert any(grade == 0 for *_, grade in expected)


# --- pool recall -----------------------------------------------------------------------------------------


def test_pool_recall_counts_evidence_the_pool_holds(tmp_path: Path) -> None:
    config = write_project(tmp_path)
    corpus = load_corpus(tmp_path / "corpus")
    goldset = load_goldset(tmp_path / "gold.jsonl", corpus)
    q1, q2 = (q.evidence[0] for q in goldset.questions[:2])
    assert q1.start is not None and q1.end is not None and q2.end is not None
    draft = Draft(
        tmp_path / "x.draft.jsonl",
        [
            DraftQuestion(  # q1's evidence held by a passage both retrievers found, hash at rank 4
                "q1",
                "?",
                passages=(Passage(q1.doc, q1.start, q1.end + 10, (Found("bm25", 1, 1.0), Found("hash", 4, 0.2))),),
            ),
            DraftQuestion(  # q2's passage overlaps too little of the shorter span
                "q2", "?", passages=(Passage(q2.doc, q2.end - 5, q2.end + 200, (Found("hash", 1, 0.9),)),)
            ),
            DraftQuestion("other", "?"),
        ],
        {"depth": 5, "retrievers": ["hash", "bm25"]},
    )
    found = pool_recall(draft, goldset)
    assert found["questions"] == 2 and found["evidence"] == 2 and found["held"] == 1 and found["recall"] == 0.5
    assert found["not_in_draft"] == ["q3", "q4", "q5", "q6"]
    assert found["retrievers"] == {"hash": {"held": 1, "recall": 0.5}, "bm25": {"held": 1, "recall": 0.5}}
    assert found["missed"] == [{"id": "q2", "doc": q2.doc, "start": q2.start, "end": q2.end, "grade": 2}]
    shallow = pool_recall(draft, goldset, depth=3)  # hash's rank 4 no longer counts
    assert shallow["depth"] == 3 and shallow["retrievers"]["hash"]["held"] == 0 and shallow["held"] == 1
    assert pool_recall(draft, goldset, min_overlap=0.05)["held"] == 2
    assert config.is_file()


def test_pool_recall_of_a_pooled_draft(project) -> None:
    root, config, _ = project
    corpus = load_corpus(root / "corpus")
    goldset = load_goldset(root / "gold.jsonl", corpus)
    ids = [q.id for q in goldset.questions]
    jsonl = root / "q.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "question": t}) + "\n" for i, t in zip(ids, QUESTION_TEXTS)))
    draft = pool_draft(root / "corpus", jsonl, root / "d.draft.jsonl", config, depth=6, console=quiet())
    found = pool_recall(draft, goldset)
    assert found["questions"] == len(ids) and found["evidence"] == len(ids)
    assert found["recall"] == 1.0 and not found["missed"]


# --- real models -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_without_a_config_bm25_and_minilm_over_recursive_chunks(project, monkeypatch) -> None:
    root, _, questions = project
    monkeypatch.setenv("BENCH_CACHE_DIR", str(root / "user-cache"))
    draft = pool(root, None, questions, depth=2)
    assert draft.meta["retrievers"] == ["bm25", "minilm"]
    assert draft.meta["chunker"] == {"name": "rec256", "kind": "recursive", "size": 256}
    assert (root / "user-cache" / "embeddings").is_dir()
    assert all(q.passages for q in draft.questions)


@pytest.mark.slow
def test_without_a_config_a_chinese_corpus_is_pooled_with_a_model_that_reads_it(tmp_path: Path, monkeypatch) -> None:
    """MiniLM reads English only: the defaults pool a Chinese corpus with e5-small in its place."""
    monkeypatch.setenv("BENCH_CACHE_DIR", str(tmp_path / "user-cache"))
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "battery.md").write_text(
        "# 电池\n\n扫地机器人的电池每隔十八个月需要更换一次，更换时请使用原厂电池。\n", encoding="utf-8"
    )
    (tmp_path / "corpus" / "returns.md").write_text(
        "# 退货\n\n退货须在签收后七天内申请，商品及配件应保持完好，并附上购买凭证。\n", encoding="utf-8"
    )
    questions = tmp_path / "questions.txt"
    questions.write_text("电池多久换一次？\n", encoding="utf-8")
    draft = pool(tmp_path, None, questions, depth=1)
    assert draft.meta["retrievers"] == ["bm25", "e5-small"]
    assert draft.questions[0].passages[0].doc == "battery.md"
