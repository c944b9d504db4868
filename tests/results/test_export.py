"""`bench export`: TREC and ranx files that trec_eval and ranx score exactly as bench does, the
per-question table as CSV and Parquet, and the command line."""

from __future__ import annotations

import csv
import json
import math
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from bench import files
from bench.core.records import QuestionRecord
from bench.errors import BenchError
from bench.evaluation.metrics import quality
from bench.evaluation.scoring import grades_from_records
from bench.results import store
from bench.results.export import (
    FORMATS,
    ID_COLUMNS,
    export_id,
    export_run,
    export_scores,
    safe_name,
    safe_names,
)
from tests.helpers import CONFIG, QUESTIONS, finished_runs, run_cli, write_project

TOL = 1e-9

# q7's quote straddles a paragraph break and q8 matches no word of the corpus, so with
# min_overlap = 1.0 some questions have no relevant unit under a chunking (absent from the qrels)
# and BM25 returns nothing for q8 (absent from the run).
EXTRA_QUESTIONS = [
    (
        "q7",
        "What happens after the carry-over deadline for long requests?",
        "kb/vacation.md",
        "the following year.\n\nRequests longer",
        1,
    ),
    ("q8", "Zebra xylophone quokka?", "kb/laptops.md", "Disk encryption must stay enabled on every company laptop.", 1),
]


# Every kind of candidate is exported: dense, lexical, binary codes rescored, fusions by rank and by
# score, and a reranked BM25 whose top 3 are re-scored (ranks 4-6 keep BM25's order, with no score).
PIPELINES = """\
indexes = ["flat", "bin"]
fusions = ["hash+bm25"]
rerankers = ["hash"]
exclude = ["hash/rec24/bin*"]
"""
PIPELINE_TABLES = """
[index.bin]
kind = "binary"
rescore = 4

[fusion."hash+bm25"]
method = ["rrf", "convex"]
weights = [0.5]

[reranker.hash]
top = 3
over = ["bm25/*"]
"""


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("export")
    config = CONFIG.replace("k = 3\n", 'k = 3\nndcg_gain = "linear"\nmin_overlap = 1.0\n' + PIPELINES)
    config += PIPELINE_TABLES
    path = write_project(root, config, questions=[*QUESTIONS, *EXTRA_QUESTIONS])
    done = run_cli("run", str(path), "--no-report", cwd=root)
    assert done.returncode == 0, done.stderr
    (run,) = finished_runs(root / "results")
    return run


@pytest.fixture(scope="module")
def loaded(real_run) -> tuple[dict, list[dict]]:
    return store.load_json(real_run / store.SUMMARY), store.load_jsonl(real_run / store.PER_QUESTION)


