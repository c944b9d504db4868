"""Corpus loading and goldset parsing: tiny hand-written corpora and goldsets under tmp_path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.errors import BenchError
from bench.inputs.corpus import Corpus, Document, load_corpus
from bench.inputs.goldset import CHUNK, DOCUMENT, load_goldset

# --- helpers -------------------------------------------------------------------------------


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path


def jsonl(path: Path, rows: list[object | str], eol: str = "\n") -> Path:
    """Rows are dicts (dumped) or raw strings (written as they are, e.g. blank or broken lines)."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    return write(path, eol.join(lines) + eol)


def ids(corpus: Corpus) -> list[str]:
    return [d.id for d in corpus.documents]


# --- corpus: folders -----------------------------------------------------------------------


def test_folder_nested_ids_sorted_and_unread_files_said(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "zeta.md", "Zeta text.")
    write(root / "alpha.txt", "Alpha text.")
    write(root / "sub" / "inner.md", "Inner text.")
    write(root / "sub" / "deeper" / "leaf.TXT", "Leaf text.")
    write(root / "b" / "x.md", "B x text.")
    write(root / "notes.json", '{"not": "a document"}')
    write(root / "image.png", b"\x89PNG\r\n\x1a\n")
    write(root / "readme.rst", "Read as text.")
    write(root / "sub" / "script.py", "print('left out')")
    write(root / ".git" / "HEAD", "ref: refs/heads/main")  # hidden: not a document, not a warning
    write(root / ".DS_Store", b"\0\0\0\1Bud1")
    corpus = load_corpus(root)
    assert ids(corpus) == ["alpha.txt", "b/x.md", "readme.rst", "sub/deeper/leaf.TXT", "sub/inner.md", "zeta.md"]
    assert len(corpus) == 6
    assert [(x.path, x.kind) for x in corpus.left_out] == [
        ("image.png", "unsupported"),
        ("notes.json", "unsupported"),
        ("sub/script.py", "unsupported"),
    ]
    (warning,) = corpus.warnings()
    assert (
        "left out 3 files of a format bench does not read (1 .png, 1 .json, 1 .py): image.png, notes.json, "
        "sub/script.py; convert them to one it reads (.docx, .epub, " in warning
    )
    assert "sub/inner.md" in corpus
    assert "sub\\inner.md" not in corpus
    assert "notes.json" not in corpus
    assert corpus.get("sub/inner.md").text == "Inner text."
    assert corpus.get("alpha.txt") == Document(id="alpha.txt", text="Alpha text.")


def test_folder_crlf_normalised_and_bom_accepted(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "crlf.md", b"line one\r\nline two\r\n")
    write(root / "bom.md", b"\xef\xbb\xbfHello BOM")
    corpus = load_corpus(root)
    assert corpus.get("crlf.md").text == "line one\nline two\n"
    assert corpus.get("bom.md").text == "Hello BOM"  # no \ufeff left at offset 0


def test_folder_latin1_read_and_said(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "good.md", "fine")
    write(root / "sub" / "latin1.txt", "café crème “quoted”".encode("cp1252"))
    corpus = load_corpus(root)
    assert corpus.get("sub/latin1.txt").text == "café crème “quoted”"
    assert any("sub/latin1.txt: not UTF-8: read as Windows-1252" in line for line in corpus.warnings())


def test_folder_undecodable_and_binary_text_left_out_with_the_reason(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "good.md", "fine")
    write(root / "garbage.txt", bytes(range(128, 256)) * 4)  # no Western text looks like this
    write(root / "binary.md", b"text\0with a NUL")
    corpus = load_corpus(root)
    assert ids(corpus) == ["good.md"]
    reasons = {x.path: x.reason for x in corpus.left_out}
    assert "encoding cannot be told; convert it to UTF-8" in reasons["garbage.txt"]
    assert "NUL byte" in reasons["binary.md"]
    (warning,) = corpus.warnings()
    assert warning.startswith(f"{root}: left out 2 files that cannot be read: binary.md: a NUL byte")
    with pytest.raises(BenchError, match=r"2 files left out of the corpus \(--strict\): binary.md"):
        corpus.check_strict()


def test_empty_corpus_folder_is_an_error(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "data.json", "{}")
    write(root / "blank.md", "  \n\t\n")  # whitespace only: not a document
    with pytest.raises(BenchError, match="no documents"):
        load_corpus(root)


