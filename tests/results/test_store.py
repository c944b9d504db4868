"""Finding a stored run: `latest` is the newest, also among runs started in the same second."""

from __future__ import annotations

import os

import pytest

from bench.errors import BenchError
from bench.results import store


def _run(results, run_id: str, written_ns: int):
    folder = results / run_id
    folder.mkdir(parents=True)
    for name in (store.SUMMARY, store.PER_QUESTION):
        (folder / name).write_text("{}\n")
    os.utime(folder / store.SUMMARY, ns=(written_ns, written_ns))
    return folder


def test_latest_is_the_last_written_among_runs_of_the_same_second(tmp_path):
    _run(tmp_path, "20260101T000000Z-aaaaaa", 3_000)  # an older second, written last: still older
    _run(tmp_path, "20260102T000000Z-ffffff", 1_000)
    newest = _run(tmp_path, "20260102T000000Z-111111", 2_000)  # same second, smaller hash, written later
    _run(tmp_path, ".20260103T000000Z-000000.partial", 9_000)  # unfinished: never latest
    assert store.find_run("latest", tmp_path) == newest


def test_no_finished_run_is_one_line(tmp_path):
    with pytest.raises(BenchError, match="no finished runs yet"):
        store.find_run("latest", tmp_path)
