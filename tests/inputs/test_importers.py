"""Importers end to end: hand-made BEIR, TREC and Chroma fixtures, then the real shared collections."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from tests.helpers import SHARED, finished_runs, run_cli

DOCS = {
    "d1": ("Wing flutter", "Flutter of a swept wing at transonic speed was measured in the tunnel."),
    "d2": ("Boundary layers", "Laminar boundary layer transition on a flat plate under pressure gradient."),
    "d3": ("Heat transfer", "Heat transfer to a blunt body in hypersonic flow was computed."),
    "d4": ("", "Buckling of thin cylindrical shells under axial compression."),
}


def _gold(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run_imported(config: Path, models: str = '["bm25", "hash"]') -> dict:
    text = config.read_text().replace('["minilm", "bm25"]', models)
    config.write_text(text)
    result = run_cli("run", str(config))
    assert result.returncode == 0, result.stderr
    [run] = finished_runs(config.parent / "results")
    return json.loads((run / "summary.json").read_text())


def _beir_folder(root: Path) -> Path:
    src = root / "mini-beir"
    (src / "qrels").mkdir(parents=True)
    with (src / "corpus.jsonl").open("w") as f:
        for doc_id, (title, text) in DOCS.items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    queries = {
        "q1": "swept wing flutter",
        "q2": "boundary layer transition",
        "q3": "shell buckling",
        "q4": "query with only a zero judgment",
        "q5": "query judged on a missing document",
    }
    with (src / "queries.jsonl").open("w") as f:
        for qid, text in queries.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    (src / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        "q1\td1\t2\nq1\td3\t1\nq2\td2\t1\nq2\td1\t0\nq3\td4\t1\nq4\td2\t0\nq5\tmissing\t1\nq9\td1\t1\n"
    )
    return src


def test_beir_import_gives_a_document_unit_goldset_that_runs(tmp_path: Path):
    src = _beir_folder(tmp_path)
    out = tmp_path / "project"
    result = run_cli("goldset", "import", "beir", str(src), "--name", "mini", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "non positive judgments: 2" in result.stdout
    assert "judgments of unknown documents: 1" in result.stdout
    assert "judged queries without text: 1" in result.stdout
    gold = _gold(out / "goldsets" / "mini.jsonl")
    assert [q["id"] for q in gold] == ["q1", "q2", "q3"]
    assert gold[0]["evidence"] == [{"doc": "d1", "grade": 2}, {"doc": "d3", "grade": 1}]
    corpus = [json.loads(line) for line in (out / "corpora" / "mini.jsonl").read_text().splitlines()]
    assert corpus[0] == {
        "id": "d1",
        "title": "Wing flutter",
        "text": "Wing flutter Flutter of a swept wing at transonic speed was measured in the tunnel.",
    }
    assert corpus[3]["text"] == DOCS["d4"][1]  # an empty title adds nothing
    summary = _run_imported(out / "mini.toml")
    assert summary["unit"] == "document" and summary["k"] == 10
    bm25 = next(c for c in summary["candidates"] if c["model"] == "bm25")
    assert bm25["quality"]["hit_rate@10"] == 1.0


def test_import_refuses_to_overwrite_without_force(tmp_path: Path):
    src = _beir_folder(tmp_path)
    args = ("goldset", "import", "beir", str(src), "--name", "mini", "--out", str(tmp_path / "p"))
    assert run_cli(*args).returncode == 0
    again = run_cli(*args)
    assert again.returncode == 2 and "--force" in again.stderr
    assert run_cli(*args, "--force").returncode == 0


def test_beir_import_names_a_missing_file(tmp_path: Path):
    src = _beir_folder(tmp_path)
    (src / "qrels" / "test.tsv").unlink()
    result = run_cli("goldset", "import", "beir", str(src), "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and "test.tsv: missing" in result.stderr


def test_trec_import_reads_sgml_topics_and_documents(tmp_path: Path):
    src = tmp_path / "trec"
    src.mkdir()
    docs = "".join(
        f"<DOC>\n<DOCNO> {i} </DOCNO>\n<TEXT>\n{t} &amp; {x}\n</TEXT>\n</DOC>\n" for i, (t, x) in DOCS.items()
    )
    (src / "docs.trec").write_text(docs)
    (src / "topics.txt").write_text(
        "<top>\n<num> Number: 401\n<title> swept wing flutter\n\n<desc> Description:\nFind flutter studies.\n</top>\n"
        "<top>\n<num> Number: 402\n<title> shell\nbuckling\n<desc> Description:\nThin shells.\n<narr> x\n</top>\n"
    )
    (src / "qrels.txt").write_text("401 0 d1 1\n401 0 d2 0\n402 0 d4 2\n403 0 d3 1\n")
    out = tmp_path / "p"
    result = run_cli(
        "goldset",
        "import",
        "trec",
        "--qrels",
        str(src / "qrels.txt"),
        "--topics",
        str(src / "topics.txt"),
        "--corpus",
        str(src / "docs.trec"),
        "--name",
        "t",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    gold = _gold(out / "goldsets" / "t.jsonl")
    assert [(q["id"], q["question"]) for q in gold] == [("401", "swept wing flutter"), ("402", "shell buckling")]
    assert gold[1]["evidence"] == [{"doc": "d4", "grade": 2}]
    corpus = [json.loads(line) for line in (out / "corpora" / "t.jsonl").read_text().splitlines()]
    assert corpus[0]["text"] == "Wing flutter & Flutter of a swept wing at transonic speed was measured in the tunnel."
    desc = run_cli(
        "goldset",
        "import",
        "trec",
        "--qrels",
        str(src / "qrels.txt"),
        "--topics",
        str(src / "topics.txt"),
        "--corpus",
        str(src / "docs.trec"),
        "--name",
        "d",
        "--out",
        str(out),
        "--topic-field",
        "desc",
    )
    assert desc.returncode == 0
    assert _gold(out / "goldsets" / "d.jsonl")[0]["question"] == "Find flutter studies."
    summary = _run_imported(out / "t.toml")
    assert {c["model"] for c in summary["candidates"]} == {"bm25", "hash"}


def test_trec_import_with_tab_topics_and_a_jsonl_corpus(tmp_path: Path):
    src = tmp_path / "trec"
    src.mkdir()
    (src / "docs.jsonl").write_text("".join(json.dumps({"id": i, "text": x}) + "\n" for i, (_, x) in DOCS.items()))
    (src / "topics.tsv").write_text("7\tthin shell buckling\n8\theat transfer hypersonic\n")
    (src / "qrels").write_text("7 0 d4 1\n8 Q0 d3 1\n")
    result = run_cli(
        "goldset",
        "import",
        "trec",
        "--qrels",
        str(src / "qrels"),
        "--topics",
        str(src / "topics.tsv"),
        "--corpus",
        str(src / "docs.jsonl"),
        "--out",
        str(tmp_path / "p"),
    )
    assert result.returncode == 0, result.stderr
    assert len(_gold(tmp_path / "p" / "goldsets" / "qrels.jsonl")) == 2


def test_trec_qrels_with_a_bad_line_is_named(tmp_path: Path):
    (tmp_path / "docs.jsonl").write_text(json.dumps({"id": "d1", "text": "x y"}) + "\n")
    (tmp_path / "topics.tsv").write_text("1\tx\n")
    (tmp_path / "qrels").write_text("1 0 d1 1\n1 0 d1\n")
    result = run_cli(
        "goldset",
        "import",
        "trec",
        "--qrels",
        str(tmp_path / "qrels"),
        "--topics",
        str(tmp_path / "topics.tsv"),
        "--corpus",
        str(tmp_path / "docs.jsonl"),
        "--out",
        str(tmp_path),
    )
    assert result.returncode == 2 and "qrels:2: expected 4 columns" in result.stderr


def _chroma_folder(root: Path, rows: list[tuple[str, list[dict], str]], docs: dict[str, str]) -> Path:
    src = root / "chroma"
    (src / "corpora").mkdir(parents=True)
    for corpus_id, text in docs.items():
        (src / "corpora" / f"{corpus_id}.md").write_bytes(text.encode())
    with (src / "questions_df.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["question", "references", "corpus_id"])
        for question, refs, corpus_id in rows:
            writer.writerow([question, json.dumps(refs), corpus_id])
    return src


def test_chroma_import_keeps_spans_and_checks_them(tmp_path: Path):
    text = "# Notes\n\nThe pump runs at 40 bar.\n\nThe valve closes after 3 seconds.\n"
    docs = {"notes": text, "other": "Nothing to see here, only filler text about nothing.\n"}
    pump = text.index("The pump")
    valve = text.index("The valve")
    rows = [
        (
            "What pressure does the pump run at?",
            [{"content": "The pump runs at 40 bar.", "start_index": pump, "end_index": pump + 24}],
            "notes",
        ),
        (
            "When does the valve close, and the pump pressure?",
            [
                {"content": "The valve closes after 3 seconds.", "start_index": 0, "end_index": 5},  # wrong offsets
                {"content": "The pump runs at 40 bar.", "start_index": pump, "end_index": pump + 24},
            ],
            "notes",
        ),
    ]
    src = _chroma_folder(tmp_path, rows, docs)
    out = tmp_path / "p"
    result = run_cli("goldset", "import", "chroma", str(src), "--name", "c", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "references relocated: 1" in result.stdout
    gold = _gold(out / "goldsets" / "c.jsonl")
    assert gold[0]["evidence"] == [{"doc": "notes.md", "start": pump, "end": pump + 24, "grade": 1}]
    assert gold[1]["evidence"][0] == {"doc": "notes.md", "start": valve, "end": valve + 33, "grade": 1}
    assert (out / "corpora" / "c" / "notes.md").read_text() == text
    summary = _run_imported(out / "c.toml")
    assert summary["unit"] == "chunk"


def test_chroma_reference_that_cannot_be_found_is_an_error(tmp_path: Path):
    src = _chroma_folder(
        tmp_path,
        [("q?", [{"content": "absent text", "start_index": 0, "end_index": 11}], "n")],
        {"n": "Some other words entirely.\n"},
    )
    result = run_cli("goldset", "import", "chroma", str(src), "--out", str(tmp_path / "p"))
    assert result.returncode == 2 and "questions_df.csv:2" in result.stderr and "absent" in result.stderr
    assert not (tmp_path / "p" / "goldsets").exists()


@pytest.mark.skipif(not (SHARED / "cranfield").is_dir(), reason="shared Cranfield collection absent")
def test_cranfield_through_the_beir_importer_matches_a_plain_bm25(tmp_path: Path):
    result = run_cli(
        "goldset", "import", "beir", str(SHARED / "cranfield"), "--name", "cranfield", "--out", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    gold = _gold(tmp_path / "goldsets" / "cranfield.jsonl")
    assert len(gold) == 225
    summary = _run_imported(tmp_path / "cranfield.toml", models='["bm25"]')
    [bm25] = summary["candidates"]
    # A plain BM25 scores nDCG@10 ≈ 0.355 on Cranfield's binary qrels.
    assert abs(bm25["quality"]["ndcg@10"] - 0.355) <= 0.05


@pytest.mark.skipif(not (SHARED / "squad-articles").is_dir(), reason="shared SQuAD articles absent")
def test_squad_articles_through_the_chroma_importer(tmp_path: Path):
    """SQuAD's paragraph spans written in Chroma's layout, imported, and run with BM25."""
    squad = SHARED / "squad-articles"
    rows = [json.loads(line) for line in (squad / "questions.jsonl").read_text().splitlines()]
    sample = random.Random(7).sample(rows, 150)
    articles = {r["corpus_id"] for r in sample}
    docs = {a: (squad / "corpora" / f"{a}.txt").read_text(encoding="utf-8") for a in articles}
    chroma_rows = []
    for r in sample:
        start, end = r["paragraph_span"]
        chroma_rows.append(
            (
                r["question"],
                [{"content": docs[r["corpus_id"]][start:end], "start_index": start, "end_index": end}],
                r["corpus_id"],
            )
        )
    src = _chroma_folder(tmp_path, chroma_rows, docs)
    result = run_cli("goldset", "import", "chroma", str(src), "--name", "squad", "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    assert "relocated" not in result.stdout  # every offset held its content
    summary = _run_imported(tmp_path / "p" / "squad.toml", models='["bm25"]')
    bm25 = next(c for c in summary["candidates"] if c["chunker"] == "rec256")
    # questions were written from their paragraph: lexical retrieval finds most of them
    assert bm25["quality"]["hit_rate@5"] > 0.6


def test_a_chinese_collection_gets_a_starter_config_with_a_multilingual_model(tmp_path: Path):
    """MiniLM reads English only: the starter config of a Chinese collection names e5-small instead."""
    src = tmp_path / "zh-beir"
    (src / "qrels").mkdir(parents=True)
    docs = {
        "z1": "扫地机器人的电池每隔十八个月需要更换一次，更换时请使用原厂电池。",
        "z2": "退货须在签收后七天内申请，商品及配件应保持完好，并附上购买凭证。",
    }
    (src / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": k, "title": "", "text": v}, ensure_ascii=False) + "\n" for k, v in docs.items())
    )
    (src / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "电池多久换一次？"}, ensure_ascii=False) + "\n")
    (src / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tz1\t1\n")
    result = run_cli("goldset", "import", "beir", str(src), "--name", "zh", "--out", str(tmp_path / "p"))
    assert result.returncode == 0, result.stderr
    config = (tmp_path / "p" / "zh.toml").read_text()
    assert 'models = ["e5-small", "bm25"]' in config and "'zh'" in config
    english = _beir_folder(tmp_path / "en")
    assert (
        run_cli("goldset", "import", "beir", str(english), "--name", "en", "--out", str(tmp_path / "q")).returncode == 0
    )
    assert 'models = ["minilm", "bm25"]\n' in (tmp_path / "q" / "en.toml").read_text()
