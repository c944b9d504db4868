"""`bench answers score` and `bench answers agree`: the answer layer's figures written beside a run.

``answers_summary.json`` and ``answers_per_question.jsonl`` go into the run folder the answers were
scored against (or beside the answers file when there is no run); the reports, history and
``bench check`` read them from there (docs/answers.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from bench import files
from bench.answers.contexts import RunContexts
from bench.errors import BenchError
from bench.evaluation import answers as figures
from bench.evaluation.answers import CALIBRATED, PEOPLE, UNCALIBRATED, AnswerScore, Retrieval
from bench.inputs.answers import HUMAN, JUDGE, AnswersFile, JsonObject, load_answers
from bench.results import store
from bench.text.scripts import collapse_spaces

ANSWERS_FORMAT = 1
AGREEMENT_SUFFIX = ".agreement.json"


class Calibration(TypedDict, total=False):
    """answers_summary.json's "calibration": whether the file's labels may be trusted as they are."""

    status: str
    labels: str
    judge_model: object  # as the answers file's meta records them
    rubric_version: object
    min_claims: int
    min_kappa: float
    agreement_file: str
    claims: object  # as the agreement file records them
    kappa: object
    why: str


@dataclass(frozen=True)
class Scored:
    folder: Path  # where the two files were written
    # answers_summary.json and answers_per_question.jsonl: this module's keys around the figures of
    # bench.evaluation.answers, merged in as that module writes them (plain JSON objects)
    summary: JsonObject
    rows: list[JsonObject]


def agreement_path(judged: Path) -> Path:
    return judged.with_name(judged.name + AGREEMENT_SUFFIX)


def calibration(
    answers: AnswersFile,
    min_claims: int = figures.MIN_CALIBRATION_CLAIMS,
    min_kappa: float = figures.MIN_CALIBRATION_KAPPA,
    agreement_file: Path | None = None,
) -> Calibration:
    """Whether the file's labels may be trusted as they are: people's labels are; a judge's only once
    `bench answers agree` found a person's sample of at least ``min_claims`` claims agreeing with this
    judge and rubric at Cohen's κ ≥ ``min_kappa``: ``agreement_file``, by default the one beside the file."""
    labels = answers.labelled_by
    if labels != JUDGE:
        return Calibration(status=PEOPLE, labels=labels)
    judge = answers.meta_section("judge")
    out = Calibration(
        status=UNCALIBRATED,
        labels=JUDGE,
        judge_model=judge.get("model"),
        rubric_version=judge.get("rubric_version"),
        min_claims=min_claims,
        min_kappa=min_kappa,
    )
    path = agreement_file or agreement_path(answers.path)
    if agreement_file is not None and not path.is_file():
        raise BenchError(f"--calibration {path}: not found; give the file `bench answers agree` wrote")
    if not path.is_file():
        out["why"] = f"no human sample compared yet: run `bench answers agree HUMAN {answers.path}`"
        return out
    record = files.read_json(path, f"rerun `bench answers agree HUMAN {answers.path}`")
    out["agreement_file"] = str(path)
    out["claims"], out["kappa"] = record.get("claims"), record.get("kappa")
    same = record.get("judge_model") == out["judge_model"] and record.get("rubric_version") == out["rubric_version"]
    if not same:
        out["why"] = "the agreement was measured for another judge or rubric; run `bench answers agree` again"
    elif not figures.calibrates(int(record.get("claims") or 0), record.get("kappa"), min_claims, min_kappa):
        out["why"] = (
            f"κ = {_number(record.get('kappa'))} on {record.get('claims')} claims; needs at least "
            f"{min_claims} claims at κ ≥ {min_kappa:g}"
        )
    else:
        out["status"] = CALIBRATED
    return out


