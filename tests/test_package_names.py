"""Every name ``bench`` promises (``bench.__all__``) resolves, wherever its module now lives."""

from __future__ import annotations

import bench


def test_every_exported_name_resolves() -> None:
    for name in bench.__all__:
        value = getattr(bench, name)
        assert value is not None, name
    assert bench.CandidateResult.__name__ == "CandidateResult"
    assert bench.StoredRun.__name__ == "StoredRun"
