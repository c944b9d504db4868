"""The detail sections of report.pdf after the decision: every candidate ranked, latency and cost,
the diagnosis, bootstrap intervals, head-to-head tests, tags and provenance, as blocks for the
page layout (``pdf_layout``).

Every figure reads as text meant for people: booleans as yes/no, a missing value as "–", lists
joined, and every column says what its numbers count.
"""

from __future__ import annotations

import dataclasses
import math

from bench.core.measures import metric_key
from bench.core.summary import Manifest, RunSummary
from bench.formatting import TEST_COLUMNS, p_value, rank, test_cells, with_ci
from bench.report import ops_view
from bench.report.pdf_layout import Para, Section, Table, paginate

MISSING = "–"
SMALL_TAG = 10  # fewer questions than this: a tag's differences are a question or two
INTERVALS_PER_TABLE = 6  # metrics side by side in one interval table
LEAD_GAP = 0.05  # a candidate this far ahead of the pick on a tag is worth naming


def plain(value: object) -> str:
    """A stored value as a reader reads it: yes/no, "–", lists and tables joined; never a Python literal."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return MISSING if value != value else f"{value:g}"
    if isinstance(value, (list, tuple, set)):
        return ", ".join(plain(v) for v in value) or MISSING
    if isinstance(value, dict):
        return "; ".join(f"{k} {plain(v)}" for k, v in value.items()) or MISSING
    return str(value)


def lead(text: str) -> Para:
    return Para(text, size=9, space_after=9)


# ---------------------------------------------------------------------------------------------------
# Candidates


def ranked_section(summary: RunSummary, cis: dict, roles: dict[str, str]) -> Section:
    """``roles``: candidate id → its part in the decision (pick, best, tied with the best)."""
    k = summary.k
    mrr, recall = metric_key("mrr", k), metric_key("recall", k)
    plain_metrics = [m for m in (metric_key(n, k) for n in ("hit_rate", "ndcg", "precision")) if _has(summary, m)]
    monthly = ops_view.priced(summary)
    header = [
        "#",
        "candidate",
        "decision",
        f"{mrr} [95% interval]",
        f"{recall} [95% interval]",
        *plain_metrics,
        "p95 ms end to end",
        "queries / s, 1 thread",
        "monthly cost" if monthly else "$ / 1k queries",
    ]
    rows = []
    for c in summary.candidates:
        q = c.quality
        rows.append(
            [
                plain(c.rank),
                c.id,
                roles.get(c.id, ""),
                with_ci(q.get(mrr, math.nan), cis.get(c.id, {}).get(mrr)),
                with_ci(q.get(recall, math.nan), cis.get(c.id, {}).get(recall)),
                *(_f(q.get(m)) for m in plain_metrics),
                ops_view.latency_text(c).split(" ")[0],
                ops_view.qps_text(c),
                ops_view.monthly_text(c) if monthly else ops_view.cost_per_1k_text(c),
            ]
        )
    text = (
        f"Ranked by {mrr}, then {recall}; intervals: bootstrap 95% over the questions. Latency is end to end: "
        "query embedding + search, + reranking for a reranked pipeline (the parts are on the next page). "
        "Decision: the pick of page 1, the best, and the candidates tied with the best."
    )
    return Section("Every candidate, ranked", [lead(text), Table(header, rows, size=7.5)])


def operations_section(summary: RunSummary, manifest: Manifest) -> Section:
    """Latency with its parts, throughput, size and money: what running each candidate takes."""
    rerank = any(c.ops.latency.rerank_ms_p95 is not None for c in summary.candidates)
    monthly = ops_view.priced(summary)
    parts = ["embedding", "storage", "compute"]
    header = [
        "candidate",
        "p50 ms\nend to end",
        "p95 ms\nend to end",
        "p95 ms\nembed",
        "p95 ms\nsearch",
        *(["p95 ms\nrerank"] if rerank else []),
        "queries / s, 1 thread",
        "timed questions",
        "index size",
        "$ / 1k queries",
        *([f"monthly {p}" for p in parts] + ["monthly cost"] if monthly else []),
    ]
    rows = []
    for c in summary.candidates:
        latency, cost = c.ops.latency, c.ops.cost
        monthly_parts = [cost.monthly_embedding_usd, cost.monthly_storage_usd, cost.monthly_compute_usd]
        rows.append(
            [
                c.id,
                _ms(ops_view.latency(c, "p50")),
                _ms(ops_view.latency(c, "p95")),
                _ms(latency.query_embed_ms_p95),
                _ms(latency.search_ms_p95),
                *([_ms(latency.rerank_ms_p95)] if rerank else []),
                ops_view.qps_text(c),
                plain(latency.latency_samples),
                ops_view.index_text(c),
                ops_view.cost_per_1k_text(c),
                *([ops_view.usd_text(v) for v in monthly_parts] + [ops_view.monthly_text(c)] if monthly else []),
            ]
        )
    text = (
        "End to end = query embedding + search (+ reranking), each question timed alone; a percentile adds "
        "each step's percentile. Queries per second: one after another on one thread. "
        + ops_view.scale_line(summary, manifest)
    )
    return Section("Latency, throughput and cost", [lead(text), Table(header, rows, size=7.5)])


def diagnosis_section(lines: list[str]) -> Section:
    blocks: list = [Para(line, size=9, space_after=7) for line in lines]
    return Section("Diagnosis: what the numbers suggest", blocks)


def intervals_section(summary: RunSummary, cis: dict) -> Section:
    """Bootstrap 95% intervals of every mean metric, several metrics to a table, tables sharing pages."""
    metrics = list(summary.candidates[0].quality) if summary.candidates else []
    blocks: list = [
        lead(
            "2,000 resamples of the questions (percentile method), the same resamples for every candidate; "
            "overlapping intervals do not settle a difference: the paired tests do."
        )
    ]
    tables = []
    for lo in range(0, len(metrics), INTERVALS_PER_TABLE):
        group = metrics[lo : lo + INTERVALS_PER_TABLE]
        rows = [[c.id, *(with_ci(c.quality[m], cis.get(c.id, {}).get(m)) for m in group)] for c in summary.candidates]
        tables.append(Table(["candidate", *group], rows, size=7, row_height=1.7, space_after=10))
    title = "Bootstrap 95% intervals of the means"
    for size, row_height in ((7.0, 1.7), (6.5, 1.55), (6.0, 1.45)):  # one page in smaller type, if that does it
        tight = [dataclasses.replace(t, size=size, row_height=row_height) for t in tables]
        if len(paginate([Section(title, blocks + tight)])) == 1:
            return Section(title, blocks + tight)
    return Section(title, blocks + tables)


# ---------------------------------------------------------------------------------------------------
# Head to head


def pairs_section(metric: str, pairs: list[dict], others: str) -> Section:
    """``others``: the Holm families the other pages correct over, named (``families``)."""
    header = [
        "A",
        "B",
        "first relevant rank: wins / ties / losses",
        f"{metric}: wins / ties / losses",
        "mean A − B",
        *TEST_COLUMNS,
    ]
    rows = [
        [
            p["a"],
            p["b"],
            _wtl(p["first_relevant_rank"]),
            _wtl(p),
            f"{p['mean_diff']:+.3f}",
            *test_cells(p, _p),
        ]
        for p in pairs
    ]
    n = pairs[0]["n"] if pairs else 0
    text = (
        f"Every pair of candidates, question by question; A is the better-ranked. Wins / ties / losses: questions "
        f"where A beats, equals or trails B (on the first relevant rank, lower wins and a miss loses). "
        f"p-values Holm-corrected over the {len(pairs)} pairs on {metric} (one family per test); * marks p < 0.05. "
        f"{others}"
    )
    if n and n < 30:
        text += f" Only {n} questions: trust the Wilcoxon signed-rank test (no normality assumed)."
    return Section(f"Head to head: all pairs on {metric}", [lead(text), Table(header, rows, size=7)])


def other_metrics_section(pairs: dict[str, list[dict]], metrics: list[str]) -> Section | None:
    """Every pair on the other headline metrics: wins / ties / losses and the Wilcoxon p, each its own column."""
    if not metrics:
        return None
    header = ["A", "B"]
    for m in metrics:
        header += [f"{m}: wins / ties / losses", f"{m}: Wilcoxon p"]
    rows = []
    for i, first in enumerate(pairs[metrics[0]]):
        row = [first["a"], first["b"]]
        for m in metrics:
            p = pairs[m][i]
            row += [_wtl(p), _p(p["wilcoxon_p_holm"])]
        rows.append(row)
    n_pairs = len(pairs[metrics[0]])
    text = (
        "Every pair on the other headline metrics: A's wins / ties / losses against B, then the Wilcoxon "
        f"signed-rank p-value, Holm-corrected over the {n_pairs} pairs of that metric (one family per metric); "
        "* marks p < 0.05. Every test of every metric is in statistics.json and `bench compare`."
    )
    return Section("Head to head: all pairs on the other metrics", [lead(text), Table(header, rows, size=7)])


def families(pairs: int, metric: str, metrics: int, decision: str) -> dict[str, str]:
    """Per page, the sentence naming the Holm families the other pages correct over: one pair's
    p-value differs from page to page because each corrects over a different set of tests."""
    every = f"the all-pairs pages over the {pairs} pairs on one metric"
    best_two = f"the two best candidates' page over that pair's {metrics} metrics"
    first = f"page 1's tied group {decision}" if decision else ""
    said = {
        "pairs": [best_two, first],
        "head_to_head": [every, first],
    }
    return {
        page: "Other pages correct over other families (" + "; ".join(x for x in named if x) + "), so the same pair "
        "can read a different p there."
        for page, named in said.items()
    }


def head_to_head_sections(h2h: dict, others: str) -> list[Section]:
    header = [
        "metric",
        "wins / ties / losses",
        "mean A [95% interval]",
        "mean B [95% interval]",
        *TEST_COLUMNS,
    ]
    rows = [
        [
            metric,
            _wtl(m),
            with_ci(m["mean_a"], m["ci_a"]),
            with_ci(m["mean_b"], m["ci_b"]),
            *test_cells(m, _p),
        ]
        for metric, m in h2h["metrics"].items()
    ]
    fr = h2h["first_relevant_rank"]
    n_metrics = len(h2h["metrics"])
    text = (
        f"A = {h2h['a']} against B = {h2h['b']}, {h2h['n_questions']} questions. First relevant rank: A better on "
        f"{fr['wins']}, equal on {fr['ties']}, worse on {fr['losses']}. p-values Holm-corrected over this pair's "
        f"{n_metrics} metrics (one family per test). {others} {h2h['advice']}"
    )
    sections = [Section("Head to head: the two best candidates", [lead(text), Table(header, rows, size=7.5)])]
    if h2h.get("disagreements"):
        paged = any("evidence_pages" in d for d in h2h["disagreements"])
        rows = [
            [d["question_id"], rank(d["rank_a"]), rank(d["rank_b"]), d["question"]]
            + ([d.get("evidence_pages", MISSING)] if paged else [])
            for d in h2h["disagreements"]
        ]
        clipped = frozenset({3, 4} if paged else {3})
        sections.append(
            Section(
                "Head to head: where they disagree most",
                [
                    lead(f"First relevant rank of A = {h2h['a']} and B = {h2h['b']} (miss: none within depth)."),
                    Table(
                        ["question", "rank A", "rank B", "text", *(["evidence in"] if paged else [])],
                        rows,
                        size=7.5,
                        clip=clipped,
                    ),
                ],
            )
        )
    return sections


# ---------------------------------------------------------------------------------------------------
# Tags


def tag_section(summary: RunSummary, per_tag: dict, pick: str | None) -> Section | None:
    """What the table says, then the table: candidates down, tags across (each with its number of
    questions), the lead on each tag in bold."""
    tags = per_tag.get("tags", {})
    if not tags:
        return None
    metric = metric_key("mrr", summary.k)
    means = per_tag["means"]
    ids = [c.id for c in summary.candidates]
    blocks: list = [
        lead(
            f"Mean {metric} over the questions carrying each tag (a question may carry several); n: the tag's "
            "questions. The best candidate on each tag is in bold."
        ),
        *(Para(line, size=9, bullet="•", space_after=4) for line in tag_findings(tags, means, ids, pick)),
    ]
    blocks[-1].space_after = 10
    header = ["candidate", *(f"{t}\nn = {n}" for t, n in tags.items())]
    rows = [[cid + (" (pick)" if cid == pick else ""), *(_f(means[t].get(cid)) for t in tags)] for cid in ids]
    bold = frozenset(
        (ids.index(leader), j) for j, t in enumerate(tags, start=1) if (leader := _leader(means[t], ids)) is not None
    )
    blocks.append(Table(header, rows, size=7.5, row_height=1.65, bold=bold, repeat=1))
    return Section(f"Per tag: mean {metric}", blocks)


def tag_findings(tags: dict[str, int], means: dict, ids: list[str], pick: str | None) -> list[str]:
    """What the per-tag table says: where the pick leads, where another candidate leads it clearly, and
    which tags have too few questions to choose by."""
    pick = pick if pick in ids else (ids[0] if ids else None)
    if pick is None:
        return []
    out = []
    near = [t for t in tags if _gap(means[t], ids, pick) is not None and _gap(means[t], ids, pick) <= 0.02]  # type: ignore[operator]
    out.append(f"The pick, {pick}, leads or is within 0.02 of the lead on {len(near)} of {len(tags)} tags.")
    behind = []
    for t in tags:
        gap, leader = _gap(means[t], ids, pick), _leader(means[t], ids)
        if gap is not None and gap > LEAD_GAP and leader is not None:
            behind.append(
                f"{t} (n = {tags[t]}): {leader} {_f(means[t][leader])} against the pick's {_f(means[t].get(pick))}"
            )
    if behind:
        out.append(f"Another candidate leads the pick by more than {LEAD_GAP:g} on: " + "; ".join(behind) + ".")
    small = [f"{t} ({tags[t]})" for t in tags if tags[t] < SMALL_TAG]
    if small:
        out.append(
            f"Fewer than {SMALL_TAG} questions: {', '.join(small)}. A difference there is one or two questions; "
            "do not choose by it without more questions carrying that tag."
        )
    return out


def _leader(means: dict, ids: list[str]) -> str | None:
    scored = [(v, -i, cid) for i, cid in enumerate(ids) if (v := means.get(cid)) is not None and v == v]
    return max(scored)[2] if scored else None


def _gap(means: dict, ids: list[str], pick: str) -> float | None:
    leader, mine = _leader(means, ids), means.get(pick)
    if leader is None or mine is None or mine != mine:
        return None
    return float(means[leader] - mine)


# ---------------------------------------------------------------------------------------------------
# Provenance


def provenance_section(manifest: Manifest) -> Section:
    corpus, goldset, lock = manifest.corpus or {}, manifest.goldset or {}, manifest.lock or {}
    config = manifest.config or {}
    rows = [
        ["run id", plain(manifest.run_id)],
        ["started / finished (UTC)", f"{plain(manifest.started)} / {plain(manifest.finished)}"],
        ["config", f"{plain(manifest.config_path)} (hash {plain(manifest.config_hash)})"],
        ["corpus", f"{plain(corpus.get('path'))}: {plain(corpus.get('documents'))} documents"],
        *_corpus_rows(corpus),
        ["corpus sha256", plain(corpus.get("sha256"))],
        [
            "goldset",
            f"{plain(goldset.get('path'))}: {plain(goldset.get('questions'))} questions, {plain(goldset.get('unit'))}",
        ],
        ["goldset sha256", plain(goldset.get("sha256"))],
        ["locked", plain(manifest.locked)],
        *[[f"lock: {key.replace('_', ' ')}", plain(value)] for key, value in sorted(lock.items())],
        *([["scale", plain(config["scale"])]] if isinstance(config.get("scale"), dict) else []),
        *([["prefer", plain(config["prefer"])]] if "prefer" in config else []),
        *[[f"version: {name}", plain(v)] for name, v in sorted((manifest.versions or {}).items())],
        *[[f"machine: {name.replace('_', ' ')}", plain(v)] for name, v in sorted((manifest.machine or {}).items())],
        ["engine", plain(manifest.engine)],
        ["peak memory", f"{plain(manifest.peak_rss_mb)} MB"],
        ["latency percentiles", plain(manifest.percentile_method)],
    ]
    text = (
        "Where these numbers came from; a rerun with the same fingerprints, config and versions gives the "
        "same quality figures."
    )
    return Section("Provenance", [lead(text), Table(["what", "value"], rows, size=8, clip=frozenset({1}))])


def _corpus_rows(corpus: dict) -> list[list[str]]:
    """The formats read and the files left out, for runs whose manifest records them."""
    rows = []
    if corpus.get("formats"):
        rows.append(["corpus formats", ", ".join(f"{n} {name}" for name, n in sorted(corpus["formats"].items()))])
    left_out = [x for x in corpus.get("left_out") or [] if x.get("kind") != "empty record"]
    if left_out:
        named = "; ".join(f"{x['path']} ({x['reason']})" for x in left_out[:3])
        more = f"; and {len(left_out) - 3} more" if len(left_out) > 3 else ""
        rows.append([f"files left out ({len(left_out)})", named + more])
    return rows


# ---------------------------------------------------------------------------------------------------
# Cells


def _has(summary: RunSummary, metric: str) -> bool:
    return bool(summary.candidates) and metric in summary.candidates[0].quality


def _f(value: float | None) -> str:
    return MISSING if value is None or value != value else f"{value:.3f}"


def _ms(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1f}"


def _wtl(counts: dict) -> str:
    return f"{counts['wins']} / {counts['ties']} / {counts['losses']}"


def _p(value: float) -> str:
    return p_value(value) + (" *" if value < 0.05 else "")
