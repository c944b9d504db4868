"""Report jobs in forked workers: results in the order given, failures raised, nothing left running."""

from __future__ import annotations

import multiprocessing
import os
import pickle

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


def test_report_jobs_take_arguments_a_spawned_worker_could_be_sent():
    """Forked workers inherit their jobs; a platform that spawns them would pickle each one instead."""
    from functools import partial

    from bench.report import plots
    from tests.report.test_plots import make_run, rank_matrix

    summary, records = make_run()
    job = partial(plots.drawn, "hit_rate_curves", summary, records, rank_matrix(summary, records))
    copy = pickle.loads(pickle.dumps(job))
    assert copy.args[1] == summary and copy.args[2] == records
    assert copy()[0] == "Hit rate by cutoff"
