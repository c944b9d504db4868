"""The answer layer's figures (docs/answers.md): groundedness, answer relevance and claim recall per
question and on average, which layer failed each question, and how far a judge agrees with a person.

They are read beside the retrieval metrics of the same questions, never folded into one score: a
grounded answer can dodge the question, and a direct one can invent a detail.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bench.core.measures import ANSWER_METRICS
from bench.evaluation.significance import bootstrap_ci
from bench.inputs.answers import Answer

GROUNDEDNESS, RELEVANCE, CLAIM_RECALL = ANSWER_METRICS
# Which layer failed a question, checked in the order a question flows: an answer built without its
# evidence fails at retrieval whatever it then says.
RETRIEVAL, GENERATION, QUESTION_HANDLING, OK, UNKNOWN = "retrieval", "generation", "question handling", "ok", "unknown"
LAYERS = (RETRIEVAL, GENERATION, QUESTION_HANDLING, OK, UNKNOWN)
# A judge's labels count as calibrated once a person's sample this large agrees this well (Cohen's κ).
MIN_CALIBRATION_CLAIMS, MIN_CALIBRATION_KAPPA = 30, 0.6
# How far a file's labels may be trusted: answers_summary.json's calibration "status".
CALIBRATED, UNCALIBRATED, PEOPLE = "calibrated", "uncalibrated", "labelled by people"
# The two layers read together: below LOW the layer is the one to fix; at or above STRONG it is not.
LOW, STRONG = 0.5, 0.8


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What the retrieval layer did for one question: the candidate's metrics at k and whether any
    relevant unit reached the contexts."""

    metrics: Mapping[str, float]
    reached: bool  # a relevant unit was among the contexts given to the generator


@dataclass(frozen=True)
class AnswerScore:
    """One question's answer-layer figures. A figure is None when nothing decides it (no labelled
    claims, relevance not labelled, no reference claims)."""

    question_id: str
    claims: int  # claims with a verdict
    supported: int
    undecided: int  # claims nobody has decided yet (a judge that gave no verdict)
    groundedness: float | None
    answer_relevance: float | None
    reference_claims: int
    covered: int
    claim_recall: float | None
    no_claims: bool  # split into claims, and it makes none ("I don't know", a refusal)
    layer: str
    failing: tuple[str, ...]  # every layer that failed, in flow order
    unsupported: tuple[str, ...]  # the claims the contexts do not support

    def to_dict(self) -> dict:
        return {
            "question_id": self.question_id,
            "claims": self.claims,
            "supported": self.supported,
            "undecided": self.undecided,
            GROUNDEDNESS: self.groundedness,
            RELEVANCE: self.answer_relevance,
            "reference_claims": self.reference_claims,
            "covered": self.covered,
            CLAIM_RECALL: self.claim_recall,
            "no_claims": self.no_claims,
            "layer": self.layer,
            "failing": list(self.failing),
            "unsupported_claims": list(self.unsupported),
        }


def _share(hits: int, total: int) -> float | None:
    return hits / total if total else None


def score_answer(answer: Answer, retrieval: Retrieval | None = None) -> AnswerScore:
    """The figures of one answer; ``retrieval`` (None when no run is known) decides the retrieval layer."""
    claims = answer.claims or ()
    decided = [c for c in claims if c.supported is not None]
    supported = sum(1 for c in decided if c.supported)
    references = [c for c in answer.reference_claims or () if c.supported is not None]
    covered = sum(1 for c in references if c.supported)
    groundedness = _share(supported, len(decided))
    relevance = None if answer.addresses_question is None else float(answer.addresses_question)
    failing = []
    if retrieval is not None and not retrieval.reached:
        failing.append(RETRIEVAL)
    if groundedness is not None and groundedness < 1.0:
        failing.append(GENERATION)
    if relevance == 0.0:
        failing.append(QUESTION_HANDLING)
    if failing:
        layer = failing[0]
    elif retrieval is None or groundedness is None or relevance is None:
        layer = UNKNOWN  # a layer nobody measured may have failed
    else:
        layer = OK
    return AnswerScore(
        question_id=answer.question_id,
        claims=len(decided),
        supported=supported,
        undecided=len(claims) - len(decided),
        groundedness=groundedness,
        answer_relevance=relevance,
        reference_claims=len(references),
        covered=covered,
        claim_recall=_share(covered, len(references)),
        no_claims=answer.claims is not None and not claims,
        layer=layer,
        failing=tuple(failing),
        unsupported=tuple(c.text for c in decided if not c.supported),
    )


def mean_with_interval(values: Iterable[float | None], seed: int = 0) -> dict:
    """Mean of the values that exist, with its 95% percentile-bootstrap interval and n."""
    present = np.array([v for v in values if v is not None], dtype=float)
    if not len(present):
        return {"mean": None, "ci": None, "n": 0}
    lo, hi = bootstrap_ci(present, seed=seed)
    return {"mean": float(present.mean()), "ci": [lo, hi], "n": len(present)}


