"""Terminal tables for runs over time: ``bench history``, ``bench compare RUN RUN_B`` and ``bench check``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from bench.evaluation.metrics import HEADLINE, headline, metric_key
from bench.formatting import MISSING, number
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


def runs_table(runs: list[RunInfo], results: Path) -> Table:
    """One section per run (oldest first), one row per candidate with its headline metrics at the run's k."""
    table = Table(
        title=f"{len(runs)} runs under {escape(str(results))}, oldest first; metrics at each run's k, "
        "bold: the run's best mrr; corpus and goldset: first 12 hex of their sha256, yellow where "
        "changed since the previous run",
        title_justify="left",
        show_edge=False,
    )
    for col in ("started (UTC)", "run", "config", "corpus", "goldset", "k", "lock", "candidate"):
        # ids and fingerprints are what people copy: they never wrap
        table.add_column(col, justify="right" if col == "k" else "left", no_wrap=col != "started (UTC)")
    for name in HEADLINE:
        table.add_column(name.replace("_", " "), justify="right", no_wrap=True)
    previous = None
    for run in runs:
        if previous is not None:
            table.add_section()
        run_cells = [
            _date(run.started),
            escape(run.run_id),
            escape(run.config_hash),
            _fingerprint_cell(run.corpus_sha256, None if previous is None else previous.corpus_sha256),
            _fingerprint_cell(run.goldset_sha256, None if previous is None else previous.goldset_sha256),
            str(run.k),
            "yes" if run.locked else "no",
        ]
        if not run.candidates:
            table.add_row(*run_cells, "(no candidates)")
        mrr = metric_key("mrr", run.k)
        best = max((q.get(mrr, float("-inf")) for q in run.candidates.values()), default=None)
        for i, cid in enumerate(run.candidates):
            metrics = run.headline(cid)
            cells = [number(v, "{:.3f}") for v in metrics.values()]
            if metrics[mrr] == best and len(run.candidates) > 1:
                cells[0] = f"[bold]{cells[0]}[/]"
            table.add_row(*(run_cells if i == 0 else [""] * len(run_cells)), escape(cid), *cells)
        previous = run
    return table


def _fingerprint_cell(sha: str, previous: str | None) -> str:
    text = escape(short(sha))
    return f"[{CHANGED}]{text}[/]" if previous is not None and previous != sha else text


def trend_table(points: list[TrendPoint], candidate: str, metric: str, ks: dict[str, int] | None = None) -> Table:
    """One candidate's metric run by run, with the change from the previous run and what made runs
    incomparable (a new corpus or goldset fingerprint, another k)."""
    ks = ks or {}
    table = Table(
        title=f"{escape(metric)} of {escape(candidate)} over {len(points)} runs, oldest first", title_justify="left"
    )
    for col in ("started (UTC)", "run", metric, "Δ vs previous", "not comparable with previous"):
        table.add_column(col, justify="right" if col in (metric, "Δ vs previous") else "left")
    marked = False
    for i, point in enumerate(points):
        before = points[i - 1] if i else None
        changes = _changes(before, point, ks)
        marked = marked or bool(changes)
        delta = None if before is None else point.value - before.value
        table.add_row(
            _date(point.started),
            escape(point.run_id),
            f"{point.value:.4f}",
            f"[dim]{_delta(delta)}[/]" if changes else _delta(delta),
            f"[{CHANGED}]{', '.join(changes)}[/]" if changes else "",
        )
    if marked:
        table.caption = "a marked row's value is not comparable with the rows before it (other data or cutoff)"
        table.caption_justify = "left"
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
        f"A {escape(result['a'])} → B {escape(result['b'])}: {len(result['deltas'])} candidates in both runs "
        "(cells: A → B (B − A); green up, red down)"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("candidate")
    for label in labels:
        table.add_column(label, justify="right")
    for cid, deltas in result["deltas"].items():
        table.add_row(escape(cid), *(_change_cell(deltas.get(label)) for label in labels))
    parts.append(table)
    for side, ids in (("A", result["only_a"]), ("B", result["only_b"])):
        if ids:
            parts.append(Text(f"only in {side} ({result[side.lower()]}): {', '.join(ids)}"))
    return Group(*parts)


def _change_cell(entry: dict | None) -> str:
    if entry is None:
        return MISSING
    return f"{entry['a']:.3f} → {entry['b']:.3f} ({_delta(entry['delta'])})"


# --- bench check ---------------------------------------------------------------------------------------------


def check_table(result: CheckResult) -> Table:
    """The failures of a regression check: drops beyond --max-drop and candidates missing from the run."""
    table = Table(title=f"{escape(result.run_id)} vs baseline {escape(result.baseline_run_id)}", title_justify="left")
    for col in ("candidate", "metric", "baseline", "current", "drop"):
        table.add_column(col, justify="left" if col in ("candidate", "metric") else "right")
    for r in result.regressions:
        current = "[red]missing[/]" if r.current is None else f"{r.current:.4f}"
        drop = MISSING if r.drop is None else f"[red]{r.drop:.4f}[/]"
        table.add_row(escape(r.candidate), escape(r.metric), f"{r.baseline:.4f}", current, drop)
    for cid in result.missing:
        table.add_row(escape(cid), "(every metric)", "", "[red]missing from the run[/]", MISSING)
    return table


def check_failure_line(result: CheckResult) -> str:
    """The verdict under the table, for a CI log read from the bottom."""
    drops = [r for r in result.regressions if r.current is not None]
    parts = []
    if drops:
        parts.append(
            f"{len(drops)} metric(s) of {len({r.candidate for r in drops})} candidate(s) dropped by more "
            f"than {result.max_drop:g}"
        )
    if len(drops) < len(result.regressions):
        parts.append(f"{len(result.regressions) - len(drops)} metric(s) missing from the run")
    if result.missing:
        parts.append(f"{len(result.missing)} candidate(s) of the baseline missing from the run")
    return f"FAIL: {'; '.join(parts)} ({result.metrics_checked} metrics checked)"
