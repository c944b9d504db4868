"""Regression gate: fail a CI job when a run's metrics drop below a committed baseline.

A baseline is a small JSON file (``{"bench_baseline": 1, ...}``) holding every quality metric of every
candidate of one run, with the fingerprints that say which corpus, goldset, k and unit the numbers belong
to. Checking a run against a baseline made on other data would compare unrelated numbers, so that is
refused unless forced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench import files
from bench.errors import BenchError
from bench.results import store
from bench.results.history import metric_name, mismatches, not_comparable, read_run, same_metric

BASELINE_FORMAT = 1
TOLERANCE = 1e-12  # a drop exactly at --max-drop passes despite float rounding (0.5 − 0.48 > 0.02)
_REQUIRED = ("run_id", "k", "unit", "corpus_sha256", "goldset_sha256", "metrics")
_HOW = "write one with `bench check RUN --save-baseline FILE`"


@dataclass(frozen=True)
class Regression:
    """One metric of one candidate that dropped too far (``current`` None: the run lacks the metric)."""

    candidate: str
    metric: str
    baseline: float
    current: float | None
    drop: float | None


@dataclass
class CheckResult:
    run_id: str
    baseline_run_id: str
    max_drop: float
    candidates_checked: int
    metrics_checked: int  # (candidate, metric) pairs compared
    regressions: list[Regression] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # in the baseline, not in the run: a failure
    new: list[str] = field(default_factory=list)  # in the run, not in the baseline: only listed
    forced: list[str] = field(default_factory=list)  # why the numbers may not be comparable, when forced

    @property
    def ok(self) -> bool:
        return not self.regressions and not self.missing


# --- baselines -----------------------------------------------------------------------------------------------


def baseline_from_run(run: Path) -> dict:
    info = read_run(run)
    return {
        "bench_baseline": BASELINE_FORMAT,
        "run_id": info.run_id,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "k": info.k,
        "unit": info.unit,
        "corpus_sha256": info.corpus_sha256,
        "goldset_sha256": info.goldset_sha256,
        "config_hash": info.config_hash,
        "metrics": {cid: dict(quality) for cid, quality in info.candidates.items()},
    }


def save_baseline(run: Path, file: Path) -> dict:
    """Write ``run``'s metrics to ``file`` (atomically) and return the baseline."""
    baseline = baseline_from_run(run)
    try:
        files.write_json(file, baseline)
    except OSError as e:
        raise BenchError(f"{file}: cannot write the baseline ({e.strerror}); give a writable file path") from None
    return baseline


def load_baseline(ref: str, results: Path) -> dict:
    """A baseline from a file written by ``save_baseline``, or made on the fly from a run (folder, id, latest)."""
    path = Path(ref)
    if path.is_file():
        return read_baseline(path)
    try:
        run = store.find_run(ref, results)
    except BenchError:
        if ref == "latest":
            raise
        raise BenchError(
            f"{ref}: neither a baseline file nor a finished run under {results}; give a file "
            f"from `bench check RUN --save-baseline FILE`, a run folder, a run id or latest"
        ) from None
    return baseline_from_run(run)


def read_baseline(path: Path) -> dict:
    try:
        data = files.loads_strict(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BenchError(f"{path}:{e.lineno}: not valid JSON ({e.msg}); {_HOW}") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BenchError(f"{path}: not a readable JSON file ({e}); {_HOW}") from None
    bad = _non_numbers(data.get("metrics") if isinstance(data, dict) else None)
    if bad:
        raise BenchError(f"{path}: metric {bad} is not a number; {_HOW}")
    if not isinstance(data, dict) or "bench_baseline" not in data:
        raise BenchError(f'{path}: not a bench baseline (no "bench_baseline" key); {_HOW}')
    if data["bench_baseline"] != BASELINE_FORMAT:
        raise BenchError(
            f"{path}: baseline format {data['bench_baseline']!r}, this bench reads format "
            f"{BASELINE_FORMAT}; re-save it with `bench check RUN --save-baseline {path}`"
        )
    missing = [key for key in _REQUIRED if key not in data]
    metrics = data.get("metrics")
    if missing or not isinstance(metrics, dict) or not all(isinstance(q, dict) for q in metrics.values()):
        what = f"lacks {', '.join(missing)}" if missing else 'has a malformed "metrics"'
        raise BenchError(f"{path}: the baseline {what}; re-save it with `bench check RUN --save-baseline {path}`")
    return data


def _non_numbers(metrics: object) -> str | None:
    """The first "candidate metric" of a baseline whose value is not a finite number, if any."""
    if not isinstance(metrics, dict):
        return None
    for cid, quality in metrics.items():
        for name, value in quality.items() if isinstance(quality, dict) else ():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return f"{cid} {name} = {value!r}"
    return None


def _fingerprint(baseline: dict) -> dict:
    return {key: baseline.get(key) for key in ("corpus_sha256", "goldset_sha256", "k", "unit")}


# --- the check -----------------------------------------------------------------------------------------------


def _wanted(baseline: dict, metrics: list[str] | None) -> list[str]:
    """The baseline's metric names to check: all of them, or those asked for (``@k`` may be left off)."""
    known = list(dict.fromkeys(m for quality in baseline["metrics"].values() for m in quality))
    if metrics is None:
        return known
    wanted = [metric_name(m, baseline["k"]) for m in metrics]
    unknown = [m for m in wanted if m not in known]
    if unknown:
        raise BenchError(f"--metrics {', '.join(unknown)}: not in the baseline; choose from {', '.join(known)}")
    return list(dict.fromkeys(wanted))


def check(
    run: Path, baseline: dict, max_drop: float, metrics: list[str] | None = None, force: bool = False
) -> CheckResult:
    """Compare ``run`` with ``baseline``: a regression is an absolute drop larger than ``max_drop``.

    A baseline candidate missing from the run fails; a candidate new in the run is only listed.
    """
    if not max_drop >= 0:  # also catches NaN
        raise BenchError(f"--max-drop {max_drop}: must be 0 or more (an absolute drop, e.g. 0.02)")
    info = read_run(run)
    reasons = mismatches(_fingerprint(baseline), info.fingerprint)
    if reasons and not force:
        raise not_comparable(f"{info.run_id} vs baseline {baseline['run_id']}", reasons, "check")
    wanted = _wanted(baseline, metrics)
    result = CheckResult(
        info.run_id,
        baseline["run_id"],
        max_drop,
        0,
        0,
        forced=reasons,
        new=[cid for cid in info.candidates if cid not in baseline["metrics"]],
    )
    for cid, expected in baseline["metrics"].items():
        if cid not in info.candidates:
            result.missing.append(cid)
            continue
        result.candidates_checked += 1
        for name in (m for m in wanted if m in expected):
            result.metrics_checked += 1
            regression = _regression(
                cid, name, expected[name], info.candidates[cid].get(same_metric(name, baseline["k"], info.k)), max_drop
            )
            if regression:
                result.regressions.append(regression)
    return result


def _regression(cid: str, metric: str, expected: float, current: float | None, max_drop: float) -> Regression | None:
    if current is None:
        return Regression(cid, metric, expected, None, None)
    drop = expected - current
    return Regression(cid, metric, expected, current, drop) if drop > max_drop + TOLERANCE else None