def test_missing_corpus_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="not found"):
        load_corpus(tmp_path / "nope")


def test_symlink_escaping_the_corpus_folder(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside" / "secret.md", "secret text")
    root = tmp_path / "c"
    write(root / "ok.md", "ok")
    os.symlink(outside, root / "link.md")
    corpus = load_corpus(root)  # a real knowledge base has the odd bad file: left out, and said
    assert ids(corpus) == ["ok.md"]
    (left_out,) = corpus.left_out
    assert left_out.path == "link.md"
    assert "outside the corpus folder; copy the file in instead" in left_out.reason
    assert "link.md" in corpus.warnings()[0]


def test_symlink_inside_the_corpus_folder_is_fine(tmp_path: Path) -> None:
    root = tmp_path / "c"
    target = write(root / "real.md", "real text")
    os.symlink(target, root / "alias.md")
    corpus = load_corpus(root)
    assert ids(corpus) == ["alias.md", "real.md"]
    assert corpus.get("alias.md").text == "real text"


# --- corpus: JSONL and BEIR ----------------------------------------------------------------


def test_jsonl_with_blank_lines_sorted(tmp_path: Path) -> None:
    f = jsonl(
        tmp_path / "c.jsonl",
        [
            {"id": "b", "title": "Bee", "text": "second doc"},
            "",
            "   ",
            {"id": "a", "text": "first\r\ndoc"},
            "",
        ],
    )
    corpus = load_corpus(f)
    assert ids(corpus) == ["a", "b"]
    assert corpus.get("a").text == "first\ndoc"
    assert corpus.get("b").text == "second doc"  # plain JSONL keeps the title apart from the text
    assert corpus.get("b").title == "Bee"


def test_jsonl_crlf_file_and_bom(tmp_path: Path) -> None:
    f = tmp_path / "c.jsonl"
    body = "\r\n".join(json.dumps(r) for r in [{"id": "x", "text": "ex"}, {"id": "y", "text": "why"}])
    write(f, b"\xef\xbb\xbf" + body.encode() + b"\r\n")
    corpus = load_corpus(f)
    assert ids(corpus) == ["x", "y"]
    assert corpus.get("x").text == "ex"


def test_jsonl_invalid_line_names_file_and_line(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "A"}, "", '{"id": "b", "text": '])
    with pytest.raises(BenchError) as err:
        load_corpus(f)
    assert f"{f}:3" in str(err.value)
    assert "invalid JSON" in str(err.value)


def test_jsonl_not_an_object(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "A"}, '["b", "B"]'])
    with pytest.raises(BenchError, match=r"c\.jsonl:2"):
        load_corpus(f)


def test_jsonl_duplicate_ids(tmp_path: Path) -> None:
    f = jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}, {"id": "a", "text": "again"}])
    with pytest.raises(BenchError) as err:
        load_corpus(f)
    assert f"{f}:3" in str(err.value)
    assert "duplicate" in str(err.value)
    assert "'a'" in str(err.value)


@pytest.mark.parametrize(
    "row",
    [{"text": "no id"}, {"id": "", "text": "empty id"}, {"id": True, "text": "t"}, {"id": "a"}, {"id": "a", "text": 5}],
)
def test_jsonl_bad_rows(tmp_path: Path, row: dict) -> None:
    f = jsonl(tmp_path / "c.jsonl", [{"id": "ok", "text": "fine"}, row])
    with pytest.raises(BenchError, match=r"c\.jsonl:2"):
        load_corpus(f)


def test_jsonl_non_utf8_names_the_file(tmp_path: Path) -> None:
    f = write(tmp_path / "bad.jsonl", b'{"id": "a", "text": "caf\xe9"}\n')
    with pytest.raises(BenchError, match=r"bad\.jsonl.*UTF-8"):
        load_corpus(f)


def test_jsonl_empty_file_is_an_error(tmp_path: Path) -> None:
    f = write(tmp_path / "c.jsonl", "\n\n")
    with pytest.raises(BenchError, match="no documents"):
        load_corpus(f)


