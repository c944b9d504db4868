"""Stored runs over time: list them, follow one candidate's metric, compare two runs.

Only ``summary.json`` and ``manifest.json`` are read, so history stays fast however many questions a run
has. A metric is comparable between two runs only when they share the corpus and goldset fingerprints
(sha256), k and unit; every function here says when they do not instead of silently mixing numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from bench.core.measures import ANSWER_METRICS, HEADLINE, MetricName
from bench.core.summary import Manifest, RunSummary
from bench.errors import BenchError
from bench.registry import suggest
from bench.results import schema, store

SHORT = 12  # hex digits of a fingerprint shown to people: enough to tell corpora apart at a glance
REPORT_RUNS = 20  # the report's trend plots show at most this many runs
_RUN_ID_TIME = "%Y%m%dT%H%M%SZ"


@dataclass(frozen=True)
class RunInfo:
    """What history needs of one stored run."""

    path: Path
    run_id: str
    started: datetime | str  # the manifest's text when it is not an ISO date
    finished: datetime | str
    config_hash: str
    corpus_sha256: str
    goldset_sha256: str
    k: int
    unit: str
    locked: bool
    candidates: dict[str, dict[str, float]]  # candidate id -> quality, in the run's rank order
    # The answer layer, where its answers were scored: the candidate that gave the contexts, the
    # means (also in that candidate's ``candidates`` entry, so trends and the gate see them), and
    # the labels' calibration ("labelled by people", "calibrated", "uncalibrated").
    answers_candidate: str | None = None
    answers: dict[str, float] = field(default_factory=dict)
    answers_status: str = ""

    def headline(self, candidate: str) -> dict[str, float | None]:
        """The headline metrics at this run's k (``mrr@k``, ``recall@k`` …) of one candidate."""
        quality = self.candidates[candidate]
        return {metric_name(name, self.k): quality.get(metric_name(name, self.k)) for name in HEADLINE}

    @property
    def fingerprint(self) -> dict:
        return {
            "corpus_sha256": self.corpus_sha256,
            "goldset_sha256": self.goldset_sha256,
            "k": self.k,
            "unit": self.unit,
        }


class RunList(list[RunInfo]):
    """Runs oldest first; ``notes`` says which folders were skipped and why (damaged, not a run)."""

    def __init__(self, runs: Iterable[RunInfo] = (), notes: Iterable[str] = ()) -> None:
        super().__init__(runs)
        self.notes: list[str] = list(notes)


class TrendPoint(NamedTuple):
    run_id: str
    started: datetime | str
    value: float
    corpus_sha256: str
    goldset_sha256: str


class CandidateTrend(NamedTuple):
    candidate: str
    points: list[TrendPoint]


# --- names and fingerprints ------------------------------------------------------------------------------------


def metric_name(name: str, k: int) -> str:
    """``mrr`` -> ``mrr@k``; a name that already carries a cutoff, or an answer metric (none has
    one), is kept."""
    return name if "@" in name or name in ANSWER_METRICS else str(MetricName(name, k))


def same_metric(name: str, k_from: int, k_to: int) -> str:
    """The name of the same metric at another cutoff (``mrr@3`` -> ``mrr@5``), for runs forced together."""
    suffix = f"@{k_from}"
    return name[: -len(suffix)] + f"@{k_to}" if name.endswith(suffix) else name


def short(sha: str | None) -> str:
    return (sha or "?")[:SHORT]


def mismatches(left: dict, right: dict) -> list[str]:
    """Why two runs (or a run and a baseline) are not comparable; empty when they are.

    Both sides are dicts with ``corpus_sha256``, ``goldset_sha256``, ``k`` and ``unit``.
    """
    reasons = []
    for what in ("corpus", "goldset"):
        a, b = left.get(f"{what}_sha256"), right.get(f"{what}_sha256")
        if a != b:
            reasons.append(f"{what} {short(a)}… vs {short(b)}…")
    for what in ("k", "unit"):
        if left.get(what) != right.get(what):
            reasons.append(f"{what} {left.get(what)} vs {right.get(what)}")
    return reasons


def not_comparable(what: str, reasons: list[str], action: str) -> BenchError:
    """The one-line refusal shared by ``compare`` and ``check``."""
    kind = "fingerprints differ" if any(r.startswith(("corpus", "goldset")) for r in reasons) else "settings differ"
    return BenchError(
        f"{what}: {kind} ({'; '.join(reasons)}): the numbers are not comparable; pass --force to {action} anyway"
    )


