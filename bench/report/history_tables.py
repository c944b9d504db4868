"""Terminal tables for runs over time: ``bench history``, ``bench compare RUN RUN_B`` and ``bench check``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rich.console import Group
from rich.markup import escape
from rich.text import Text

from bench.core.measures import HEADLINE, headline, metric_key
from bench.formatting import MISSING, number, plural
from bench.report.fitted import FittedTable
from bench.results.gate import CheckResult
from bench.results.history import (
    RunInfo,
    TrendPoint,
    fingerprint_changed,
    metric_label,
    short,
)

CHANGED = "bold yellow"


def _date(moment: datetime | str) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if isinstance(moment, datetime) else moment


def _delta(value: float | None, fmt: str = "{:+.3f}") -> str:
    """Green when up, red when down (every metric here is higher-is-better), plain when unchanged."""
    if value is None:
        return MISSING
    if abs(value) < 5e-13:  # float noise of equal values: neither up nor down
        return fmt.format(0.0)
    text = fmt.format(value)
    return f"[green]{text}[/]" if value > 0 else f"[red]{text}[/]"


# --- bench history -------------------------------------------------------------------------------------------


def runs_table(runs: list[RunInfo], results: Path) -> Group:
    """The runs (oldest first) with their fingerprints, then one table per run: its candidates'
    headline metrics at the run's k."""
    overview = FittedTable(
        title=f"{plural(len(runs), 'run')} under {escape(str(results))}, oldest first (a run id is its start in "
        "UTC and its config hash); corpus and goldset: first 12 hex of their sha256, yellow where changed "
        "since the previous run",
        show_edge=False,
    )
    overview.add_column("run", key=True)  # ids and fingerprints are what people copy: they never wrap
    for col in ("started (UTC)", "corpus", "goldset", "k", "lock", "candidates"):
        overview.add_column(col, justify="left" if col in ("started (UTC)", "corpus", "goldset", "lock") else "right")
    tables: list = [overview]
    previous = None
    for run in runs:
        overview.add_row(
            escape(run.run_id),
            _date(run.started),
            _fingerprint_cell(run.corpus_sha256, None if previous is None else previous.corpus_sha256),
            _fingerprint_cell(run.goldset_sha256, None if previous is None else previous.goldset_sha256),
            str(run.k),
            "yes" if run.locked else "no",
            str(len(run.candidates)),
        )
        if run.candidates:
            tables += [Text(""), _candidates_table(run)]
        previous = run
    return Group(*tables)


def _candidates_table(run: RunInfo) -> FittedTable:
    mrr = metric_key("mrr", run.k)
    table = FittedTable(
        title=f"{escape(run.run_id)}: {plural(len(run.candidates), 'candidate')}, metrics at k = {run.k}"
        + ("; bold: the best mrr" if len(run.candidates) > 1 else ""),
        show_edge=False,
    )
    table.add_column("candidate", key=True)
    for name in HEADLINE:
        table.add_column(name.replace("_", " "))
    answered = list(run.answers)  # the answer layer: its own columns, beside retrieval's, never summed
    if answered:
        table.caption = f"answers scored for {escape(str(run.answers_candidate))}: {escape(run.answers_status)}"
    for name in answered:
        table.add_column(f"answers: {name.replace('_', ' ')}")
    best = max((q.get(mrr, float("-inf")) for q in run.candidates.values()), default=None)
    for cid in run.candidates:
        metrics = run.headline(cid)
        cells = [number(v, "{:.3f}") for v in metrics.values()]
        if metrics[mrr] == best and len(run.candidates) > 1:
            cells[0] = f"[bold]{cells[0]}[/]"
        cells += [number(run.answers[name], "{:.3f}") if cid == run.answers_candidate else "" for name in answered]
        table.add_row(escape(cid), *cells)
    return table


def _fingerprint_cell(sha: str, previous: str | None) -> str:
    text = escape(short(sha))
    return f"[{CHANGED}]{text}[/]" if previous is not None and previous != sha else text


