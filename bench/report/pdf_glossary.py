"""The glossary of report.pdf: every metric and figure the report shows, defined as docs/metrics.md
and docs/ops.md define them, at the run's k."""

from __future__ import annotations

from bench.core.summary import RunSummary
from bench.report.pdf_layout import Para, Section, Terms

# name → definition; "{k}" is the run's cutoff, "{unit}" its unit (chunk or document)
METRICS = {
    "hit_rate": "1 if any of the top {k} {unit}s is relevant, else 0; the mean is the share of questions answered.",
    "recall": "Relevant {unit}s in the top {k} divided by all the {unit}s relevant to the question, retrieved or not.",
    "precision": "Relevant {unit}s in the top {k} divided by {k}, even when fewer than {k} came back.",
    "f1": "The harmonic mean of precision@{k} and recall@{k}: 2PR / (P + R); 0 when both are 0.",
    "mrr": "Mean reciprocal rank: 1 / the rank of the first relevant {unit} within the top {k}; 0 if none is there.",
    "ndcg": (
        "Discounted cumulative gain of the top {k} over the best possible: gain 2^grade − 1 (or the grade, with "
        "linear gain), discounted by log2(rank + 1); the ideal from the best {k} grades of every relevant {unit}."
    ),
    "map": (
        "Mean average precision: the precision at each relevant rank within {k}, summed, divided by all the "
        "relevant {unit}s."
    ),
    "span_recall": "Characters of the evidence covered by the top {k} chunks, divided by the evidence's characters.",
    "span_precision": (
        "Characters of evidence in the top {k} chunks, divided by all the characters of those chunks (overlaps "
        "counted twice): how much of the text handed to an LLM is evidence."
    ),
    "span_iou": (
        "Intersection over union of the top {k} chunks' text and the evidence, in characters: evidence covered / "
        "(chunk characters + evidence characters − evidence covered); 1 only when the top {k} is exactly the evidence."
    ),
    "evidence_recall": (
        "The share of a question's evidence items that the top {k} chunks cover by at least min_overlap: how many "
        "of the facts a question needs were found."
    ),
}

FIGURES = [
    (
        "first relevant rank",
        "Where the first relevant {unit} came, 1 to the retrieval depth; a miss: none within the depth.",
    ),
    (
        "score gap",
        "Per question, the best score among the relevant {unit}s minus the best-scoring distractor's: positive, the "
        "model prefers the evidence; near zero, near-duplicates compete; negative, a distractor outranks it. Scores "
        "are on each model's own scale, so compare gaps within a model.",
    ),
    (
        "end-to-end latency",
        "The time to answer one question: embedding the query + searching the index (+ reranking when the "
        "pipeline reranks), each question timed alone on one thread. p50 / p95: half / 95% of questions are "
        "answered at least this fast; a percentile adds each step's percentile (a bound on the whole's).",
    ),
    (
        "queries / s, 1 thread",
        "Questions answered one after another on one thread in a second: 1000 / mean end-to-end ms.",
    ),
    (
        "index size",
        "The index as stored (FAISS, or BM25's score matrix) for this run's corpus; at scale: vectors and index "
        "for the configured corpus, on every replica.",
    ),
    (
        "$ / 1k queries",
        "Embedding (and reranking) 1,000 questions of the goldset's mean length at the model's price; 0 for a "
        "local model.",
    ),
    (
        "monthly cost",
        "Running the candidate for a month at the [scale] of bench.toml: embedding the corpus at each re-index and "
        "the month's queries, reranking, storing vectors and index on every replica, and the compute of local "
        "models from the seconds this run measured.",
    ),
    (
        "95% interval",
        "The bootstrap interval of a mean: 2,000 resamples of the questions, the middle 95% of their means.",
    ),
    (
        "wins / ties / losses",
        "Questions where A's value beats, equals or trails B's; on the first relevant rank a lower rank wins and a "
        "miss loses to any rank.",
    ),
    ("Wilcoxon p", "Wilcoxon signed-rank test of the per-question differences (two-sided, zero differences dropped)."),
    ("t-test p", "Paired t-test of the per-question differences; assumes roughly normal differences."),
    (
        "randomisation p",
        "10,000 random sign flips of the per-question differences: how often the mean difference is as large.",
    ),
    (
        "Holm-corrected",
        "p-values adjusted for testing many at once (Holm–Bonferroni) within one family: page 1's tied group "
        "corrects over each candidate against the best, the all-pairs pages over every pair on one metric, the "
        "two-best page over that pair's metrics; so one pair's p can differ between them.",
    ),
    ("rank-biserial", "Effect size of the Wilcoxon test, (R+ − R−) / (R+ + R−), from −1 to +1; positive favours A."),
    ("Cohen's dz", "Effect size of the t-test: mean difference / its standard deviation; positive favours A."),
    (
        "tied with the best",
        "Candidates whose paired test against the best is not significant (p ≥ 0.05 after correction): these "
        "questions cannot tell them apart.",
    ),
    (
        "Pareto front",
        "Candidates no other beats on both axes of a trade-off chart (at least as good on one, better on the other).",
    ),
]


def glossary_section(summary: RunSummary) -> Section:
    k = summary.k
    unit = "document" if summary.unit == "document" else "chunk"
    shown = set(summary.candidates[0].quality) if summary.candidates else set()
    items = [
        (f"{name}@{k}", text.format(k=k, unit=unit))
        for name, text in METRICS.items()
        if f"{name}@{k}" in shown or not shown
    ]
    items += [(term, text.format(k=k, unit=unit)) for term, text in FIGURES]
    lead = Para(
        f"Every quality metric is computed per question at k = {k}, then averaged over all questions (a question "
        "with no relevant unit counts as 0). Span metrics measure characters, so they are fair across chunk sizes.",
        size=9,
        space_after=9,
    )
    return Section("Glossary", [lead, Terms(items, size=7.5, space_after=3)])