# --- reading runs --------------------------------------------------------------------------------------------


def _when(text: object, run_id: str) -> datetime | str:
    """The manifest's time as an aware datetime; else the time in the run id; else the text as it is."""
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        try:
            return datetime.strptime(run_id[:16], _RUN_ID_TIME).replace(tzinfo=UTC)
        except ValueError:
            return str(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def as_datetime(moment: datetime | str) -> datetime | None:
    return moment if isinstance(moment, datetime) else None


def run_info(folder: Path, summary: RunSummary, manifest: Manifest, answers: dict | None = None) -> RunInfo:
    """A RunInfo from a run's summary and manifest; BenchError when they lack what every run has."""
    run_id = manifest.run_id or folder.name
    corpus, goldset = manifest.fingerprint("corpus"), manifest.fingerprint("goldset")
    if corpus is None or goldset is None:
        missing = "corpus" if corpus is None else "goldset"
        raise BenchError(f"{folder}: {store.MANIFEST} has no {missing} sha256; the run folder is damaged")
    candidates = {c.id: {m: v for m, v in c.quality.items() if _is_number(v)} for c in summary.candidates}
    return RunInfo(
        path=folder,
        run_id=run_id,
        started=_when(manifest.started, run_id),
        finished=_when(manifest.finished, run_id),
        config_hash=str(manifest.config_hash or ""),
        corpus_sha256=corpus,
        goldset_sha256=goldset,
        k=int(summary.k),
        unit=summary.unit or (manifest.goldset or {}).get("unit", "?"),
        locked=bool(manifest.locked),
        candidates=candidates,
        **_answer_layer(answers, candidates),
    )


def _answer_layer(answers: dict | None, candidates: dict[str, dict[str, float]]) -> dict:
    """The RunInfo fields of a scored answer layer; its means join the answering candidate's metrics."""
    if not isinstance(answers, dict) or answers.get("candidate") not in candidates:
        return {}
    cid = answers["candidate"]
    means = {
        name: figure["mean"]
        for name, figure in (answers.get("metrics") or {}).items()
        if name in ANSWER_METRICS and isinstance(figure, dict) and _is_number(figure.get("mean"))
    }
    candidates[cid].update(means)
    status = (answers.get("calibration") or {}).get("status", "")
    return {"answers_candidate": cid, "answers": means, "answers_status": str(status)}


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def read_run(folder: Path) -> RunInfo:
    return run_info(
        folder, schema.load_summary(folder), schema.load_manifest(folder), schema.load_answers_summary(folder)
    )


def _order(run: RunInfo) -> tuple:
    """Oldest first; runs started in the same second by when they finished, then by id (``-2`` after)."""
    oldest = datetime.min.replace(tzinfo=UTC)
    return (as_datetime(run.started) or oldest, as_datetime(run.finished) or oldest, run.run_id)


def list_runs(results: Path) -> RunList:
    """Every finished run under ``results``, oldest first.

    Staging folders (``.<id>.partial``) are ignored; damaged runs and folders that are not runs are
    skipped and named in ``notes``, so one bad folder never hides the others.
    """
    if not results.is_dir():
        return RunList()
    runs, notes, not_runs = [], [], []
    for folder in sorted(results.iterdir()):
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        if not (folder / store.SUMMARY).is_file() or not (folder / store.MANIFEST).is_file():
            not_runs.append(folder.name)
            continue
        try:
            runs.append(read_run(folder))
        except BenchError as e:
            notes.append(f"skipped {folder.name}: {e}")
    if not_runs:
        notes.append(
            f"skipped {len(not_runs)} folder(s) under {results} without {store.SUMMARY} and "
            f"{store.MANIFEST}: {', '.join(not_runs)}"
        )
    return RunList(sorted(runs, key=_order), notes)


# --- one candidate over time ---------------------------------------------------------------------------------


def trend(results: Path, candidate: str, metric: str) -> list[TrendPoint]:
    """``metric`` of ``candidate`` in every run that has it, oldest first (``mrr`` means each run's mrr@k)."""
    runs = list_runs(results)
    if not runs:
        raise BenchError(f"{results}: no finished runs yet; run `bench run` first")
    return trend_points(runs, candidate, metric)


def trend_points(runs: list[RunInfo], candidate: str, metric: str) -> list[TrendPoint]:
    having = [r for r in runs if candidate in r.candidates]
    if not having:
        raise BenchError(_unknown_candidate(candidate, runs))
    points = [
        TrendPoint(
            r.run_id, r.started, r.candidates[candidate][metric_name(metric, r.k)], r.corpus_sha256, r.goldset_sha256
        )
        for r in having
        if metric_name(metric, r.k) in r.candidates[candidate]
    ]
    if not points:
        seen = dict.fromkeys(m for r in having for m in r.candidates[candidate])
        raise BenchError(f"--metric {metric}: not in any run of {candidate}; choose one of {', '.join(seen)}")
    return points


def _unknown_candidate(candidate: str, runs: list[RunInfo]) -> str:
    seen = list(dict.fromkeys(cid for r in runs for cid in r.candidates))
    hint = suggest(candidate, seen, n=3, cutoff=0.5, quote=False).rstrip() or f"candidates seen: {', '.join(seen[:12])}"
    return f"--candidate {candidate}: in none of {len(runs)} runs; {hint}"


def fingerprint_changed(before: TrendPoint, after: TrendPoint) -> list[str]:
    """Which fingerprints changed between two consecutive points: values across them are not comparable."""
    return [
        what
        for what, a, b in (
            ("corpus", before.corpus_sha256, after.corpus_sha256),
            ("goldset", before.goldset_sha256, after.goldset_sha256),
        )
        if a != b
    ]


def history_for_report(results: Path, summary: RunSummary, manifest: Manifest, metric: str) -> list[CandidateTrend]:
    """For every candidate of this run, ``metric`` (at this run's k) over the runs up to this one that share
    its corpus and goldset fingerprints, at most the last ``REPORT_RUNS``. The report plots a candidate
    when it has two points or more."""
    this = run_info(results / (manifest.run_id or ""), summary, manifest)
    runs = [
        r
        for r in list_runs(results)
        if r.corpus_sha256 == this.corpus_sha256 and r.goldset_sha256 == this.goldset_sha256 and r.run_id != this.run_id
    ]
    runs = [r for r in runs if _order(r) < _order(this)][-(REPORT_RUNS - 1) :] + [this]
    name = metric_name(metric, this.k)
    return [
        CandidateTrend(
            cid,
            [
                TrendPoint(r.run_id, r.started, r.candidates[cid][name], r.corpus_sha256, r.goldset_sha256)
                for r in runs
                if name in r.candidates.get(cid, {})
            ],
        )
        for cid in this.candidates
    ]


# --- two runs ------------------------------------------------------------------------------------------------


def metric_label(name_a: str, name_b: str) -> str:
    return name_a if name_a == name_b else f"{name_a} vs {name_b}"


def metric_deltas(quality_a: dict, quality_b: dict, k_a: int, k_b: int) -> dict[str, dict[str, float]]:
    """``{metric: {"a", "b", "delta"}}`` (delta = b − a) for every metric both qualities have.

    When k differs (only under --force) a metric is paired with itself at the other cutoff."""
    deltas = {}
    for name, a in quality_a.items():
        other = same_metric(name, k_a, k_b)
        b = quality_b.get(other)
        if _is_number(a) and _is_number(b):
            deltas[metric_label(name, other)] = {"a": a, "b": b, "delta": b - a}
    return deltas


def compare_runs(a: Path, b: Path, force: bool = False) -> dict:
    """How every candidate's metrics changed from run ``a`` to run ``b``.

    Refuses runs whose corpus, goldset, k or unit differ unless ``force``; then ``forced`` lists why the
    numbers may not be comparable.
    """
    run_a, run_b = read_run(a), read_run(b)
    reasons = mismatches(run_a.fingerprint, run_b.fingerprint)
    if reasons and not force:
        raise not_comparable(f"{run_a.run_id} vs {run_b.run_id}", reasons, "compare")
    common = [cid for cid in run_a.candidates if cid in run_b.candidates]
    return {
        "a": run_a.run_id,
        "b": run_b.run_id,
        "k_a": run_a.k,
        "k_b": run_b.k,
        "forced": reasons,
        "deltas": {
            cid: metric_deltas(run_a.candidates[cid], run_b.candidates[cid], run_a.k, run_b.k) for cid in common
        },
        "only_a": [cid for cid in run_a.candidates if cid not in run_b.candidates],
        "only_b": [cid for cid in run_b.candidates if cid not in run_a.candidates],
    }