def by_candidate(records: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for rec in records:
        groups.setdefault(rec["candidate"], []).append(rec)
    return groups


def test_fixture_covers_the_edge_cases(loaded):
    # Without these, the comparisons below would not exercise dropped queries or ties.
    _, records = loaded
    assert any(not r["expected"] for r in records)
    assert any(not r["ranking"] and r["expected"] for r in records)
    assert any(r["first_relevant_rank"] is None for r in records)
    scores = [[e["score"] for e in r["ranking"]] for r in records]
    assert any(len(set(s)) < len(s) for s in scores)
    reranked = [r for r in records if r["candidate"] == "bm25/tok24/inverted>hash@3"]
    assert reranked and any(len(r["ranking"]) > 3 and r["ranking"][3]["score"] is None for r in reranked)
    candidates = {r["candidate"] for r in records}
    assert {"hash+bm25/rec24/flat@rrf", "hash+bm25/tok24/flat@convex0.5", "hash/tok24/bin@rescore=4"} <= candidates


# --- trec ----------------------------------------------------------------------------------------


def sorted_by_score(run: dict[str, float]) -> list[str]:
    """The order trec_eval reads: score descending, ties by docno descending."""
    return [doc for doc, _ in sorted(run.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def trec_measures(qrels: dict, run: dict, k: int) -> dict[str, dict[str, float]]:
    """Per question: our metric name -> trec_eval's value (recip_rank on the run cut at k)."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    full = pytrec_eval.RelevanceEvaluator(qrels, {f"P_{k}", f"recall_{k}", f"ndcg_cut_{k}", f"map_cut_{k}"})
    cut = {qid: {doc: run[qid][doc] for doc in sorted_by_score(run[qid])[:k]} for qid in run}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
    return {
        qid: {
            f"precision@{k}": m[f"P_{k}"],
            f"recall@{k}": m[f"recall_{k}"],
            f"ndcg@{k}": m[f"ndcg_cut_{k}"],
            f"map@{k}": m[f"map_cut_{k}"],
            f"mrr@{k}": rr[qid]["recip_rank"],
        }
        for qid, m in full.evaluate(run).items()
    }


def read_trec(folder: Path, name: str) -> tuple[dict, dict]:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with (folder / f"{name}.qrels").open() as f:
        qrels = dict(pytrec_eval.parse_qrel(f))
    with (folder / f"{name}.run").open() as f:
        run = dict(pytrec_eval.parse_run(f))
    return qrels, run


def assert_same(ours: dict[str, float], theirs: dict[str, float], where) -> None:
    for name, value in theirs.items():
        assert ours[name] == pytest.approx(value, abs=TOL), (name, where)


def test_trec_export_scores_as_trec_eval(real_run, loaded, tmp_path):
    summary, records = loaded
    k = summary["k"]
    written = export_run(real_run, tmp_path, "trec")
    names = safe_names([c["id"] for c in summary["candidates"]])
    assert sorted(p.name for p in written) == sorted(
        ["candidates.tsv", *(f"{n}{s}" for n in names.values() for s in (".run", ".qrels"))]
    )
    with (tmp_path / "candidates.tsv").open(newline="") as f:
        assert dict(csv.reader(f, delimiter="\t")) == {"name": "candidate", **{n: c for c, n in names.items()}}
    for cid, recs in by_candidate(records).items():
        qrels, run = read_trec(tmp_path, names[cid])
        assert set(qrels) == {r["question_id"] for r in recs if r["expected"]}
        assert set(run) == {r["question_id"] for r in recs if r["ranking"]}
        theirs = trec_measures(qrels, run, k)
        assert set(theirs) == set(qrels) & set(run)
        for rec in recs:
            qid = rec["question_id"]
            if qid in run:
                assert sorted_by_score(run[qid]) == [e["id"] for e in rec["ranking"]], (cid, qid)
            if qid in theirs:
                assert_same(rec["metrics"], theirs[qid], (cid, qid))
            else:  # dropped by trec_eval: bench counts it as zeros
                assert all(rec["metrics"][f"{m}@{k}"] == 0.0 for m in ("recall", "precision", "mrr", "ndcg", "map"))


def test_trec_lines_are_well_formed(real_run, loaded, tmp_path):
    summary, records = loaded
    export_run(real_run, tmp_path, "trec")
    name = safe_name(summary["candidates"][0]["id"])
    lines = (tmp_path / f"{name}.run").read_text().splitlines()
    ours = [r for r in records if r["candidate"] == summary["candidates"][0]["id"]]
    assert len(lines) == sum(len(r["ranking"]) for r in ours)
    qid, q0, docno, rank, score, tag = lines[0].split(" ")
    first = ours[0]["ranking"][0]
    assert (qid, q0, docno, rank, tag) == (ours[0]["question_id"], "Q0", first["id"], "1", name)
    assert float(score) == first["score"]  # an untied score is written exactly


# --- ranx ----------------------------------------------------------------------------------------


RANX_METRICS = ("hit_rate", "precision", "recall", "f1", "mrr", "map", "ndcg")  # ndcg: linear gain, as in the run


def ranx_scores(folder: Path, name: str, k: int) -> tuple[dict, dict, dict[str, dict[str, float]]]:
    ranx = pytest.importorskip("ranx")
    qrels_dict = json.loads((folder / "qrels" / f"{name}.json").read_text())
    run_dict = json.loads((folder / "runs" / f"{name}.json").read_text())
    qrels, run = ranx.Qrels.from_dict(qrels_dict), ranx.Run.from_dict(run_dict)
    ranx.evaluate(qrels, run, [f"{m}@{k}" for m in RANX_METRICS], return_mean=False, make_comparable=True)
    per_question: dict[str, dict[str, float]] = {}
    for m in RANX_METRICS:
        for qid, value in run.scores[f"{m}@{k}"].items():
            per_question.setdefault(qid, {})[f"{m}@{k}"] = float(value)
    return qrels_dict, run_dict, per_question


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ranx_export_scores_as_ranx(real_run, loaded, tmp_path):
    summary, records = loaded
    k = summary["k"]
    export_run(real_run, tmp_path, "ranx")
    assert (tmp_path / "candidates.tsv").is_file()
    for cid, recs in by_candidate(records).items():
        qrels, run, theirs = ranx_scores(tmp_path, safe_name(cid), k)
        assert set(qrels) == {r["question_id"] for r in recs if r["expected"]}
        assert set(run) == {r["question_id"] for r in recs if r["ranking"]}
        assert set(theirs) == set(qrels)  # make_comparable keeps exactly the judged questions
        for rec in recs:
            qid = rec["question_id"]
            if qid in run:
                assert list(run[qid]) == [e["id"] for e in rec["ranking"]]
                assert sorted_by_score(run[qid]) == list(run[qid])
            if qid in theirs:
                assert_same(rec["metrics"], theirs[qid], (cid, qid))


# --- ties and null scores ------------------------------------------------------------------------


def below(x: float) -> float:
    """The next float32 below x: trec_eval keeps scores as 32-bit floats."""
    return float(np.nextafter(np.float32(x), np.float32(-np.inf)))


def test_export_scores_rule():
    assert export_scores([0.9, 0.5, 0.1]) == [0.9, 0.5, 0.1]
    tied = export_scores([0.5, 0.5, 0.5, None, 0.3, 0.3])
    assert tied == [0.5, below(0.5), below(below(0.5)), below(below(below(0.5))), 0.3, below(0.3)]
    assert tied[4] == 0.3  # a score below its predecessor stays exact
    assert export_scores([None, None]) == [0.0, below(0.0)]
    assert export_scores([float("nan"), 0.2]) == [0.0, below(0.0)]
    assert export_scores([]) == []
    # distinct in float64 but equal in float32: separated too, as trec_eval would tie them
    close = export_scores([0.5, math.nextafter(0.5, -math.inf)])
    assert close == [0.5, below(0.5)]
    # strictly decreasing in float32, and full precision survives the text round trip
    values = export_scores([1 / 3, 1 / 3, 0.1 + 1e-12, 0.1])
    assert all(np.float32(a) > np.float32(b) for a, b in pairwise(values))
    assert values[0] == 1 / 3 and values[2] == 0.1 + 1e-12
    assert [float(repr(v)) for v in values] == values


def test_ids_and_names():
    assert safe_name("minilm/md256/hnsw@efSearch=16") == "minilm__md256__hnsw@efSearch=16"
    assert safe_name("my model/c 1/ivf@nprobe=8,x=0.5") == "my%20model__c%201__ivf@nprobe=8,x=0.5"
    assert safe_name("é/%/~") == "%C3%A9__%25__%7E"
    assert safe_names(["a_/b/x", "a/_b/x", "c/d/e"]) == {
        "a_/b/x": "a___b__x",
        "a/_b/x": "a___b__x~2",
        "c/d/e": "c__d__e",
    }
    assert export_id("my docs/a b.md#0000") == "my%20docs/a%20b.md#0000"
    assert export_id("tab\there%") == "tab%09here%25"
    assert export_id("a%20b") != export_id("a b")  # "%" is encoded too, so distinct ids stay distinct


def tie_record(qid: str, ranking: list[tuple[str, float | None, int]], expected: list[tuple[str, int]]) -> dict:
    def unit(uid: str, score, grade: int) -> dict:
        doc = uid.split("#")[0]
        return {"id": uid, "doc_id": doc, "start": 0, "end": 10, "score": score, "grade": grade}

    return {
        "candidate": "m/c/flat",
        "question_id": qid,
        "question": "?",
        "tags": [],
        "ranking": [unit(*e) for e in ranking],
        "expected": [unit(uid, None, g) for uid, g in expected],
        "evidence": [],
    }


@pytest.fixture
def tie_run(tmp_path) -> Path:
    """A hand-made run whose rankings hold ties and nulls, ordered as bench orders them (unit id)."""
    k = depth = 4
    records = [
        # trec_eval would put a.md#0001 (tied, docno greater) first and c before b (both null)
        tie_record(
            "q1",
            [("a.md#0000", 0.5, 0), ("a.md#0001", 0.5, 1), ("b.md#0000", None, 0), ("c.md#0000", None, 2)],
            [("a.md#0001", 1), ("c.md#0000", 2)],
        ),
        # a null at rank 1 and a space in a document id
        tie_record(
            "q 2", [("d d.md#0000", None, 0), ("d d.md#0001", None, 0), ("e.md#0000", 0.7, 1)], [("e.md#0000", 1)]
        ),
    ]
    grades = grades_from_records([QuestionRecord.from_dict(r) for r in records], depth)
    per_question = quality(grades, k, "linear")
    for q, rec in enumerate(records):
        rec["metrics"] = {key: float(values[q]) for key, values in per_question.items()}
        hits = [r for r, e in enumerate(rec["ranking"], start=1) if e["grade"] > 0]
        rec["first_relevant_rank"] = hits[0] if hits else None
    assert [r["metrics"]["mrr@4"] for r in records] == [0.5, 1 / 3]
    quality_means = {key: float(values.mean()) for key, values in per_question.items()}
    summary = {
        "k": k,
        "depth": depth,
        "unit": "chunk",
        "ndcg_gain": "linear",
        "min_overlap": 0.5,
        "candidates": [
            {
                "id": "m/c/flat",
                "model": "m",
                "chunker": "c",
                "index": "flat",
                "search": None,
                "rank": 1,
                "quality": quality_means,
            }
        ],
    }
    run = tmp_path / "run"
    files.write_json(run / store.SUMMARY, summary)
    files.write_jsonl(run / store.PER_QUESTION, records)
    files.write_json(run / store.MANIFEST, {"run_id": "tie"})
    return run


def test_ties_and_nulls_keep_our_order_in_trec_eval(tie_run, tmp_path):
    export_run(tie_run, tmp_path / "trec", "trec")
    qrels, run = read_trec(tmp_path / "trec", "m__c__flat")
    assert set(run) == {"q1", "q%202"}
    assert sorted_by_score(run["q1"]) == ["a.md#0000", "a.md#0001", "b.md#0000", "c.md#0000"]
    assert sorted_by_score(run["q%202"]) == ["d%20d.md#0000", "d%20d.md#0001", "e.md#0000"]
    theirs = trec_measures(qrels, run, 4)
    records = {export_id(r["question_id"]): r for r in store.load_jsonl(tie_run / store.PER_QUESTION)}
    assert theirs["q1"]["mrr@4"] == 0.5
    for qid, values in theirs.items():
        assert_same(records[qid]["metrics"], values, qid)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ties_and_nulls_keep_our_order_in_ranx(tie_run, tmp_path):
    export_run(tie_run, tmp_path / "ranx", "ranx")
    _, _, theirs = ranx_scores(tmp_path / "ranx", "m__c__flat", 4)
    records = {export_id(r["question_id"]): r for r in store.load_jsonl(tie_run / store.PER_QUESTION)}
    assert theirs["q1"]["mrr@4"] == 0.5
    for qid, values in theirs.items():
        assert_same(records[qid]["metrics"], values, qid)


def test_unknown_format_lists_the_formats(tie_run, tmp_path):
    with pytest.raises(BenchError, match="trec, ranx, csv, parquet"):
        export_run(tie_run, tmp_path, "xml")


# --- csv and parquet -----------------------------------------------------------------------------


def test_csv_table(real_run, loaded, tmp_path):
    summary, records = loaded
    (path,) = export_run(real_run, tmp_path, "csv")
    assert b"\r" not in path.read_bytes()  # "\n" line ends
    with path.open(newline="") as f:
        header, *rows = list(csv.reader(f))
    metric_names = list(summary["candidates"][0]["quality"])
    assert header == [*ID_COLUMNS, *metric_names]
    questions = [r["question_id"] for r in records if r["candidate"] == records[0]["candidate"]]
    assert len(rows) == len(summary["candidates"]) * len(questions) == len(records)
    ranked = sorted(summary["candidates"], key=lambda c: c["rank"])
    assert [r[0] for r in rows[:: len(questions)]] == [c["id"] for c in ranked]
    assert [r[4] for r in rows[: len(questions)]] == questions
    stored = {(r["candidate"], r["question_id"]): r for r in records}
    col = header.index
    for row in rows:
        rec = stored[(row[0], row[4])]
        cand = next(c for c in ranked if c["id"] == row[0])
        assert row[1:4] == [cand["model"], cand["chunker"], cand["index"]]
        assert row[col("tags")] == ";".join(rec["tags"])
        miss = rec["first_relevant_rank"] is None
        assert row[col("first_relevant_rank")] == ("" if miss else str(rec["first_relevant_rank"]))
        for name in metric_names:
            assert float(row[col(name)]) == rec["metrics"][name]  # full precision
    assert any(row[col("first_relevant_rank")] == "" for row in rows)


def test_parquet_equals_csv(real_run, tmp_path):
    pd = pytest.importorskip("pandas")
    fastparquet = pytest.importorskip("fastparquet")
    (csv_path,) = export_run(real_run, tmp_path / "csv", "csv")
    (parquet_path,) = export_run(real_run, tmp_path / "parquet", "parquet")
    table = fastparquet.ParquetFile(str(parquet_path)).to_pandas()
    expected = pd.read_csv(
        csv_path,
        dtype={c: "str" for c in ID_COLUMNS[:6]} | {"first_relevant_rank": "Int64"},
        keep_default_na=False,
        na_values={"first_relevant_rank": [""]},
    )
    assert str(table["first_relevant_rank"].dtype) == "Int64"
    assert table["first_relevant_rank"].isna().any()
    assert all(str(table[c].dtype) == "float64" for c in table.columns[len(ID_COLUMNS) :])
    # fastparquet reads text columns back as object; the values must match
    for column in ID_COLUMNS[:6]:
        table[column] = table[column].astype("str")
    pd.testing.assert_frame_equal(table, expected)


# --- command line --------------------------------------------------------------------------------


def test_cli_export_writes_under_the_run(real_run):
    done = run_cli("export", str(real_run), "--format", "trec")
    assert done.returncode == 0, done.stderr
    folder = real_run / "export" / "trec"
    assert str(folder) in done.stdout
    assert (folder / "candidates.tsv").is_file()
    assert len(list(folder.glob("*.run"))) == len(store.load_json(real_run / store.SUMMARY)["candidates"])


def test_cli_export_unknown_run(tmp_path):
    done = run_cli("export", str(tmp_path / "nope"), "--format", "csv", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("bench: error:")


def test_cli_export_unknown_format(real_run):
    done = run_cli("export", str(real_run), "--format", "xml")
    assert done.returncode == 2
    assert "Usage:" in done.stderr and "'xml'" in done.stderr
    assert set(FORMATS) <= set(done.stderr.replace("'", " ").replace(",", " ").replace(".", " ").split())
