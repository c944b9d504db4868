"""Export a stored run for other tools: TREC run and qrels files, ranx JSON, or one flat
per-question table (CSV or Parquet). See docs/export.md.

Loading the ranx export (``out`` = ``RUN/export/ranx``; ``NAME`` from ``candidates.tsv``)::

    import json
    from ranx import Qrels, Run, evaluate

    qrels = Qrels.from_dict(json.loads((out / "qrels" / f"{NAME}.json").read_text()))
    run = Run.from_dict(json.loads((out / "runs" / f"{NAME}.json").read_text()))
    evaluate(qrels, run, ["mrr@5", "recall@5", "ndcg_burges@5"], make_comparable=True)

(``ndcg_burges@k`` matches bench's default exponential gain; ``ndcg@k`` its ``ndcg_gain = "linear"``.)

``make_comparable=True`` is needed when the two hold different questions: a question with no relevant
unit under that candidate's chunking is absent from the qrels, and ranx (like trec_eval) then drops
it, whereas bench counts it as zeros; one whose retrieval returned nothing is absent from the run.

Relevance judgments are written per candidate because unit ids depend on the chunker.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from bench import files
from bench.core.records import QuestionRecord
from bench.core.summary import CandidateResult
from bench.errors import BenchError
from bench.registry import Registry, suggest
from bench.results import schema, store

# Format name → writer of (candidates in rank order, records per candidate, out folder) → paths written;
# the writers register at the end of this module.
_Writer = Callable[[list[CandidateResult], dict[str, list[QuestionRecord]], Path], list[Path]]
FORMATS: Registry[_Writer] = Registry("export format")
CANDIDATES_TSV = "candidates.tsv"
TABLE = "per_question"
ID_COLUMNS = ("candidate", "model", "chunker", "index", "question_id", "tags", "first_relevant_rank")

# Characters a candidate's file name keeps as they are; everything else but "/" is percent-encoded.
_NAME_KEEP = re.compile(r"[A-Za-z0-9._=@,+-]")


def export_run(run: Path, out: Path, fmt: str) -> list[Path]:
    """Write the run folder ``run`` in format ``fmt`` (one of FORMATS) into the folder ``out``.

    Returns the paths written. Every file is written atomically; nothing else in ``out`` is touched.
    """
    if fmt not in FORMATS:
        raise BenchError(f"export format {fmt!r} is unknown; {suggest(fmt, FORMATS)}choose one of {', '.join(FORMATS)}")
    run = store.find_run(run)
    stored = schema.load_run(run)
    candidates = sorted(stored.summary.candidates, key=lambda c: (c.rank or math.inf, c.id))
    by_candidate = _group(stored.records, candidates, run)
    try:
        out.mkdir(parents=True, exist_ok=True)
        return FORMATS.get(fmt)(candidates, by_candidate, out)
    except OSError as e:
        raise BenchError(f"{out}: cannot write the export there ({e.strerror}); pass --out DIR") from None


def _group(
    records: list[QuestionRecord], candidates: list[CandidateResult], run: Path
) -> dict[str, list[QuestionRecord]]:
    """Records per candidate id, in file order."""
    groups: dict[str, list[QuestionRecord]] = {c.id: [] for c in candidates}
    for rec in records:
        if rec.candidate not in groups:
            raise BenchError(
                f"{run / store.PER_QUESTION}: candidate {rec.candidate!r} is not in "
                f"{store.SUMMARY}; the run folder is damaged, run `bench run` again"
            )
        groups[rec.candidate].append(rec)
    return groups


# --- names, ids and scores ---------------------------------------------------------------------


def _percent(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8"))


def safe_name(candidate_id: str) -> str:
    """A candidate id as a file name and TREC run tag: "/" becomes "__", ASCII letters, digits and
    ``. _ - = @ , +`` stay, anything else (spaces, "%", "~", non-ASCII) becomes %XX of its UTF-8 bytes."""
    return "".join("__" if ch == "/" else ch if _NAME_KEEP.fullmatch(ch) else _percent(ch) for ch in candidate_id)


def safe_names(candidate_ids: Sequence[str]) -> dict[str, str]:
    """Candidate id -> safe name, unique even when two ids map alike (``a_/b`` and ``a/_b``): later
    ones get ``~2``, ``~3`` …, which no safe name contains ("~" is always encoded)."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for cid in candidate_ids:
        base = name = safe_name(cid)
        n = 1
        while name in taken:
            n += 1
            name = f"{base}~{n}"
        taken.add(name)
        names[cid] = name
    return names


