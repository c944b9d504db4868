"""`bench judge RUN` and the judging of a run with questions only: the pooled units graded, the
labels written to ``judgments.jsonl`` and what they change to summary.json's ``judge``.

A run with a goldset keeps its figures: the judge's are shown beside them (bench.evaluation.judged),
its calibration measured on the units a person judged. A run with questions only has nothing
else: the judge's grades are its relevance, every page says so, and candidates rank by nDCG@k then
precision@k of the judge's grades.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from bench import files
from bench.core.records import QuestionRecord, Retrieved, UnitLabel
from bench.core.sections import JsonObject
from bench.core.summary import CandidateResult, RunSummary
from bench.embedders import paths
from bench.errors import BenchError
from bench.evaluation import judged
from bench.judging.relevance_judge import CALIBRATION_UNITS, Judged, judge_units, load_rubric, pooled
from bench.llm.http_api import redact_url
from bench.llm.prompts import Template
from bench.llm.settings import ChatSettings
from bench.results import schema, store
from bench.results.schema import StoredRun

NO_GOLDSET = "no goldset: no person's judgments to compare the judge with; draft and review one (bench goldset draft)"


@dataclass(frozen=True)
class JudgeReport:
    run: StoredRun  # as written, with its labels and summary.json's judge
    judged: Judged  # this pass: what was asked and what it cost
    section: JsonObject  # summary.json's judge


@dataclass(frozen=True)
class Judging:
    """What a judging pass needs besides the run: the model, the rubric, the reply cache, the sample."""

    chat: ChatSettings
    cache: Path  # the cache root (paths.cache_root)
    rubric: Path | None = None
    calibration_units: int = CALIBRATION_UNITS
    console: Console | None = None

    def template(self) -> Template:
        return load_rubric(self.rubric)

    def ask(
        self, records: Sequence[Retrieved], texts: dict[tuple[str, int, int], str], unit: str, k: int,
        known: Sequence[UnitLabel], template: Template,
    ) -> tuple[list[UnitLabel], Judged]:  # fmt: skip
        """The labels of ``known`` made by this judge and rubric, with every pooled unit they lack graded."""
        self.chat.check()
        mine = [x for x in known if x.model == self.chat.model and x.rubric_sha256 == template.sha256]
        keyed = judged.by_key(mine, unit)
        asks = pooled(records, texts, k, unit, keyed, self.calibration_units)
        console = self.console or Console(stderr=True)
        done = judge_units(asks, self.chat, paths.judge_dir(self.cache), template, console)
        for label in done.labels:
            keyed[judged.unit_key(label.question_id, label, unit)] = label
        return list(keyed.values()), done

    def describe(self, template: Template, done: Judged, k: int) -> JsonObject:
        """summary.json's record of the judge: model, rubric, what was asked and what it cost."""
        chat = self.chat
        return {
            "model": chat.model,
            "base_url": redact_url(chat.base_url),
            "rubric": template.describe(),
            "k": k,
            "asked": done.asked,
            "not_asked": done.not_asked,
            "problems": done.problems,
            **done.tally.to_meta(chat.prices, chat.max_cost),
        }


def judge_run(ref: str | Path, results: Path, judging: Judging) -> JudgeReport:
    """Grade a stored run's holes (and a calibration sample) and write what the grades change."""
    run = schema.load_run(store.find_run(ref, results))
    summary = run.summary
    if (summary.judge or {}).get("mode") == judged.JUDGE_ONLY:
        raise BenchError(
            f"{run.path}: a run with questions only is judged as it runs; rerun `bench run --questions` "
            "to judge it again with another model or rubric"
        )
    template = judging.template()
    texts = {(t.doc_id, t.start, t.end): t.text for t in run.texts}
    labels, done = judging.ask(run.records, texts, summary.unit, summary.k, run.judgments, template)
    _, judged_ranked = judged.with_judge(
        summary.candidates, run.records, labels, k=summary.k, depth=summary.depth, gain=summary.ndcg_gain,
        unit=summary.unit, min_overlap=summary.min_overlap,
    )  # fmt: skip
    keyed = judged.by_key(labels, summary.unit)
    pairs = judged.calibration_pairs(run.records, keyed, summary.unit)
    section = {
        **judged.view(summary.candidates, judged_ranked, labels, summary.k),
        "holes": judged.graded_holes(summary.holes or [], keyed, summary.unit),
        "calibration": judged.calibration(pairs),
        "judge": judging.describe(template, done, summary.k),
    }
    written = dataclasses.replace(run, summary=dataclasses.replace(summary, judge=section), judgments=labels)
    schema.save_judgments(run.path, labels)
    files.write_json(run.path / store.SUMMARY, written.summary.to_dict())
    return JudgeReport(written, done, section)


def judge_only(
    candidates: Sequence[CandidateResult],
    records: Sequence[QuestionRecord],
    texts: dict[tuple[str, int, int], str],
    summary: RunSummary,
    judging: Judging,
) -> tuple[list[CandidateResult], list[QuestionRecord], list[UnitLabel], JsonObject]:
    """A run with questions only, judged: its candidates scored on the judge's grades and ranked by
    nDCG@k then precision@k, its records regraded, the labels and summary.json's judge."""
    template = judging.template()
    labels, done = judging.ask(records, texts, summary.unit, summary.k, [], template)
    # the judge's relevant units join the records as expected units and evidence, marked "by": "judge"
    regraded, ranked = judged.with_judge(
        candidates, records, labels, k=summary.k, depth=summary.depth, gain=summary.ndcg_gain, unit=summary.unit,
        min_overlap=summary.min_overlap, order=judged.JUDGE_ONLY_ORDER,
    )  # fmt: skip
    scored_records = [rec for cand in candidates for rec in regraded[cand.id]]
    section: JsonObject = {
        "mode": judged.JUDGE_ONLY,
        **judged.tallies(labels),
        "rank_by": [f"{name}@{summary.k}" for name in judged.JUDGE_ONLY_ORDER],
        "calibration": {"status": judged.UNCALIBRATED, "pairs": 0, "why": NO_GOLDSET},
        "judge": judging.describe(template, done, summary.k),
    }
    return ranked, scored_records, labels, section