def trend_table(points: list[TrendPoint], candidate: str, metric: str, ks: dict[str, int] | None = None) -> FittedTable:
    """One candidate's metric run by run, with the change from the previous run and what made runs
    incomparable (a new corpus or goldset fingerprint, another k)."""
    ks = ks or {}
    table = FittedTable(
        title=f"{escape(metric)} of {escape(candidate)} over {plural(len(points), 'run')}, oldest first"
    )
    table.add_column("run", key=True)
    for col in (metric, "Δ vs previous", "started (UTC)", "not comparable with previous"):
        table.add_column(escape(col), justify="right" if col in (metric, "Δ vs previous") else "left")
    marked = False
    for i, point in enumerate(points):
        before = points[i - 1] if i else None
        changes = _changes(before, point, ks)
        marked = marked or bool(changes)
        delta = None if before is None else point.value - before.value
        table.add_row(
            escape(point.run_id),
            f"{point.value:.4f}",
            f"[dim]{_delta(delta)}[/]" if changes else _delta(delta),
            _date(point.started),
            f"[{CHANGED}]{', '.join(changes)}[/]" if changes else "",
        )
    if marked:
        table.caption = "a marked row's value is not comparable with the rows before it (other data or cutoff)"
    return table


def _changes(before: TrendPoint | None, after: TrendPoint, ks: dict[str, int]) -> list[str]:
    if before is None:
        return []
    changes = [f"{what} changed" for what in fingerprint_changed(before, after)]
    k0, k1 = ks.get(before.run_id), ks.get(after.run_id)
    if k0 != k1:
        changes.append(f"k {k0} → {k1}")
    return changes


# --- bench compare RUN RUN_B ---------------------------------------------------------------------------------


def compare_view(result: dict) -> Group:
    """The forced warning first (if any), then ``a → b (+delta)`` per candidate and headline metric."""
    parts: list = []
    if result["forced"]:
        parts.append(
            Text(
                f"forced: these runs are not comparable ({'; '.join(result['forced'])}); "
                "read the differences with care",
                style=CHANGED,
            )
        )
    k_a, k_b = result["k_a"], result["k_b"]
    labels = [metric_label(str(a), str(a.at(k_b))) for a in headline(k_a)]
    title = (
        f"A {escape(result['a'])} → B {escape(result['b'])}: "
        f"{plural(len(result['deltas']), 'candidate')} in both runs (cells: A → B (B − A); green up, red down)"
    )
    table = FittedTable(title=title)
    table.add_column("candidate", key=True)
    cells = {cid: [_change_cell(deltas.get(label)) for label in labels] for cid, deltas in result["deltas"].items()}
    for i, label in enumerate(labels):
        # "A → B" stays on one line, the change may go under it
        widest = max((len(row[i][0]) for row in cells.values()), default=0)
        table.add_column(escape(label), min_width=widest or None)
    for cid, row in cells.items():
        table.add_row(escape(cid), *(f"{values} {change}".strip() for values, change in row))
    parts.append(table)
    for side, ids in (("A", result["only_a"]), ("B", result["only_b"])):
        if ids:
            parts.append(Text(f"only in {side} ({result[side.lower()]}): {', '.join(ids)}"))
    return Group(*parts)


def _change_cell(entry: dict | None) -> tuple[str, str]:
    """``0.500 → 0.550`` and ``(+0.050)``: the values, and the change in colour."""
    if entry is None:
        return MISSING, ""
    return f"{entry['a']:.3f} → {entry['b']:.3f}", f"({_delta(entry['delta'])})"


# --- bench check ---------------------------------------------------------------------------------------------


def check_table(result: CheckResult) -> FittedTable:
    """The failures of a regression check: drops beyond --max-drop and candidates missing from the run."""
    table = FittedTable(title=f"{escape(result.run_id)} vs baseline {escape(result.baseline_run_id)}")
    table.add_column("candidate", key=True)
    table.add_column("metric", key=True)
    for col in ("baseline", "current", "drop"):
        table.add_column(col)
    for r in result.regressions:
        current = "[red]missing[/]" if r.current is None else f"{r.current:.4f}"
        drop = MISSING if r.drop is None else f"[red]{r.drop:.4f}[/]"
        table.add_row(escape(r.candidate), escape(r.metric), f"{r.baseline:.4f}", current, drop)
    for cid in result.missing:
        table.add_row(escape(cid), "(every metric)", "", "[red]missing[/]", MISSING)
    return table


def check_failure_line(result: CheckResult) -> str:
    """The verdict under the table, for a CI log read from the bottom."""
    drops = [r for r in result.regressions if r.current is not None]
    parts = []
    if drops:
        parts.append(
            f"{plural(len(drops), 'metric')} of {plural(len({r.candidate for r in drops}), 'candidate')} "
            f"dropped by more than {result.max_drop:g}"
        )
    if len(drops) < len(result.regressions):
        parts.append(f"{plural(len(result.regressions) - len(drops), 'metric')} missing from the run")
    if result.missing:
        parts.append(f"{plural(len(result.missing), 'candidate')} of the baseline missing from the run")
    return f"FAIL: {'; '.join(parts)} ({plural(result.metrics_checked, 'metric')} checked)"
