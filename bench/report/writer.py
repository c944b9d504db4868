"""Everything a run hands to people, from the stored results alone: rank_matrix.csv, statistics.json,
plots/*.png, report.pdf and inspector.html, the last two with the answer layer once `bench answers score` scored
the run's answers. ``bench run`` writes them at the end; ``bench report`` again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import cast

from bench import files
from bench.core.measures import headline, metric_key
from bench.core.records import QuestionRecord
from bench.core.sections import JsonObject
from bench.core.summary import RunSummary
from bench.evaluation import significance
from bench.evaluation.findings import diagnose
from bench.report import plots
from bench.report.answers_view import AnswerLayer
from bench.report.findings_text import findings_lines
from bench.report.inspector import write_inspector
from bench.report.jobs import Jobs
from bench.report.pdf import write_pdf
from bench.results import schema
from bench.results.history import history_for_report
from bench.results.schema import StoredRun

RANK_MATRIX, PLOTS, PDF, INSPECTOR = "rank_matrix.csv", "plots", "report.pdf", "inspector.html"
STATISTICS = "statistics.json"  # intervals, every pair on every headline metric, the head-to-head


@dataclass
class Written:
    files: list[Path]
    pdf_pages: int


def write_reports(folder: Path, run: StoredRun | None = None) -> Written:
    """Write (or rewrite) the reports of the run in ``folder``; each file atomically, so a failure
    leaves old ones whole. ``run`` is the run as stored there, read from the folder when not given."""
    run = run if run is not None else schema.load_run(folder)
    summary, records, manifest = run.summary, run.records, run.manifest
    written = []

    matrix = significance.rank_matrix(summary, records)
    compared = _headline(summary)
    mrr = metric_key("mrr", summary.k)
    trends = history_for_report(folder.parent, summary, manifest, mrr)
    answers = AnswerLayer.load(folder)  # `bench answers score` wrote it there; None when it never ran
    jobs: dict[str, Callable[[], object]] = {
        f"plot:{name}": partial(plots.drawn, name, summary, records, matrix) for name in plots.names(matrix, summary)
    }
    if any(len(t.points) >= 2 for t in trends):
        jobs["plot:history"] = partial(plots.drawn_history, summary, trends, mrr)
    jobs |= {f"pairs:{m}": partial(significance.all_pairs, summary, records, metric=m) for m in compared}
    jobs["inspector"] = partial(
        write_inspector, folder / INSPECTOR, summary, records, run.texts, manifest, answers, run.judgments
    )
    running = Jobs(jobs)  # drawn and tested on the other cores while this process does the rest

    significance.write_rank_matrix_csv(folder / RANK_MATRIX, *matrix)
    written.append(folder / RANK_MATRIX)
    stats: JsonObject = {  # statistics.json as written
        "cis": significance.confidence_intervals(summary, records),
        "head_to_head": _with_pages(_best_two(summary, records), run),
        "per_tag": significance.per_tag(summary, records),
    }
    findings = diagnose(summary, records)
    diagnosis = findings_lines(findings, summary)

    done = running.results()
    written.append(folder / INSPECTOR)
    stats["pairs"] = {m: done[f"pairs:{m}"] for m in compared}
    files.write_json(
        folder / STATISTICS,
        {"seed": 0, "permutations": significance.PERMUTATIONS, "bootstrap_resamples": significance.RESAMPLES, **stats},
    )
    written.append(folder / STATISTICS)
    stats["diagnosis"], stats["findings"] = diagnosis, findings
    if answers is not None:
        stats["answers"] = answers
    rendered = {
        name.removeprefix("plot:"): cast(tuple[str, bytes], value)
        for name, value in done.items()
        if name.startswith("plot:")
    }
    written += [plots.save(folder / PLOTS, name, png) for name, (_, png) in rendered.items()]
    pages = write_pdf(folder / PDF, summary, manifest, rendered, stats)
    written.append(folder / PDF)
    return Written(written, pages)


def _headline(summary: RunSummary) -> list[str]:
    """The headline metrics at the run's k that its candidates carry, in the one headline order."""
    present = summary.candidates[0].quality if summary.candidates else {}
    return [m for m in map(str, headline(summary.k)) if m in present]


def _with_pages(h2h: dict | None, run: StoredRun) -> dict | None:
    """The head-to-head with, for each disagreement, the pages its evidence lies on ("travel.pdf p. 4–5")
    where the corpus has paged documents (PDFs, slides)."""
    pages = schema.unit_pages(run.texts)
    if h2h is None or not pages:
        return h2h
    expected = {r.question_id: r.expected for r in run.records_of(h2h["a"])}
    for d in h2h.get("disagreements", []):
        places = dict.fromkeys(
            f"{u.doc_id} {pages[key]}"
            for u in expected.get(d["question_id"], [])
            if (key := (u.doc_id, u.start, u.end)) in pages
        )
        if places:
            d["evidence_pages"] = "; ".join(places)
    return h2h


def _best_two(summary: RunSummary, records: list[QuestionRecord]) -> dict | None:
    ids = [c.id for c in summary.candidates]
    return significance.head_to_head(summary, records, ids[0], ids[1]) if len(ids) >= 2 else None
