"""Chroma's chunking-evaluation layout → a chunk-unit goldset with character spans.

``questions_df.csv`` has ``question``, ``references`` (a JSON list of
``{content, start_index, end_index}``) and ``corpus_id``; documents are
``corpora/<corpus_id>.md`` (or ``.txt``). Offsets are checked against the text.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from bench import files
from bench.errors import BenchError
from bench.inputs.corpus import TEXT_SUFFIXES
from bench.inputs.importers.base import (
    Destination,
    ImportResult,
    write_goldset,
    write_starter_config,
)


def import_chroma(source: Path, dest: Destination) -> ImportResult:
    source = Path(source)
    csv_path = source / "questions_df.csv"
    if not csv_path.is_file():
        raise BenchError(f"{csv_path}: missing; Chroma's layout has questions_df.csv and corpora/<corpus_id>.md")
    folder = dest.corpus_folder()
    dest.refuse_overwrite(folder, dest.goldset)
    texts: dict[str, tuple[str, str]] = {}  # corpus_id -> (doc id, text)
    questions, dropped = [], {"references_relocated": 0}
    csv.field_size_limit(sys.maxsize)
    with csv_path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        missing = {"question", "references", "corpus_id"} - set(reader.fieldnames or [])
        if missing:
            raise BenchError(f"{csv_path}: missing column(s) {', '.join(sorted(missing))}")
        for row_no, row in enumerate(reader, start=1):
            where = f"{csv_path}:{reader.line_num}"
            corpus_id = row["corpus_id"].strip()
            if corpus_id not in texts:
                texts[corpus_id] = _read_document(source, corpus_id, where)
            doc_id, text = texts[corpus_id]
            evidence = [_span(ref, text, doc_id, where, dropped) for ref in _references(row["references"], where)]
            question = row["question"].strip()
            if not question:
                raise BenchError(f"{where}: empty question")
            questions.append({"id": f"q{row_no:05d}", "question": question, "evidence": evidence, "tags": [corpus_id]})
    if not questions:
        raise BenchError(f"{csv_path}: no questions")
    for doc_id, text in texts.values():
        files.write_atomic(folder / doc_id, text)
    write_goldset(dest.goldset, questions)
    config = write_starter_config(dest, folder, "chunk", (text for _, text in texts.values()))
    return ImportResult(
        folder, dest.goldset, config, len(texts), len(questions), {k: v for k, v in dropped.items() if v}
    )


def _read_document(source: Path, corpus_id: str, where: str) -> tuple[str, str]:
    if "/" in corpus_id or corpus_id.startswith("."):
        raise BenchError(f"{where}: corpus_id {corpus_id!r} must be a plain file name")
    for suffix in TEXT_SUFFIXES:
        path = source / "corpora" / f"{corpus_id}{suffix}"
        if path.is_file():
            try:
                raw = path.read_bytes().decode("utf-8-sig")
            except UnicodeDecodeError:
                raise BenchError(f"{path}: not UTF-8 text; convert it to UTF-8") from None
            return path.name, raw.replace("\r\n", "\n")
    raise BenchError(f"{where}: no document corpora/{corpus_id}.md (or .txt) for corpus_id {corpus_id!r}")


def _references(cell: str, where: str) -> list[dict]:
    try:
        refs = json.loads(cell)
    except json.JSONDecodeError as e:
        raise BenchError(f"{where}: references is not JSON ({e.msg})") from None
    if not isinstance(refs, list) or not refs:
        raise BenchError(f"{where}: references must be a non-empty JSON list of {{content, start_index, end_index}}")
    return refs


def _span(ref: object, text: str, doc_id: str, where: str, counts: dict) -> dict:
    """The reference as a checked span; when the offsets are off, the content's only occurrence."""
    if not isinstance(ref, dict) or not isinstance(ref.get("content"), str):
        raise BenchError(f'{where}: each reference needs "content", "start_index" and "end_index"')
    content = ref["content"].replace("\r\n", "\n")
    start, end = ref.get("start_index"), ref.get("end_index")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text) and text[start:end] == content:
        return {"doc": doc_id, "start": start, "end": end, "grade": 1}
    first = text.find(content) if content else -1
    if first < 0 or text.find(content, first + 1) >= 0:
        raise BenchError(
            f"{where}: reference offsets {start}..{end} do not hold its content, and the content "
            f"is {'absent from' if first < 0 else 'repeated in'} {doc_id}; fix the reference"
        )
    counts["references_relocated"] += 1
    return {"doc": doc_id, "start": first, "end": first + len(content), "grade": 1}
