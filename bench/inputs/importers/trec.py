"""TREC qrels (``qid iter docid rel``) plus a topics file → a document-unit goldset.

Topics are TREC SGML (``<top><num> Number: 401 <title> …``) or plain ``qid<TAB>text`` lines.
The corpus is anything ``bench run`` reads, or a TREC SGML document file (``<DOC><DOCNO>…``).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from bench.errors import BenchError
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

TOPIC_FIELDS = ("title", "desc", "title+desc")
_TOP = re.compile(r"<top>(.*?)</top>", re.S | re.I)
_FIELD = re.compile(r"<(num|title|desc|narr)>(.*?)(?=<(?:num|title|desc|narr)>|$)", re.S | re.I)
_DOC = re.compile(r"<DOC>(.*?)</DOC>", re.S | re.I)
_DOCNO = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")


def import_trec(
    qrels: Path, topics: Path, corpus_path: Path, dest: Destination, topic_field: str = "title"
) -> ImportResult:
    if topic_field not in TOPIC_FIELDS:
        raise BenchError(f"--topic-field {topic_field!r}: use one of {', '.join(TOPIC_FIELDS)}")
    corpus_out = dest.corpus_file()
    dest.refuse_overwrite(corpus_out, dest.goldset)
    documents = _read_documents(Path(corpus_path))
    queries = read_topics(Path(topics), topic_field)
    questions, dropped = document_goldset(
        queries, read_qrels(Path(qrels), columns=4), {d[0] for d in documents}, tags=["trec"]
    )
    if not questions:
        raise BenchError(f"{qrels}: no topic has a positive judgment of a known document; nothing to import")
    write_documents_jsonl(corpus_out, documents)
    write_goldset(dest.goldset, questions)
    config = write_starter_config(dest, corpus_out, "document", (d[2] for d in documents))
    return ImportResult(corpus_out, dest.goldset, config, len(documents), len(questions), dropped)


def read_topics(path: Path, field: str = "title") -> dict[str, str]:
    lines = read_lines(path)
    text = "\n".join(line for _, line in lines)
    if "<top>" in text.lower():
        return _sgml_topics(path, text, field)
    topics = {}
    for lineno, line in lines:
        parts = line.split("\t", 1) if "\t" in line else line.split(None, 1)
        if len(parts) != 2 or not parts[1].strip():
            raise BenchError(f"{path}:{lineno}: expected 'topic-id<TAB>text' or TREC <top> blocks")
        topics[parts[0].strip()] = parts[1].strip()
    return topics


def _sgml_topics(path: Path, text: str, field: str) -> dict[str, str]:
    topics = {}
    for n, block in enumerate(_TOP.findall(text), start=1):
        fields = {name.lower(): " ".join(value.split()) for name, value in _FIELD.findall(block)}
        num = re.sub(r"^Number:\s*", "", fields.get("num", ""), flags=re.I).strip()
        title = fields.get("title", "")
        desc = re.sub(r"^Description:\s*", "", fields.get("desc", ""), flags=re.I).strip()
        query = {"title": title, "desc": desc, "title+desc": f"{title} {desc}".strip()}[field]
        if not num or not query:
            raise BenchError(f"{path}: topic block {n} has no <num> or no <{field.split('+')[0]}> text")
        topics[num] = query
    return topics


def _read_documents(path: Path) -> list[tuple[str, str, str]]:
    if path.is_file() and b"<DOC>" in path.read_bytes()[:65536].upper():
        return _sgml_documents(path)
    corpus = load_corpus(path)
    return [(d.id, d.title, d.text) for d in corpus.documents]


def _sgml_documents(path: Path) -> list[tuple[str, str, str]]:
    text = "\n".join(line for _, line in read_lines(path))
    documents, seen = [], set()
    for n, block in enumerate(_DOC.findall(text), start=1):
        match = _DOCNO.search(block)
        if not match:
            raise BenchError(f"{path}: document {n} has no <DOCNO>")
        doc_id = match.group(1)
        if doc_id in seen:
            raise BenchError(f"{path}: duplicate <DOCNO> {doc_id!r}")
        seen.add(doc_id)
        body = html.unescape(_TAG.sub(" ", _DOCNO.sub(" ", block)))
        body = "\n".join(" ".join(line.split()) for line in body.splitlines() if line.strip())
        if body:
            documents.append((doc_id, "", body))
    if not documents:
        raise BenchError(f"{path}: no <DOC> with text found")
    return documents