def summarise(scores: Sequence[AnswerScore], retrieval: Mapping[str, Retrieval] | None = None) -> dict:
    """Means with intervals of the answer metrics and of the retrieval metrics over the same
    questions, the count of questions each layer failed, and the answers left out of groundedness."""
    out: dict = {
        "metrics": {
            GROUNDEDNESS: mean_with_interval(s.groundedness for s in scores),
            RELEVANCE: mean_with_interval(s.answer_relevance for s in scores),
            CLAIM_RECALL: mean_with_interval(s.claim_recall for s in scores),
        },
        "claims": sum(s.claims for s in scores),
        "supported_claims": sum(s.supported for s in scores),
        "undecided_claims": sum(s.undecided for s in scores),
        "no_claim_answers": [s.question_id for s in scores if s.no_claims],
        "not_split": [s.question_id for s in scores if s.groundedness is None and not s.no_claims],
        "layers": {layer: n for layer, n in ((name, Counter(s.layer for s in scores)[name]) for name in LAYERS)},
    }
    if retrieval:
        names = list(dict.fromkeys(m for r in retrieval.values() for m in r.metrics))
        asked = [retrieval[s.question_id] for s in scores if s.question_id in retrieval]
        out["retrieval"] = {name: mean_with_interval(r.metrics.get(name) for r in asked) for name in names}
        out["retrieval"]["context_hit_rate"] = mean_with_interval(float(r.reached) for r in asked)
    return out


def findings(summary: dict, k: int | None) -> list[str]:
    """The two layers read together, in words: which to fix first, with the figures that say so."""
    metrics, layers = summary["metrics"], summary["layers"]
    ground, relevance = metrics[GROUNDEDNESS]["mean"], metrics[RELEVANCE]["mean"]
    reached = (summary.get("retrieval") or {}).get("context_hit_rate", {}).get("mean")
    n = sum(layers.values())
    out = []
    if reached is not None and reached < LOW:
        out.append(
            f"Retrieval first: the evidence reached the prompt for only {reached:.0%} of the questions"
            f"{f' (top {k})' if k else ''}, so no generator could ground those answers; fix retrieval "
            "before judging the generator."
        )
    elif reached is not None and reached >= STRONG and ground is not None and ground < STRONG:
        out.append(
            f"The generation contract: the evidence reached the prompt for {reached:.0%} of the questions, "
            f"yet only {ground:.0%} of the answers' claims are supported by it; the answers add or distort "
            "claims (tell the generator to answer only from the context, and to say when it cannot)."
        )
    if ground is not None and ground >= STRONG and relevance is not None and relevance < STRONG:
        out.append(
            f"Question handling: the answers are grounded ({ground:.0%} of claims supported) but only "
            f"{relevance:.0%} address the question asked; they answer something else (check how the "
            "question reaches the generator, and what it is told to do with it)."
        )
    failed = {layer: layers[layer] for layer in (RETRIEVAL, GENERATION, QUESTION_HANDLING) if layers.get(layer)}
    if failed and n:
        listed = ", ".join(f"{layer} {count}" for layer, count in failed.items())
        out.append(f"Of {n} questions, the first layer to fail: {listed}; {layers.get(OK, 0)} passed every layer.")
    if summary["no_claim_answers"]:
        count = len(summary["no_claim_answers"])
        out.append(
            f"{count} answer{'s' if count != 1 else ''} made no factual claim (a refusal or "
            '"I don\'t know"); counted apart, not scored as grounded.'
        )
    return out


# --- a person's labels against a judge's -----------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """How far two labellers agree on the same claims: ``confusion[h][j]`` counts claims a person
    labelled ``h`` and the judge ``j`` (index 1 = supported)."""

    n: int
    agreement: float | None
    kappa: float | None  # None when chance agreement is total (both gave one label throughout)
    confusion: tuple[tuple[int, int], tuple[int, int]]

    def calibrates(self, min_claims: int = MIN_CALIBRATION_CLAIMS, min_kappa: float = MIN_CALIBRATION_KAPPA) -> bool:
        return calibrates(self.n, self.kappa, min_claims, min_kappa)

    def to_dict(self) -> dict:
        (tn, fp), (fn, tp) = self.confusion
        return {
            "claims": self.n,
            "agreement": self.agreement,
            "kappa": self.kappa,
            "confusion": {
                "human_supported_judge_supported": tp,
                "human_supported_judge_unsupported": fn,
                "human_unsupported_judge_supported": fp,
                "human_unsupported_judge_unsupported": tn,
            },
        }


def calibrates(
    claims: int, kappa: float | None, min_claims: int = MIN_CALIBRATION_CLAIMS, min_kappa: float = MIN_CALIBRATION_KAPPA
) -> bool:
    """Whether a person's sample of ``claims`` agreeing with a judge at ``kappa`` calibrates the judge."""
    return claims >= min_claims and kappa is not None and kappa >= min_kappa


def agreement(pairs: Sequence[tuple[bool, bool]]) -> Agreement:
    """Raw agreement and Cohen's κ = (p_o − p_e) / (1 − p_e) of (person, judge) label pairs."""
    confusion = [[0, 0], [0, 0]]
    for human, judge in pairs:
        confusion[int(human)][int(judge)] += 1
    n = len(pairs)
    if not n:
        return Agreement(0, None, None, ((0, 0), (0, 0)))
    observed = (confusion[0][0] + confusion[1][1]) / n
    human_yes = (confusion[1][0] + confusion[1][1]) / n
    judge_yes = (confusion[0][1] + confusion[1][1]) / n
    chance = human_yes * judge_yes + (1 - human_yes) * (1 - judge_yes)
    kappa = None if math.isclose(chance, 1.0) else (observed - chance) / (1 - chance)
    return Agreement(n, observed, kappa, ((confusion[0][0], confusion[0][1]), (confusion[1][0], confusion[1][1])))
