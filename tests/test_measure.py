"""Operating figures of bench.measure: the percentile definition and token arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from bench import measure


def test_percentiles_interpolate_linearly_between_closest_ranks():
    # 1..10 ms: p50 = 5.5 (between 5 and 6), p95 = 9 + 0.55 = 9.55, p99 = 9 + 0.91 = 9.91
    figures = measure.latency_summary("x", [i / 1000 for i in range(1, 11)])
    assert figures["x_ms_p50"] == pytest.approx(5.5)
    assert figures["x_ms_p95"] == pytest.approx(9.55)
    assert figures["x_ms_p99"] == pytest.approx(9.91)
    assert figures["x_ms_mean"] == pytest.approx(5.5)
    assert measure.latency_summary("x", []) == {"x_ms_p50": None, "x_ms_p95": None, "x_ms_p99": None, "x_ms_mean": None}


def test_token_figures_count_what_truncation_never_embeds():
    # max 10: chunks of 4, 10, 15, 30 tokens lose 0, 0, 5, 20 of 59
    figures = measure.token_figures(np.array([4, 10, 15, 30]), 10)
    assert figures == {"index_tokens": 59, "truncated_chunks": 2, "truncated_token_share": pytest.approx(25 / 59)}
    assert measure.token_figures(np.array([4, 100]), None)["truncated_chunks"] == 0
