"""What every importer writes, and how: a corpus, a goldset, a starter config; nothing half-written."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bench import files
from bench.errors import BenchError
from bench.files import numbered_lines, read_text
from bench.text.languages import detect_mix


@dataclass
class ImportResult:
    corpus: Path
    goldset: Path
    config: Path | None
    documents: int
    questions: int
    dropped: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Destination:
    """Where an import named ``name`` goes under ``out``: corpora/, goldsets/ and <name>.toml."""

    out: Path
    name: str
    force: bool = False

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name or self.name.startswith("."):
            raise BenchError(f"--name {self.name!r}: use a plain name such as 'cranfield'")

    @property
    def goldset(self) -> Path:
        return self.out / "goldsets" / f"{self.name}.jsonl"

    def corpus_file(self) -> Path:
        return self.out / "corpora" / f"{self.name}.jsonl"

    def corpus_folder(self) -> Path:
        return self.out / "corpora" / self.name

    @property
    def config(self) -> Path:
        return self.out / f"{self.name}.toml"

    def refuse_overwrite(self, *paths: Path) -> None:
        for path in paths:
            if path.exists() and not self.force:
                raise BenchError(f"{path}: already exists; choose another --name or pass --force to replace it")


def write_documents_jsonl(path: Path, documents: list[tuple[str, str, str]]) -> None:
    """(id, title, text) rows as a bench JSONL corpus."""
    files.write_jsonl(path, ({"id": i, "title": t, "text": x} for i, t, x in documents))


def write_goldset(path: Path, questions: list[dict]) -> None:
    files.write_atomic(path, "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions))


def starter_models(texts: Iterable[str]) -> str:
    """The ``models`` line of a starter config: MiniLM and BM25 for English (or undetermined) text;
    for any other language e5-small, which is multilingual, since MiniLM reads English only."""
    language = detect_mix(texts).main
    if language in ("en", "und"):
        return 'models = ["minilm", "bm25"]\n'
    return f'models = ["e5-small", "bm25"]  # the corpus is {language!r}: e5-small reads it, minilm English only\n'


def write_starter_config(dest: Destination, corpus: Path, unit: str, texts: Iterable[str]) -> Path | None:
    """A bench config for the imported data (``texts``, its documents, choose the models), unless
    one exists already (it is never overwritten)."""
    if dest.config.exists():
        return None
    chunker = (
        "[chunkers.tok512]  # large windows: most documents stay whole, and pooling ranks documents\n"
        'kind = "tokens"\nsize = 512\noverlap = 64\n'
        if unit == "document"
        else '[chunkers.tok256]\nkind = "tokens"\nsize = 256\noverlap = 32\n\n'
        '[chunkers.rec256]\nkind = "recursive"\nsize = 256\n'
    )
    k = 10 if unit == "document" else 5
    files.write_atomic(
        dest.config,
        (
            f"# Imported by `bench goldset import`; edit freely.\n"
            f'corpus = "{_from(dest.out, corpus)}"\n'
            f'goldset = "{dest.goldset.relative_to(dest.out).as_posix()}"\n'
            f"k = {k}\n"
            f"{starter_models(texts)}\n{chunker}"
        ),
    )
    return dest.config


def _from(out: Path, path: Path) -> str:
    """``path`` as the config names it: relative to the config's folder when inside it, else absolute."""
    try:
        return path.relative_to(out).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def read_lines(path: Path) -> list[tuple[int, str]]:
    """Non-blank lines with their numbers; UTF-8 (a BOM is fine), CRLF accepted."""
    if not path.is_file():
        raise BenchError(f"{path}: not found")
    return numbered_lines(read_text(path))


def parse_grade(value: str, where: str) -> int:
    try:
        return int(value)
    except ValueError:
        try:
            as_float = float(value)
        except ValueError:
            as_float = None
        if as_float is not None and as_float.is_integer():
            return int(as_float)
        raise BenchError(f"{where}: relevance {value!r} is not an integer grade") from None


def read_qrels(path: Path, columns: int) -> dict[str, dict[str, int]]:
    """qrels as {query id: {doc id: grade}}: BEIR TSV (3 columns, optional header) or TREC (4 columns)."""
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in read_lines(path):
        parts = line.split("\t") if columns == 3 and "\t" in line else line.split()
        where = f"{path}:{lineno}"
        if columns == 3 and lineno == 1 and parts[-1].strip().lower() in ("score", "relevance", "rel"):
            continue  # BEIR header: query-id corpus-id score
        if len(parts) != columns:
            layout = "query-id<TAB>corpus-id<TAB>score" if columns == 3 else "qid iteration docid relevance"
            raise BenchError(f"{where}: expected {columns} columns ({layout}), found {len(parts)}")
        qid, doc, grade = parts[0].strip(), parts[-2].strip(), parse_grade(parts[-1].strip(), where)
        qrels.setdefault(qid, {})[doc] = grade
    return qrels


def document_goldset(
    queries: dict[str, str], qrels: dict[str, dict[str, int]], doc_ids: set[str], tags: list[str]
) -> tuple[list[dict], dict[str, int]]:
    """Document-unit questions: whole-document evidence graded by the qrels; what was dropped, counted."""
    dropped = {
        "non_positive_judgments": 0,
        "judgments_of_unknown_documents": 0,
        "judged_queries_without_text": 0,
        "queries_without_relevant_documents": 0,
    }
    questions = []
    for qid in qrels:
        if qid not in queries:
            dropped["judged_queries_without_text"] += 1
    for qid, text in queries.items():
        evidence = []
        for doc, grade in qrels.get(qid, {}).items():
            if grade <= 0:
                dropped["non_positive_judgments"] += 1
            elif doc not in doc_ids:
                dropped["judgments_of_unknown_documents"] += 1
            else:
                evidence.append({"doc": doc, "grade": grade})
        if not evidence:
            if qid in qrels:
                dropped["queries_without_relevant_documents"] += 1
            continue
        questions.append({"id": qid, "question": text, "evidence": evidence, "tags": tags})
    return questions, {k: v for k, v in dropped.items() if v}
