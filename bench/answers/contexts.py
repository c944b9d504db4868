"""The contexts an answer was written from, and what retrieval did for its question, read from a run.

An answer names its contexts as texts, as unit ids of the run's candidate, or not at all, when they
are that candidate's top k for the question.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from bench.core.records import QuestionRecord, RankedUnit
from bench.errors import BenchError
from bench.evaluation.answers import Retrieval
from bench.inputs.answers import Answer
from bench.registry import suggest
from bench.results import store
from bench.results.schema import StoredRun, load_run


@dataclass(frozen=True)
class RunContexts:
    """One candidate of a stored run, as the source of an answer's contexts."""

    run: StoredRun
    candidate: str
    k: int
    records: dict[str, QuestionRecord]  # by question id
    texts: dict[tuple[str, int, int], str]  # (doc, start, end) -> the unit's text

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def record(self, answer: Answer, where: str) -> QuestionRecord:
        record = self.records.get(answer.question_id)
        if record is None:
            raise BenchError(
                f"{where}: question {answer.question_id!r} is not in run {self.run_id}; answer the run's "
                f"questions (its goldset has {len(self.records)}), or score without --run"
            )
        return record

    def top(self, record: QuestionRecord) -> list[RankedUnit]:
        return record.ranking[: self.k]

    def text(self, unit: RankedUnit) -> str:
        text = self.texts.get((unit.doc_id, unit.start, unit.end))
        if text is None:
            raise BenchError(
                f"{self.run.path}: no text for unit {unit.id!r} in {store.TEXTS}; the run predates stored "
                "texts: rerun it, or give the answers' contexts as texts"
            )
        return text

    def units(self, answer: Answer, where: str) -> list[RankedUnit]:
        """The units an answer was given: those it names, else the candidate's top k."""
        record = self.record(answer, where)
        if answer.context_units is None:
            return self.top(record)
        known = {u.id: u for u in (*record.ranking, *record.expected)}
        out = []
        for uid in answer.context_units:
            if uid not in known:
                raise BenchError(
                    f"{where}: context unit {uid!r} of question {answer.question_id!r} is not among what "
                    f"{self.candidate} ranked or expected; {suggest(uid, known)}give unit ids from this run"
                )
            out.append(known[uid])
        return out

    def contexts(self, answer: Answer, where: str) -> tuple[str, ...]:
        """The texts an answer was written from."""
        if answer.contexts is not None:
            return answer.contexts
        return tuple(self.text(u) for u in self.units(answer, where))

    def retrieval(self, answer: Answer, where: str) -> Retrieval:
        """The candidate's metrics for the question, and whether a relevant unit reached the contexts
        (for contexts given as texts, whether one was in the candidate's top k)."""
        record = self.record(answer, where)
        given = self.top(record) if answer.contexts is not None else self.units(answer, where)
        return Retrieval(dict(record.metrics), any(u.grade > 0 for u in given))


def open_run(ref: str | Path, results: Path, candidate: str | None) -> RunContexts:
    """A run's candidate as a source of contexts; the run's best candidate when none is named."""
    run = load_run(store.find_run(ref, results))
    ids = [c.id for c in sorted(run.summary.candidates, key=lambda c: math.inf if c.rank is None else c.rank)]
    if not ids:
        raise BenchError(f"{run.path}: the run has no candidates; rerun `bench run`")
    chosen = candidate or ids[0]
    if chosen not in ids:
        raise BenchError(
            f"--candidate {chosen!r}: not in run {run.run_id}; {suggest(chosen, ids)}choose one of its candidates"
        )
    texts = {(t.doc_id, t.start, t.end): t.text for t in run.texts}
    records = {r.question_id: r for r in run.records_of(chosen)}
    return RunContexts(run, chosen, int(run.summary.k), records, texts)