def test_beir_folder_joins_title_and_text(tmp_path: Path) -> None:
    root = tmp_path / "beir"
    jsonl(
        root / "corpus.jsonl",
        [
            {"_id": "d2", "title": "Intro", "text": "The body."},
            {"_id": "d1", "title": "", "text": "No title here."},
            {"_id": "d3", "text": "  Missing title.  "},
            {"_id": "d4", "title": "Title only", "text": ""},
        ],
    )
    write(root / "queries.jsonl", json.dumps({"_id": "q1", "text": "ignored"}) + "\n")
    write(root / "stray.md", "a folder file must not be read in BEIR mode")
    corpus = load_corpus(root)
    assert ids(corpus) == ["d1", "d2", "d3", "d4"]
    assert corpus.get("d2").text == "Intro The body."
    assert corpus.get("d2").title == "Intro"
    assert corpus.get("d1").text == "No title here."
    assert corpus.get("d3").text == "Missing title."
    assert corpus.get("d4").text == "Title only"


def test_beir_duplicate_underscore_ids(tmp_path: Path) -> None:
    root = tmp_path / "beir"
    jsonl(root / "corpus.jsonl", [{"_id": "d1", "text": "x"}, {"_id": "d1", "text": "y"}])
    with pytest.raises(BenchError, match="duplicate"):
        load_corpus(root)


# --- corpus: fingerprint -------------------------------------------------------------------


def test_fingerprint_stable_and_sensitive(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "a.md", "alpha")
    write(root / "sub" / "b.txt", "beta")
    fp = load_corpus(root).fingerprint
    assert len(fp) == 64
    assert load_corpus(root).fingerprint == fp  # reload: same
    write(root / "sub" / "b.txt", "betA")  # one character changed
    fp2 = load_corpus(root).fingerprint
    assert fp2 != fp
    write(root / "sub" / "b.txt", "beta")
    assert load_corpus(root).fingerprint == fp  # back to the original
    write(root / "a.md", "alpha ")  # trailing space
    assert load_corpus(root).fingerprint not in (fp, fp2)


def test_fingerprint_independent_of_layout_but_not_of_ids(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "a.md", "alpha")
    write(root / "b.md", "beta")
    f = jsonl(tmp_path / "c.jsonl", [{"id": "b.md", "text": "beta"}, {"id": "a.md", "text": "alpha"}])
    g = jsonl(tmp_path / "g.jsonl", [{"id": "a.md", "text": "alpha"}, {"id": "c.md", "text": "beta"}])
    # Separators matter: ("ab", "c") and ("a", "bc") must not collide.
    h1 = jsonl(tmp_path / "h1.jsonl", [{"id": "ab", "text": "c"}])
    h2 = jsonl(tmp_path / "h2.jsonl", [{"id": "a", "text": "bc"}])
    assert load_corpus(root).fingerprint == load_corpus(f).fingerprint
    assert load_corpus(g).fingerprint != load_corpus(f).fingerprint
    assert load_corpus(h1).fingerprint != load_corpus(h2).fingerprint


def test_fingerprint_ignores_crlf_vs_lf(tmp_path: Path) -> None:
    write(tmp_path / "lf" / "a.md", b"one\ntwo\n")
    write(tmp_path / "crlf" / "a.md", b"one\r\ntwo\r\n")
    assert load_corpus(tmp_path / "lf").fingerprint == load_corpus(tmp_path / "crlf").fingerprint


# --- goldset -------------------------------------------------------------------------------

DOC_A = "The quick brown fox jumps over the lazy dog.\nThe dog sleeps. The dog dreams."
DOC_B = "Paris is the capital of France.\nBerlin is the capital of Germany.\n"


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    root = tmp_path / "corpus"
    write(root / "a.md", DOC_A)
    write(root / "sub" / "b.txt", DOC_B.replace("\n", "\r\n"))  # CRLF on disk, LF after loading
    return load_corpus(root)


def gold(tmp_path: Path, rows: list[object | str], eol: str = "\n", name: str = "gold.jsonl") -> Path:
    return jsonl(tmp_path / name, rows, eol)


def q(qid: str, *evidence: dict, **extra) -> dict:
    return {"id": qid, "question": f"question {qid}?", "evidence": list(evidence), **extra}


