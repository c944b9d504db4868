"""``--from-run``: what a finished run ranked high for a question without judging it relevant.

Shown beside the pooled passages, these are where a goldset's missing evidence hides: a passage the
best candidate ranks first but the goldset does not count is either a true distractor or an answer
the goldset forgot. Where a relevance judge graded the run (`bench judge`), the holes it found
relevant come first, labelled with its grade: a queue for people to confirm into the goldset (or
leave, which records them as judged not relevant).
"""

from __future__ import annotations

import math
from pathlib import Path

from bench.core.records import UnitLabel
from bench.drafting.draft import Draft, Found
from bench.drafting.review.store import Distractor
from bench.evaluation.judged import RELEVANT_FROM
from bench.results.schema import StoredRun, load_run
from bench.text.scripts import collapse_spaces

TOP = 5


def run_distractors(run_folder: Path, draft: Draft, top: int = TOP) -> tuple[str, dict[str, list[Distractor]]]:
    """The run's id and, per draft question it asked (same id, else same text), the best candidate's
    top ``top`` ranked units that were not relevant, as extra passages."""
    run = load_run(run_folder)
    return run.run_id, distractors(run, draft, top)


def distractors(run: StoredRun, draft: Draft, top: int = TOP) -> dict[str, list[Distractor]]:
    candidates = sorted(run.summary.candidates, key=lambda c: math.inf if c.rank is None else c.rank)
    if not candidates:
        return {}
    best = candidates[0].id
    by_id = {q.id: q.id for q in draft.questions}
    by_text = {_norm(q.question): q.id for q in draft.questions}
    label = f"distractor in {run.run_id}"
    queue: dict[str, list[UnitLabel]] = {}
    for graded in sorted(run.judgments, key=lambda x: -(x.grade or 0)):
        if graded.grade is not None and graded.grade >= RELEVANT_FROM:
            queue.setdefault(graded.question_id, []).append(graded)
    out: dict[str, list[Distractor]] = {}
    for record in run.records_of(best):
        qid = by_id.get(record.question_id) or by_text.get(_norm(record.question))
        if qid is None or qid in out:
            continue
        judged = [
            Distractor(x.doc_id, x.start, x.end, f"judge grade {x.grade} in {run.run_id}", ())
            for x in queue.get(record.question_id, [])[:top]
        ]
        shown = {(x.doc, x.start, x.end) for x in judged}
        extra: list[Distractor] = []
        for rank, unit in enumerate(record.ranking, start=1):
            if unit.grade > 0 or (unit.doc_id, unit.start, unit.end) in shown:
                continue
            extra.append(Distractor(unit.doc_id, unit.start, unit.end, label, (Found(best, rank, unit.score),)))
            if len(extra) == top:
                break
        out[qid] = judged + extra
    return out


def _norm(text: str) -> str:
    return collapse_spaces(text.casefold())
