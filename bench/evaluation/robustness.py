"""How much a candidate loses when questions are typed as people type them (bench.text.perturb): per
perturbation, the headline metric on the perturbed questions against the originals, with a paired
test over the same questions.

BM25 matches words as written, so a typo or a missing accent can lose a question outright; a dense
model reads pieces of words and usually still finds it. The drop is measured, not assumed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from bench.core.measures import metric_key
from bench.core.records import QuestionRecord
from bench.core.sections import JsonObject
from bench.core.summary import CandidateResult
from bench.evaluation.significance import paired_tests

ROBUSTNESS = "robustness"  # a candidate's key in summary.json (its ``extra``)
PERTURBED = "perturbed"  # a question record's key: its metrics on each perturbed form


def with_perturbed(
    records: Sequence[QuestionRecord], perturbed: Mapping[str, Sequence[QuestionRecord]], k: int
) -> list[QuestionRecord]:
    """Each record with its perturbed forms' mrr@k, recall@k and first relevant rank under ``perturbed``."""
    keys = (metric_key("mrr", k), metric_key("recall", k))
    out = []
    for i, rec in enumerate(records):
        forms = {
            kind: {
                **{key: rows[i].metrics.get(key) for key in keys},
                "first_relevant_rank": rows[i].first_relevant_rank,
            }
            for kind, rows in perturbed.items()
        }
        out.append(dataclasses.replace(rec, extra={**rec.extra, PERTURBED: forms}))
    return out


def robustness(
    records: Sequence[QuestionRecord], perturbed: Mapping[str, Sequence[QuestionRecord]], k: int
) -> JsonObject:
    """Per perturbation: the mean mrr@k on the originals and on the perturbed questions, the drop, the
    paired tests' p-values, and how many questions the perturbation changed."""
    metric = metric_key("mrr", k)
    original = np.array([r.metrics.get(metric, np.nan) for r in records], dtype=float)
    out: JsonObject = {"metric": metric}
    for kind, rows in perturbed.items():
        typed = np.array([r.metrics.get(metric, np.nan) for r in rows], dtype=float)
        tests = paired_tests(original, typed)
        out[kind] = {
            "original": float(np.nanmean(original)) if len(original) else None,
            "perturbed": float(np.nanmean(typed)) if len(typed) else None,
            "drop": float(tests["mean_diff"]) if len(typed) else None,
            "wilcoxon_p": tests["wilcoxon_p"],
            "t_p": tests["t_p"],
            "n": int(tests["n"]),
            "changed": sum(a.question != b.question for a, b in zip(records, rows)),
        }
    return out


def shown(candidates: Sequence[CandidateResult]) -> list[CandidateResult]:
    """The candidates the reports compare: the best of each chunker and of each single model (BM25's and
    a dense model's drops differ most), in rank order; only those the perturbed questions were asked of."""
    measured = [c for c in candidates if c.extra.get(ROBUSTNESS)]
    ranked = sorted(measured, key=lambda c: (c.rank if c.rank is not None else 10**9, c.id))
    best: dict[tuple[str, str], CandidateResult] = {}
    for c in ranked:
        best.setdefault(("chunker", c.chunker), c)
        if c.pipeline.get("kind") in (None, "dense", "lexical") and not c.pipeline.reranker:
            best.setdefault(("model", c.model), c)
    chosen = {c.id for c in best.values()}
    return [c for c in ranked if c.id in chosen]