def test_quote_resolves_to_exact_span(tmp_path: Path, corpus: Corpus) -> None:
    g = load_goldset(
        gold(
            tmp_path,
            [
                q("q1", {"doc": "a.md", "quote": "brown fox"}),
                q("q2", {"doc": "sub/b.txt", "quote": "France.\nBerlin", "grade": 2}),
                q("q3", {"doc": "sub/b.txt", "quote": "Germany.\r\n"}),  # CRLF in the quote matches LF text
            ],
        ),
        corpus,
    )
    assert g.unit == CHUNK
    (e1,), (e2,), (e3,) = (x.evidence for x in g.questions)
    assert (e1.doc, e1.start, e1.end) == ("a.md", 10, 19)
    assert DOC_A[e1.start : e1.end] == "brown fox"
    assert corpus.get("sub/b.txt").text[e2.start : e2.end] == "France.\nBerlin"
    assert e2.start == DOC_B.index("France.")
    assert e2.grade == 2
    assert corpus.get("sub/b.txt").text[e3.start : e3.end] == "Germany.\n"
    assert not e1.whole_document


def test_quote_not_found(tmp_path: Path, corpus: Corpus) -> None:
    p = gold(tmp_path, [q("q1", {"doc": "a.md", "quote": "fox"}), "", q("q2", {"doc": "a.md", "quote": "purple cat"})])
    with pytest.raises(BenchError) as err:
        load_goldset(p, corpus)
    msg = str(err.value)
    assert f"{p}:3" in msg
    assert "not found" in msg
    assert "purple cat" in msg


def test_quote_is_case_and_whitespace_exact(tmp_path: Path, corpus: Corpus) -> None:
    p = gold(tmp_path, [q("q1", {"doc": "a.md", "quote": "Brown Fox"})])
    with pytest.raises(BenchError, match="not found"):
        load_goldset(p, corpus)


@pytest.mark.parametrize("quote", ["The dog", "dog", "he "])
def test_quote_occurring_twice(tmp_path: Path, corpus: Corpus, quote: str) -> None:
    p = gold(tmp_path, [q("q1", {"doc": "a.md", "quote": quote})])
    with pytest.raises(BenchError) as err:
        load_goldset(p, corpus)
    assert "more than once" in str(err.value)
    assert f"{p}:1" in str(err.value)


def test_overlapping_repeat_counts_as_twice(tmp_path: Path) -> None:
    write(tmp_path / "c" / "x.md", "say aaa now")
    c = load_corpus(tmp_path / "c")
    p = gold(tmp_path, [q("q1", {"doc": "x.md", "quote": "aa"})])
    with pytest.raises(BenchError, match="more than once"):
        load_goldset(p, c)


@pytest.mark.parametrize("quote", ["", "   ", 7, ["fox"]])
def test_quote_must_be_non_empty_text(tmp_path: Path, corpus: Corpus, quote: object) -> None:
    p = gold(tmp_path, [q("q1", {"doc": "a.md", "quote": quote})])
    with pytest.raises(BenchError, match=r"gold\.jsonl:1"):
        load_goldset(p, corpus)


def test_quote_in_other_document_is_not_found(tmp_path: Path, corpus: Corpus) -> None:
    p = gold(tmp_path, [q("q1", {"doc": "sub/b.txt", "quote": "brown fox"})])
    with pytest.raises(BenchError, match="not found"):
        load_goldset(p, corpus)


def test_start_end_spans_accepted(tmp_path: Path, corpus: Corpus) -> None:
    n = len(DOC_A)
    g = load_goldset(
        gold(
            tmp_path,
            [
                q("q1", {"doc": "a.md", "start": 4, "end": 9}),
                q("q2", {"doc": "a.md", "start": 0, "end": n, "grade": 3}),
                q("q3", {"doc": "a.md", "start": n - 1, "end": n}),
            ],
        ),
        corpus,
    )
    assert g.unit == CHUNK
    spans = [(e.start, e.end, e.grade) for x in g.questions for e in x.evidence]
    assert spans == [(4, 9, 1), (0, n, 3), (n - 1, n, 1)]


@pytest.mark.parametrize(
    "span",
    [
        {"start": 5, "end": 5},  # empty
        {"start": 9, "end": 4},  # reversed
        {"start": 0, "end": len(DOC_A) + 1},  # past the end
        {"start": -1, "end": 4},  # negative
        {"start": 1.0, "end": 4},  # float
        {"start": 1, "end": "4"},  # string
        {"start": True, "end": 4},  # bool
        {"start": 1},  # end missing
        {"end": 4},  # start missing
    ],
)
def test_bad_spans(tmp_path: Path, corpus: Corpus, span: dict) -> None:
    p = gold(tmp_path, [q("q0", {"doc": "a.md", "start": 0, "end": 3}), q("q1", {"doc": "a.md", **span})])
    with pytest.raises(BenchError) as err:
        load_goldset(p, corpus)
    assert f"{p}:2" in str(err.value)