def export_id(unit_or_question_id: str) -> str:
    """An id without whitespace, as TREC's space-separated columns need: "%" and every whitespace
    character become %XX of their UTF-8 bytes (encoding "%" too keeps distinct ids distinct)."""
    return "".join(_percent(ch) if ch == "%" or ch.isspace() else ch for ch in unit_or_question_id)


def export_scores(scores: Sequence[float | None]) -> list[float]:
    """Scores, best first, made strictly decreasing so that any tool sorting by score reads our order.

    bench breaks ties by unit id, while trec_eval breaks them by docno descending and ranx
    arbitrarily; a null score (NaN at search time) has no place at all. trec_eval also keeps scores
    as 32-bit floats, so two scores distinct in 64 bits can tie there. So a score that is not below
    the one written before it once both are rounded to float32 (a tie, a null, a non-finite value)
    becomes the next float32 below that one; every other score is kept exactly, at full precision.
    A leading null becomes 0.0.
    """
    out: list[float] = []
    for score in scores:
        value = score if score is not None and math.isfinite(score) else None
        if out and (value is None or np.float32(value) >= np.float32(out[-1])):
            value = float(np.nextafter(np.float32(out[-1]), np.float32(-np.inf)))
        out.append(0.0 if value is None else value)
    return out


def _run_entries(rec: QuestionRecord) -> list[tuple[str, float]]:
    """(docno, score) of one question's ranking, best first, with order-preserving scores."""
    ranking = rec.ranking
    return list(zip((export_id(e.id) for e in ranking), export_scores([e.score for e in ranking]), strict=True))


def _qrel_entries(rec: QuestionRecord) -> list[tuple[str, int]]:
    """(docno, grade) of every relevant unit of one question."""
    return [(export_id(e.id), int(e.grade)) for e in rec.expected]


def _write_candidates_tsv(names: dict[str, str], out: Path) -> Path:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(["name", "candidate"])
    writer.writerows((name, cid) for cid, name in names.items())
    path = out / CANDIDATES_TSV
    files.write_atomic(path, buffer.getvalue())
    return path


# --- trec and ranx -----------------------------------------------------------------------------


def _write_trec(
    candidates: list[CandidateResult], by_candidate: dict[str, list[QuestionRecord]], out: Path
) -> list[Path]:
    """``<name>.run`` (qid Q0 docno rank score tag) and ``<name>.qrels`` (qid 0 docno grade) per candidate."""
    names = safe_names([c.id for c in candidates])
    written = [_write_candidates_tsv(names, out)]
    for cid, name in names.items():
        run_lines, qrel_lines = [], []
        for rec in by_candidate[cid]:
            qid = export_id(rec.question_id)
            run_lines += [
                f"{qid} Q0 {docno} {rank} {score!r} {name}\n"
                for rank, (docno, score) in enumerate(_run_entries(rec), start=1)
            ]
            qrel_lines += [f"{qid} 0 {docno} {grade}\n" for docno, grade in _qrel_entries(rec)]
        for suffix, lines in ((".run", run_lines), (".qrels", qrel_lines)):
            path = out / f"{name}{suffix}"
            files.write_atomic(path, "".join(lines))
            written.append(path)
    return written


