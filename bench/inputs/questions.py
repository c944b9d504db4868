"""A file of questions without evidence: what `bench goldset pool` drafts a goldset from, and what
`bench run --questions` asks when no goldset exists yet (a relevance judge grades the answers)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from bench.errors import BenchError
from bench.files import json_object, numbered_lines, read_text
from bench.inputs.goldset import CHUNK, MAX_QUESTION_CHARS, Goldset, Question

Asked = tuple[str, str, tuple[str, ...]]  # (id, question, tags)


def read_questions(path: Path) -> list[Asked]:
    """Questions as (id, question, tags): one per non-blank line of plain text, or JSONL objects with
    ``question`` and optional ``id`` and ``tags``. Missing ids are ``q001``, ``q002``… by position."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path}: questions file not found; give a text file with one question per line")
    lines = numbered_lines(read_text(path))
    if not lines:
        raise BenchError(f'{path}: no questions; write one question per line (or JSONL with a "question" field)')
    width = max(3, len(str(len(lines))))
    jsonl = path.suffix.lower() == ".jsonl" or lines[0][1].lstrip().startswith("{")
    questions: list[Asked] = []
    first_line: dict[str, int] = {}
    for position, (lineno, line) in enumerate(lines, start=1):
        where = f"{path}:{lineno}"
        default_id = f"q{position:0{width}d}"
        qid, text, tags = _json_question(line, where, default_id) if jsonl else (default_id, line.strip(), ())
        if len(text) > MAX_QUESTION_CHARS:
            raise BenchError(
                f"{where}: the question is {len(text):,} characters long; shorten it to at most "
                f"{MAX_QUESTION_CHARS:,} (no embedding model reads more)"
            )
        if qid in first_line:
            raise BenchError(
                f"{where}: duplicate question id {qid!r} (first on line {first_line[qid]}); "
                "give each question its own id"
            )
        first_line[qid] = lineno
        questions.append((qid, text, tags))
    return questions


def _json_question(line: str, where: str, default_id: str) -> Asked:
    row = json_object(line, where, '"question" (and optionally "id" and "tags")')
    text = row.get("question")
    if not isinstance(text, str) or not text.strip():
        raise BenchError(f'{where}: no "question" text; give the question as a non-empty string')
    qid = row.get("id", default_id)
    if not isinstance(qid, str) or not qid.strip():
        raise BenchError(f'{where}: "id" must be a non-empty string; give a unique id or leave it out')
    tags = row.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise BenchError(f'{where}: "tags" must be a list of strings, e.g. ["hr", "hard"]')
    return qid, text.strip(), tuple(tags)


def questions_only(path: Path) -> Goldset:
    """The questions of a questions file as a goldset with no evidence (chunk unit): every unit counts
    as unjudged until a relevance judge grades it."""
    path = Path(path)
    asked = read_questions(path)
    questions = tuple(Question(id=qid, text=text, evidence=(), tags=tags) for qid, text, tags in asked)
    return Goldset(path, questions, CHUNK, hashlib.sha256(path.read_bytes()).hexdigest())