def test_quote_and_span_together_is_an_error(tmp_path: Path, corpus: Corpus) -> None:
    p = gold(tmp_path, [q("q1", {"doc": "a.md", "quote": "fox", "start": 0, "end": 3})])
    with pytest.raises(BenchError, match="not both"):
        load_goldset(p, corpus)


def test_whole_document_evidence_is_document_unit(tmp_path: Path, corpus: Corpus) -> None:
    g = load_goldset(
        gold(
            tmp_path,
            [
                q("q1", {"doc": "a.md"}),
                q("q2", {"doc": "sub/b.txt", "grade": 2}, {"doc": "a.md"}),
            ],
        ),
        corpus,
    )
    assert g.unit == DOCUMENT
    ev = g.questions[1].evidence
    assert [(e.doc, e.grade, e.start, e.end) for e in ev] == [("sub/b.txt", 2, None, None), ("a.md", 1, None, None)]
    assert all(e.whole_document for e in ev)


@pytest.mark.parametrize(
    "rows",
    [
        [q("q1", {"doc": "a.md"}), q("q2", {"doc": "a.md", "quote": "fox"})],  # across questions
        [q("q1", {"doc": "a.md", "start": 0, "end": 3}, {"doc": "sub/b.txt"})],  # inside one question
    ],
)
def test_mixing_whole_documents_and_spans(tmp_path: Path, corpus: Corpus, rows: list) -> None:
    with pytest.raises(BenchError, match="mixes"):
        load_goldset(gold(tmp_path, rows), corpus)


@pytest.mark.parametrize("doc", ["missing.md", "b.txt", "sub\\b.txt", None, 3])
def test_unknown_document(tmp_path: Path, corpus: Corpus, doc: object) -> None:
    p = gold(tmp_path, [q("q1", {"doc": doc, "quote": "fox"})])
    with pytest.raises(BenchError) as err:
        load_goldset(p, corpus)
    assert "unknown document" in str(err.value)
    assert f"{p}:1" in str(err.value)


@pytest.mark.parametrize("grade", [0, -1, 1.5, "2", True, False, None, 2.0])
def test_bad_grades(tmp_path: Path, corpus: Corpus, grade: object) -> None:
    p = gold(tmp_path, [q("q1", {"doc": "a.md", "quote": "fox", "grade": grade})])
    with pytest.raises(BenchError) as err:
        load_goldset(p, corpus)
    assert "grade" in str(err.value)
    assert f"{p}:1" in str(err.value)


def test_default_grade_is_one_and_tags_kept(tmp_path: Path, corpus: Corpus) -> None:
    g = load_goldset(
        gold(
            tmp_path,
            [
                q(
                    "q1",
                    {"doc": "a.md", "quote": "fox"},
                    {"doc": "a.md", "quote": "lazy", "grade": 2},
                    tags=["animals", "x"],
                ),
                q("q2", {"doc": "a.md", "quote": "quick"}),
            ],
        ),
        corpus,
    )
    q1, q2 = g.questions
    assert [e.grade for e in q1.evidence] == [1, 2]
    assert q1.tags == ("animals", "x")
    assert q2.tags == ()
    assert q1.text == "question q1?"
    assert [x.id for x in g.questions] == ["q1", "q2"]


@pytest.mark.parametrize("tags", ["animals", [1], {"a": 1}])
def test_bad_tags(tmp_path: Path, corpus: Corpus, tags: object) -> None:
    with pytest.raises(BenchError, match="tags"):
        load_goldset(gold(tmp_path, [q("q1", {"doc": "a.md", "quote": "fox"}, tags=tags)]), corpus)