def _write_ranx(
    candidates: list[CandidateResult], by_candidate: dict[str, list[QuestionRecord]], out: Path
) -> list[Path]:
    """``qrels/<name>.json`` and ``runs/<name>.json``: ``{qid: {docno: grade or score}}`` per candidate.

    Questions without relevant units are left out of the qrels and questions with an empty ranking
    out of the run, as in the TREC files, so both exports hold the same queries."""
    names = safe_names([c.id for c in candidates])
    written = [_write_candidates_tsv(names, out)]
    for cid, name in names.items():
        records = by_candidate[cid]
        qrels = {export_id(r.question_id): dict(_qrel_entries(r)) for r in records if r.expected}
        runs = {export_id(r.question_id): dict(_run_entries(r)) for r in records if r.ranking}
        for folder, obj in (("qrels", qrels), ("runs", runs)):
            path = out / folder / f"{name}.json"
            files.write_atomic(path, json.dumps(obj, ensure_ascii=False) + "\n")  # floats keep full precision
            written.append(path)
    return written


# --- per-question table ------------------------------------------------------------------------


def per_question_table(
    candidates: list[CandidateResult], by_candidate: dict[str, list[QuestionRecord]]
) -> tuple[list[str], list[list]]:
    """Header and rows: one row per (candidate, question), candidates in rank order, questions in
    file order. Metric columns follow the summary's quality order; a missing value is None."""
    metrics = _metric_columns(candidates, by_candidate)
    rows = []
    for cand in candidates:
        for rec in by_candidate[cand.id]:
            rows.append(
                [
                    cand.id,
                    cand.model,
                    cand.chunker,
                    cand.index,
                    rec.question_id,
                    ";".join(rec.tags),
                    rec.first_relevant_rank,
                    *(rec.metrics.get(m) for m in metrics),
                ]
            )
    return [*ID_COLUMNS, *metrics], rows


def _metric_columns(candidates: list[CandidateResult], by_candidate: dict[str, list[QuestionRecord]]) -> list[str]:
    """Every per-question metric: those the summary lists first, in its order, then any others."""
    seen = dict.fromkeys(m for c in candidates for m in c.quality)
    present = dict.fromkeys(m for recs in by_candidate.values() for r in recs for m in r.metrics)
    return [m for m in seen if m in present] + [m for m in present if m not in seen]


def _write_csv(
    candidates: list[CandidateResult], by_candidate: dict[str, list[QuestionRecord]], out: Path
) -> list[Path]:
    """``per_question.csv``: RFC 4180 quoting, "\\n" line ends, blank for a miss or a missing value."""
    header, rows = per_question_table(candidates, by_candidate)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)  # None is written blank, floats as repr (full precision)
    path = out / f"{TABLE}.csv"
    files.write_atomic(path, buffer.getvalue())
    return [path]


def _write_parquet(
    candidates: list[CandidateResult], by_candidate: dict[str, list[QuestionRecord]], out: Path
) -> list[Path]:
    """``per_question.parquet``: the CSV's table with typed columns (Int64 rank with nulls, float64 metrics)."""
    try:  # optional and slow to import: only this format needs them
        import fastparquet
        import pandas as pd
    except ImportError as e:
        raise BenchError(
            f"parquet export needs pandas and fastparquet ({e.name} is missing); "
            f"pip install pandas fastparquet, or use --format csv"
        ) from None
    header, rows = per_question_table(candidates, by_candidate)
    frame = pd.DataFrame(rows, columns=header)
    frame["first_relevant_rank"] = frame["first_relevant_rank"].astype("Int64")
    for column in header[len(ID_COLUMNS) :]:
        frame[column] = frame[column].astype("float64")
    path = out / f"{TABLE}.parquet"
    # fastparquet itself, not pandas' to_parquet: pandas 3 deprecates that engine with a warning.
    # It writes only to a path, so write into a scratch folder, then atomically into place.
    with tempfile.TemporaryDirectory(dir=out, prefix=".parquet.") as scratch:
        tmp = Path(scratch) / path.name
        fastparquet.write(str(tmp), frame, write_index=False)
        files.write_atomic(path, tmp.read_bytes())
    return [path]


FORMATS.register("trec", _write_trec)
FORMATS.register("ranx", _write_ranx)
FORMATS.register("csv", _write_csv)
FORMATS.register("parquet", _write_parquet)
