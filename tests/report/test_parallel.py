"""Report jobs in forked workers: results in the order given, failures raised, nothing left running."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from bench.report.jobs import Jobs


def test_results_come_back_by_name_in_the_order_given():
    jobs = {f"job{i}": (lambda i=i: (i, os.getpid())) for i in range(6)}
    done = Jobs(jobs).results()
    assert list(done) == list(jobs) and [v[0] for v in done.values()] == list(range(6))
    if (os.cpu_count() or 1) > 1:  # the work really ran in other processes
        assert all(pid != os.getpid() for _, pid in done.values())


def test_a_failing_job_raises_and_leaves_no_worker():
    def boom():
        raise ValueError("broken job")

    with pytest.raises(ValueError, match="broken job"):
        Jobs({"ok": lambda: 1, "boom": boom}).results()
    assert multiprocessing.active_children() == []