def test_duplicate_question_ids_name_both_lines(tmp_path: Path, corpus: Corpus) -> None:
    p = gold(
        tmp_path,
        [
            q("q1", {"doc": "a.md", "quote": "fox"}),
            q("dup", {"doc": "a.md", "quote": "quick"}),
            "",
            q("q3", {"doc": "a.md", "quote": "lazy"}),
            q("dup", {"doc": "a.md", "quote": "brown"}),
        ],
    )
    with pytest.raises(BenchError) as err:
        load_goldset(p, corpus)
    msg = str(err.value)
    assert f"{p}:5" in msg
    assert "line 2" in msg
    assert "'dup'" in msg


@pytest.mark.parametrize(
    "row",
    [
        {"id": "q1", "evidence": [{"doc": "a.md", "quote": "fox"}]},  # no question
        {"id": "q1", "question": "  ", "evidence": [{"doc": "a.md", "quote": "fox"}]},  # blank question
        {"id": "q1", "question": "why?", "evidence": []},  # empty evidence
        {"id": "q1", "question": "why?"},  # no evidence
        {"id": "q1", "question": "why?", "evidence": {"doc": "a.md"}},  # not a list
        {"id": "q1", "question": "why?", "evidence": ["a.md"]},  # item not an object
        {"question": "why?", "evidence": [{"doc": "a.md", "quote": "fox"}]},  # no id
        {"id": 1, "question": "why?", "evidence": [{"doc": "a.md", "quote": "fox"}]},  # id not a string
    ],
)
def test_malformed_questions(tmp_path: Path, corpus: Corpus, row: dict) -> None:
    p = gold(tmp_path, [q("ok", {"doc": "a.md", "quote": "fox"}), row])
    with pytest.raises(BenchError) as err:
        load_goldset(p, corpus)
    assert f"{p}:2" in str(err.value)


def test_invalid_json_line(tmp_path: Path, corpus: Corpus) -> None:
    p = gold(tmp_path, ["", q("ok", {"doc": "a.md", "quote": "fox"}), '{"id": "q2",'])
    with pytest.raises(BenchError) as err:
        load_goldset(p, corpus)
    assert f"{p}:3" in str(err.value)
    assert "invalid JSON" in str(err.value)


def test_blank_lines_crlf_and_bom_accepted(tmp_path: Path, corpus: Corpus) -> None:
    rows = ["", q("q1", {"doc": "a.md", "quote": "fox"}), "  ", "", q("q2", {"doc": "sub/b.txt", "quote": "Paris"}), ""]
    body = "\r\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows)
    p = write(tmp_path / "gold.jsonl", b"\xef\xbb\xbf" + body.encode() + b"\r\n")
    g = load_goldset(p, corpus)
    assert [x.id for x in g.questions] == ["q1", "q2"]
    assert g.questions[1].evidence[0].start == 0
    # Line numbers in errors still count physical lines (blank ones and the BOM line included).
    bad = rows + [q("q3", {"doc": "a.md", "quote": "zebra"})]
    body = "\r\n".join(r if isinstance(r, str) else json.dumps(r) for r in bad)
    p2 = write(tmp_path / "gold2.jsonl", b"\xef\xbb\xbf" + body.encode() + b"\r\n")
    with pytest.raises(BenchError, match=rf"{p2.name}:7: .*not found"):
        load_goldset(p2, corpus)


def test_empty_goldset_and_missing_file(tmp_path: Path, corpus: Corpus) -> None:
    with pytest.raises(BenchError, match="no questions"):
        load_goldset(write(tmp_path / "g.jsonl", "\n  \n"), corpus)
    with pytest.raises(BenchError, match="not found"):
        load_goldset(tmp_path / "missing.jsonl", corpus)


def test_goldset_non_utf8(tmp_path: Path, corpus: Corpus) -> None:
    p = write(tmp_path / "g.jsonl", b'{"id": "q\xe9", "question": "x", "evidence": [{"doc": "a.md"}]}\n')
    with pytest.raises(BenchError, match="UTF-8"):
        load_goldset(p, corpus)


def test_goldset_fingerprint_is_of_the_bytes(tmp_path: Path, corpus: Corpus) -> None:
    p = gold(tmp_path, [q("q1", {"doc": "a.md", "quote": "fox"})])
    fp = load_goldset(p, corpus).fingerprint
    assert load_goldset(p, corpus).fingerprint == fp
    p = gold(tmp_path, [q("q1", {"doc": "a.md", "quote": "fox", "grade": 2})])
    assert load_goldset(p, corpus).fingerprint != fp
