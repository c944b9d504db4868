"""BEIR folders (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) → a document-unit goldset."""

from __future__ import annotations

from pathlib import Path

from bench.errors import BenchError
from bench.files import json_object
from bench.inputs.corpus import load_corpus
from bench.inputs.importers.base import (
    Destination,
    ImportResult,
    document_goldset,
    read_lines,
    read_qrels,
    write_documents_jsonl,
    write_goldset,
    write_starter_config,
)


def import_beir(source: Path, dest: Destination, split: str = "test") -> ImportResult:
    source = Path(source)
    qrels_path = source / "qrels" / f"{split}.tsv"
    for needed in (source / "corpus.jsonl", source / "queries.jsonl", qrels_path):
        if not needed.is_file():
            raise BenchError(f"{needed}: missing; a BEIR folder has corpus.jsonl, queries.jsonl and qrels/<split>.tsv")
    corpus_out = dest.corpus_file()
    dest.refuse_overwrite(corpus_out, dest.goldset)
    corpus = load_corpus(source)  # BEIR convention: text = title + " " + text
    queries = _read_queries(source / "queries.jsonl")
    questions, dropped = document_goldset(
        queries, read_qrels(qrels_path, columns=3), {d.id for d in corpus.documents}, tags=["beir", split]
    )
    if not questions:
        raise BenchError(f"{qrels_path}: no query has a positive judgment of a known document; nothing to import")
    write_documents_jsonl(corpus_out, [(d.id, d.title, d.text) for d in corpus.documents])
    write_goldset(dest.goldset, questions)
    config = write_starter_config(dest, corpus_out, "document", (d.text for d in corpus.documents))
    return ImportResult(corpus_out, dest.goldset, config, len(corpus), len(questions), dropped)


def _read_queries(path: Path) -> dict[str, str]:
    queries: dict[str, str] = {}
    for lineno, line in read_lines(path):
        where = f"{path}:{lineno}"
        row = json_object(line, where, '"_id" and "text"')
        if "_id" not in row or not isinstance(row.get("text"), str):
            raise BenchError(f'{where}: a query needs "_id" and "text"')
        if row["text"].strip():
            queries[str(row["_id"])] = row["text"].strip()
    return queries
