"""Everything a run hands to people, from the stored results alone: rank_matrix.csv, statistics.json,
plots/*.png, report.pdf and inspector.html. ``bench run`` writes them at the end; ``bench report`` again."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from bench import files
from bench.evaluation import significance
from bench.evaluation.findings import diagnose, findings_lines
from bench.report import plots
from bench.report.inspector import write_inspector
from bench.report.jobs import Jobs
from bench.report.pdf import write_pdf
from bench.results import store
from bench.results.history import history_for_report

RANK_MATRIX, PLOTS, PDF, INSPECTOR = "rank_matrix.csv", "plots", "report.pdf", "inspector.html"
STATISTICS = "statistics.json"  # intervals, every pair on every headline metric, the head-to-head


@dataclass
class Written:
    files: list[Path]
    pdf_pages: int


def write_reports(run: Path, summary: dict | None = None, records: list[dict] | None = None) -> Written:
    """Write (or rewrite) the run's reports; each file atomically, so a failure leaves old ones whole."""
    summary = summary if summary is not None else store.load_json(run / store.SUMMARY)
    records = records if records is not None else store.load_jsonl(run / store.PER_QUESTION)
    manifest = store.load_json(run / store.MANIFEST)
    texts = store.load_jsonl(run / store.TEXTS) if (run / store.TEXTS).is_file() else []
    written = []

    matrix = significance.rank_matrix(summary, records)
    headline = _headline(summary)
    mrr = f"mrr@{summary['k']}"
    trends = history_for_report(run.parent, summary, manifest, mrr)
    jobs = {f"plot:{name}": partial(plots.drawn, name, summary, records, matrix) for name in plots.names(matrix)}
    if any(len(t.points) >= 2 for t in trends):
        jobs["plot:history"] = partial(plots.drawn_history, summary, trends, mrr)
    jobs |= {f"pairs:{m}": partial(significance.all_pairs, summary, records, metric=m) for m in headline}
    jobs["inspector"] = partial(write_inspector, run / INSPECTOR, summary, records, texts, manifest)
    running = Jobs(jobs)  # drawn and tested on the other cores while this process does the rest

    significance.write_rank_matrix_csv(run / RANK_MATRIX, *matrix)
    written.append(run / RANK_MATRIX)
    stats = {
        "cis": significance.confidence_intervals(summary, records),
        "head_to_head": _best_two(summary, records),
        "per_tag": significance.per_tag(summary, records),
    }
    diagnosis = findings_lines(diagnose(summary, records))

    done = running.results()
    written.append(run / INSPECTOR)
    stats["pairs"] = {m: done[f"pairs:{m}"] for m in headline}
    files.write_json(
        run / STATISTICS,
        {"seed": 0, "permutations": significance.PERMUTATIONS, "bootstrap_resamples": significance.RESAMPLES, **stats},
    )
    written.append(run / STATISTICS)
    stats["diagnosis"] = diagnosis
    rendered = {name.removeprefix("plot:"): value for name, value in done.items() if name.startswith("plot:")}
    written += [plots.save(run / PLOTS, name, png) for name, (_, png) in rendered.items()]
    pages = write_pdf(run / PDF, summary, manifest, rendered, stats)
    written.append(run / PDF)
    return Written(written, pages)


def _headline(summary: dict) -> list[str]:
    present = summary["candidates"][0]["quality"] if summary["candidates"] else {}
    return [m for m in (f"{name}@{summary['k']}" for name in significance.HEADLINE) if m in present]


def _best_two(summary: dict, records: list[dict]) -> dict | None:
    ids = [c["id"] for c in summary["candidates"]]
    return significance.head_to_head(summary, records, ids[0], ids[1]) if len(ids) >= 2 else None