def _number(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else "undefined"


def score_file(
    file: Path | AnswersFile,
    source: RunContexts | None,
    *,
    min_claims: int = figures.MIN_CALIBRATION_CLAIMS,
    min_kappa: float = figures.MIN_CALIBRATION_KAPPA,
    agreement_file: Path | None = None,
) -> Scored:
    """Score an answers file (its path, or the file as read), against ``source`` (a run's candidate)
    when given, and write the two files."""
    answers = file if isinstance(file, AnswersFile) else load_answers(file)
    path = answers.path
    scores: list[AnswerScore] = []
    retrieval: dict[str, Retrieval] = {}
    rows: list[JsonObject] = []
    for i, answer in enumerate(answers.answers):
        where = answers.where(i)
        record = None
        if source is not None:
            record = source.record(answer, where)
            retrieval[answer.question_id] = source.retrieval(answer, where)
        score = figures.score_answer(answer, retrieval.get(answer.question_id))
        scores.append(score)
        row: JsonObject = {"question_id": answer.question_id, **score.to_dict()}
        if record is not None:
            row["question"] = record.question
            row["candidate"] = source.candidate if source else None
            row["retrieval"] = {
                **retrieval[answer.question_id].metrics,
                "evidence_in_contexts": retrieval[answer.question_id].reached,
                "first_relevant_rank": record.first_relevant_rank,
            }
        rows.append(row)
    figured = figures.summarise(scores, retrieval or None)
    k = source.k if source else None
    summary: JsonObject = {
        "bench_answers": ANSWERS_FORMAT,
        "answers_file": str(path),
        "answers_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "run_id": source.run_id if source else None,
        "candidate": source.candidate if source else None,
        "k": k,
        "n_answers": len(scores),
        "n_questions": len(source.records) if source else None,
        "unanswered": sorted(set(source.records) - {s.question_id for s in scores}) if source else [],
        "labels": answers.labelled_by,
        "judge": answers.meta.get("judge"),
        "generator": answers.meta.get("generator"),
        "calibration": calibration(answers, min_claims, min_kappa, agreement_file),
        **figured,
    }
    summary["findings"] = figures.findings(summary, k)
    folder = source.run.path if source else path.parent
    try:
        files.write_jsonl(folder / store.ANSWERS_PER_QUESTION, rows)
        files.write_json(folder / store.ANSWERS_SUMMARY, summary)
    except OSError as e:
        raise BenchError(f"{folder}: cannot write the answer figures there ({e.strerror}); make it writable") from None
    return Scored(folder, summary, rows)


# --- a person's labels against a judge's -----------------------------------------------------------------


def _norm(text: str) -> str:
    return collapse_spaces(text.casefold())


def agree(
    human_path: Path,
    judge_path: Path,
    *,
    min_claims: int = figures.MIN_CALIBRATION_CLAIMS,
    min_kappa: float = figures.MIN_CALIBRATION_KAPPA,
) -> JsonObject:
    """Compare a person's claim labels with a judge's on the same answers and claims (matched by
    question and claim text); write the result beside the judge's file, where `score` finds it."""
    human, judge = load_answers(human_path), load_answers(judge_path)
    if judge.labelled_by != JUDGE:
        raise BenchError(
            f"{judge_path}: not labelled by a judge (its meta says {judge.labelled_by!r}); give the judged file second"
        )
    if human.labelled_by != HUMAN:
        raise BenchError(
            f"{human_path}: labelled by {human.labelled_by!r}, not people; give the human-labelled file first"
        )
    by_question = judge.by_question()
    pairs: list[tuple[bool, bool]] = []
    disagreements, unmatched = [], 0
    relevance: list[tuple[bool, bool]] = []
    for answer in human.answers:
        other = by_question.get(answer.question_id)
        if other is None:
            unmatched += len(answer.claims or ())
            continue
        if answer.addresses_question is not None and other.addresses_question is not None:
            relevance.append((answer.addresses_question, other.addresses_question))
        verdicts = {_norm(c.text): c.supported for c in other.claims or ()}
        for claim in answer.claims or ():
            theirs = verdicts.get(_norm(claim.text))
            if claim.supported is None or theirs is None:
                unmatched += 1
                continue
            pairs.append((claim.supported, theirs))
            if claim.supported != theirs:
                disagreements.append(
                    {"question_id": answer.question_id, "claim": claim.text, "human": claim.supported, "judge": theirs}
                )
    if not pairs:
        raise BenchError(
            f"{human_path} and {judge_path} share no labelled claim; judge the human-labelled file "
            f"(`bench answers judge {human_path}`), which keeps its claims, then compare"
        )
    result = figures.agreement(pairs)
    meta = judge.meta_section("judge")
    # the agreement file: its figures are Agreement.to_dict()'s, merged in as written
    out: JsonObject = {
        "human_file": str(human_path),
        "judge_file": str(judge_path),
        "judge_model": meta.get("model"),
        "rubric_version": meta.get("rubric_version"),
        **result.to_dict(),
        "unmatched_claims": unmatched,
        "relevance": figures.agreement(relevance).to_dict() if relevance else None,
        "min_claims": min_claims,
        "min_kappa": min_kappa,
        "calibrates": result.calibrates(min_claims, min_kappa),
        "disagreements": disagreements,
    }
    try:
        files.write_json(agreement_path(judge_path), out)
    except OSError as e:
        where = agreement_path(judge_path)
        raise BenchError(f"{where}: cannot write it ({e.strerror}); make the folder writable") from None
    return out
