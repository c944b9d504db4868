"""report.pdf's layout and wording, from synthetic runs: nothing runs off a page, no orphan line or row,
intervals on as few pages as they need, cells that say what they count, one latency figure, and the
decision page filled in whatever the run stored."""

from __future__ import annotations

import re

import pytest

from bench.core.operating import Operating
from bench.core.summary import CandidateResult, Manifest, RunSummary
from bench.report import ops_view, pdf_sections
from bench.report.pdf_decision import decide, decision_section, next_steps
from bench.report.pdf_layout import (
    BODY_TOP,
    BOTTOM,
    LEFT,
    RIGHT,
    Page,
    Para,
    Section,
    Table,
    Terms,
    book,
    draw,
    paginate,
)
from bench.report.pdf_text import width

# What a Python value looks like when printed raw: True/False/None, a list, tuple or dict of strings (Python
# quotes them with '), an empty one, a quoted key, a NaN. Intervals "[0.669, 0.779]", config tables "[scale]"
# and "[reranker.NAME]" and bench.toml lines the diagnosis quotes (fusions = ["a+b"]) pass.
PYTHON_LITERAL = re.compile(r"\b(True|False|None|nan)\b|[\[{(]\s*'|\[\s*\]|\{\s*\}|'\w+'\s*:")

LONG_IDS = [
    "minilm+bm25/md256/flat@convex=0.3",
    "bm25/md256/inverted>cross-encoder@20",
    "e5-small+bm25/rec256/hnsw@efSearch=64@rrf",
    "minilm/tok256/bin@rescore=100>minilm@50",
]


def test_the_literal_check_finds_python_values_and_passes_intervals():
    for raw in ("lock locked True", "lock problem None", "files ['a.md', 'b.md']", "{'k': 1}", "score nan", "[]", "{}"):
        assert PYTHON_LITERAL.search(raw), raw
    for fine in ("0.726 [0.669, 0.779]", "set [scale] in bench.toml", "[reranker.NAME]", 'fusions = ["a+b"]', "yes"):
        assert not PYTHON_LITERAL.search(fine), fine


def _texts(pages: list[Page]) -> list[list[tuple]]:
    return [[op for op in page.ops if op[0] == "text"] for page in pages]


def _inside(op: tuple) -> bool:
    _, x, y, text, size, bold, _, ha = op
    left = x - width(text, size, bold) if ha == "right" else x
    return left >= LEFT - 0.5 and left + width(text, size, bold) <= RIGHT + 0.5 and y <= BOTTOM


def test_a_table_of_long_ids_wraps_its_header_and_stays_on_the_page():
    header = ["candidate", *LONG_IDS * 3]
    rows = [[cid, *(f"0.{i}{j}0 [0.100, 0.900]" for j in range(12))] for i, cid in enumerate(LONG_IDS)]
    (page,) = paginate([Section("wide", [Table(header, rows, size=7.5)])])
    assert all(_inside(op) for op in _texts([page])[0])
    drawn = [op[3] for op in page.ops if op[0] == "text"]
    assert all(cid in drawn for cid in LONG_IDS)  # row labels are never cut
    pieces = [t for t in drawn if t.endswith(("/", ">", "@", "+"))]
    assert pieces  # the headers broke after an id separator, not inside a name


def test_a_table_too_wide_for_its_type_splits_into_tables_of_its_columns():
    header = ["candidate", *(f"tag{i:02d}\nn = {i}" for i in range(40))]
    rows = [[cid, *("0.500" for _ in range(40))] for cid in LONG_IDS]
    pages = paginate([Section("tags", [Table(header, rows, repeat=1)])])
    texts = [op[3] for page in pages for op in page.ops if op[0] == "text"]
    assert all(_inside(op) for ops in _texts(pages) for op in ops)
    assert sorted(t for t in texts if t.startswith("tag")) == [f"tag{i:02d}" for i in range(40)]
    assert texts.count("candidate") > 1  # each part repeats the first column


def _filled(room_for: float) -> list[Para]:
    """One-line paragraphs that leave ``room_for`` points (give or take a line) at the foot of the first page."""
    step = 9 * 1.4
    return [Para("filler", space_after=0) for _ in range(int((BOTTOM - BODY_TOP - room_for) // step))]


def test_a_long_paragraph_splits_with_two_lines_or_more_on_each_side():
    lines = 9
    para = Para(" ".join(f"line{i} " + "x" * 100 + "\n" for i in range(lines)).rstrip())
    for room in range(1, lines + 2):
        pages = paginate([Section("flow", [*_filled(room * 9 * 1.4 + 1), para])])
        counts = [sum("line" in op[3] for op in ops) for ops in _texts(pages)]
        assert sum(counts) == lines
        assert all(n == 0 or n >= 2 for n in counts), (room, counts)


def test_no_page_starts_with_a_tables_last_row_alone():
    rows = [[f"row{i}", "v"] for i in range(11)]
    for room in range(20, 200, 7):
        pages = paginate([Section("flow", [*_filled(room), Table(["a", "b"], rows)])])
        counts = [sum(op[3].startswith("row") for op in ops) for ops in _texts(pages)]
        assert sum(counts) == len(rows)
        assert all(n == 0 or n >= 2 for n in counts), (room, counts)


def test_short_paragraphs_are_never_split():
    paras = [Para(f"p{i}: " + f"p{i}w " * 120) for i in range(14)]  # about four lines each
    pages = paginate([Section("prose", paras)])
    assert len(pages) > 1
    where: dict[int, set[int]] = {}
    for n, ops in enumerate(_texts(pages)):
        for op in ops:
            if op[3].startswith("p"):
                where.setdefault(int(op[3].split("w")[0].split(":")[0][1:]), set()).add(n)
    assert all(len(pages_of) == 1 for pages_of in where.values())


def test_a_definition_list_never_leaves_its_last_item_alone_on_a_page():
    items = [(f"term{i}", "a definition") for i in range(5)]
    for room in range(5, 100, 4):
        pages = paginate([Section("Glossary", [*_filled(room), Terms(items)])])
        counts = [sum(op[3].startswith("term") for op in ops) for ops in _texts(pages)]
        assert sum(counts) == len(items)
        assert counts[-1] == 0 or counts[-1] >= 2 or len(pages) == 1, (room, counts)


def test_contents_lists_each_section_at_the_page_it_starts_on():
    body = [
        Section("short", [Para("one page")]),
        Section("long", [Para("word " * 9000)]),
        Section("after", [Para("last")]),
    ]
    pages = book([Section("front", [Para("page one")], listed=False)], body)
    contents = [op[3] for op in pages[1].ops if op[0] == "text"]
    entries = dict(zip(contents[0::2], map(int, contents[1::2])))
    assert list(entries) == ["short", "long", "after"]
    for title, number in entries.items():
        assert pages[number - 1].title == title and pages[number - 2].title != title
    assert pages[entries["after"] - 2].title == "long (continued)"


# --- a synthetic run ---------------------------------------------------------------------------------------


def _candidate(cid: str, rank: int, mrr: float, **ops) -> CandidateResult:
    model, chunker, index = cid.split("/", 2)
    quality = {f"{m}@5": mrr for m in ("mrr", "recall", "hit_rate", "ndcg", "precision", "f1", "map")}
    quality |= {f"{m}@5": mrr / 4 for m in ("span_recall", "span_precision", "span_iou", "evidence_recall")}
    base = {"query_embed_ms_p95": 10.0, "search_ms_p95": 1.0, "query_embed_ms_mean": 8.0, "search_ms_mean": 0.5}
    return CandidateResult(
        id=cid,
        model=model,
        chunker=chunker,
        index=index,
        search=None,
        rank=rank,
        quality=quality,
        ops=Operating.from_dict(base | ops),
    )


IDS = [f"model{i}/md256/flat" for i in range(17)]


def _summary(recommendation: dict | None = None, **ops) -> RunSummary:
    candidates = [_candidate(cid, i + 1, 0.8 - i * 0.02, **ops) for i, cid in enumerate(IDS)]
    return RunSummary(
        k=5,
        depth=20,
        unit="chunk",
        ndcg_gain="exponential",
        min_overlap=0.5,
        candidates=candidates,
        recommendation=recommendation,
    )


def _pairs(tied: set[str]) -> list[dict]:
    out = []
    for i, a in enumerate(IDS):
        for b in IDS[i + 1 :]:
            p = 1.0 if a == IDS[0] and b in tied else 0.001
            counts = {"wins": 22, "ties": 133, "losses": 15}
            out.append(
                {"a": a, "b": b, "n": 170, **counts, "first_relevant_rank": dict(counts), "mean_diff": 0.01}
                | {"wilcoxon_p_holm": p, "t_p_holm": p, "randomisation_p_holm": p}
                | {"rank_biserial": 0.1, "cohens_dz": 0.1}
            )
    return out


def _stats(summary: RunSummary, tied: set[str]) -> dict:
    cis = {c.id: {m: [v - 0.05, v + 0.05] for m, v in c.quality.items()} for c in summary.candidates}
    return {"cis": cis, "pairs": {"mrr@5": _pairs(tied), "recall@5": _pairs(tied)}, "per_tag": {"tags": {}}}


def test_bootstrap_intervals_of_seventeen_candidates_fit_one_page():
    summary = _summary()
    pages = paginate([pdf_sections.intervals_section(summary, _stats(summary, set())["cis"])])
    assert len(pages) == 1
    drawn = {op[3] for op in pages[0].ops if op[0] == "text"}
    assert set(summary.candidates[0].quality) <= drawn  # every metric, on that one page


def test_other_metrics_cells_hold_one_figure_each_under_a_header_that_names_it():
    summary = _summary()
    section = pdf_sections.other_metrics_section(_stats(summary, set())["pairs"], ["recall@5"])
    assert section is not None
    table = next(b for b in section.blocks if isinstance(b, Table))
    assert table.header[2:] == ["recall@5: wins / ties / losses", "recall@5: Wilcoxon p"]
    assert all(re.fullmatch(r"\d+ / \d+ / \d+", row[2]) for row in table.rows)
    assert all(re.fullmatch(r"(<0\.001|\d\.\d{3})( \*)?", row[3]) for row in table.rows)


def test_each_head_to_head_page_names_its_holm_family_and_the_others():
    notes = pdf_sections.families(136, "mrr@5", 5, "over the 16 comparisons of each candidate with the best")
    summary = _summary()
    pairs = pdf_sections.pairs_section("mrr@5", _stats(summary, set())["pairs"]["mrr@5"], notes["pairs"])
    lead = pairs.blocks[0].text  # type: ignore[union-attr]
    assert "Holm-corrected over the 136 pairs on mrr@5" in lead
    assert "that pair's 5 metrics" in lead and "16 comparisons of each candidate with the best" in lead
    assert "136 pairs on one metric" in notes["head_to_head"] and "16 comparisons" in notes["head_to_head"]


def test_end_to_end_latency_is_embed_plus_search_plus_rerank_with_its_parts():
    plain = _candidate("a/b/flat", 1, 0.5)
    reranked = _candidate("a/b/flat>r@20", 1, 0.5, rerank_ms_p95=800.0, rerank_ms_mean=700.0)
    assert ops_view.latency(plain) == pytest.approx(11.0)
    assert ops_view.latency(reranked) == pytest.approx(811.0)
    assert ops_view.latency_text(reranked) == "811.0 (embed 10.0 + search 1.0 + rerank 800.0)"
    assert ops_view.qps(reranked) == pytest.approx(1000 / 708.5)  # one thread: 1000 / mean end-to-end ms
    stored = _candidate("a/b/flat", 1, 0.5, end_to_end_ms_p95=12.5, qps_single_thread=90.0)
    assert ops_view.latency(stored) == 12.5 and ops_view.qps(stored) == 90.0  # the run's own figures first


def _page_one(summary: RunSummary, stats: dict, manifest: Manifest | None = None) -> str:
    section = decision_section(summary, manifest or Manifest(run_id="r1"), stats, {}, "bench shootout r1")
    pages = paginate([section])
    assert len(pages) == 1  # the decision is one page
    return " ".join(op[3] for op in pages[0].ops if op[0] == "text")


def test_page_one_of_a_run_without_the_decision_keys_completes_them():
    summary = _summary({"metric": "mrr@5", "pick": IDS[0], "line": "the best is also the cheapest"})
    stats = _stats(summary, {IDS[1], IDS[2]})
    text = _page_one(summary, stats)
    assert f"Use {IDS[0]}: mrr@5 0.800 (95% interval 0.750 to 0.850)." in text
    assert f"Tied with the best: {IDS[1]}, {IDS[2]} (Wilcoxon signed-rank, Holm-corrected over the 136 pairs" in text
    assert "monthly cost: set [scale] in bench.toml" in text and "p95" in text
    assert "Why this one: the best is also the cheapest." in text
    assert not PYTHON_LITERAL.search(text)


def test_page_one_reads_every_key_the_run_stored():
    rec = {
        "metric": "mrr@5",
        "pick": IDS[2],
        "best": IDS[0],
        "value": 0.76,
        "ci": [0.7, 0.82],
        "tied": [IDS[1], IDS[2]],
        "test": "Wilcoxon signed-rank, two-sided, Holm-corrected over each candidate against the best",
        "alpha": 0.05,
        "p_value": 0.31,
        "n_questions": 170,
        "reason": "it is tied with the best and costs a tenth",
        "questions_needed": 1234,
    }
    summary = _summary(rec, monthly_cost_usd=12.5, monthly_cost_includes=["embedding", "storage"])
    manifest = Manifest(run_id="r1", config={"scale": {"documents": 20000, "queries_per_month": 300000}})
    text = _page_one(summary, _stats(summary, set()), manifest)
    assert f"Use {IDS[2]}: mrr@5 0.760 (95% interval 0.700 to 0.820)." in text
    assert f"Tied with the best: {IDS[1]}, {IDS[2]} ({rec['test']}, p >= 0.05, n = 170)" in text
    assert "the pick against the best: p = 0.310" in text
    assert "Why this one: it is tied with the best and costs a tenth." in text
    assert "monthly cost" in text and "$12.50" in text
    assert "Priced at 20,000 documents" in text and "300,000 queries a month" in text
    assert "Monthly cost = embedding + storage" in text
    assert "About 1,234 questions would be needed" in text and "170 questions" in text
    assert "p95 ms end to end" in text and "11.0 (embed 10.0 + search 1.0)" in text
    assert "pick" in text and "best" in text and "cheapest" in text


def test_next_steps_put_the_picks_warnings_first_then_its_findings_then_the_runs():
    from bench.core.findings import Finding, MissedByAll, Pipelines, TooBroad, Truncation
    from bench.evaluation.findings import RUN

    summary = _summary({"metric": "mrr@5", "pick": IDS[3]})
    d = decide(summary, Manifest(), _stats(summary, {IDS[3]}))
    assert d is not None and d.pick.id == IDS[3]

    def cut(cid: str, chunks: int) -> Finding:
        return Finding(
            "warning",
            (cid,),
            Truncation(truncated_chunks=chunks, n_chunks=100, chunk_share=chunks / 100, token_share=0.03),
        )

    broad = TooBroad(recall=0.9, precision=0.2, precision_ceiling=None, span_precision=None, relevant_units=None)
    missed = MissedByAll(question_ids=("q1", "q2"), n_candidates=10, n_questions=170)
    findings = {
        RUN: [Finding("info", tuple(IDS), missed), Finding("info", (), Pipelines(metric="mrr@5", gains=()))],
        IDS[0]: [cut(IDS[0], 10)],
        IDS[3]: [Finding("info", (IDS[3],), broad), cut(IDS[3], 20)],
        IDS[9]: [cut(IDS[9], 30)],
    }
    steps = next_steps(summary, findings, d)
    assert len(steps) == 3
    assert steps[0].startswith("The pick: warning: 20 of 100 chunks (20%) are longer than")
    assert steps[1].startswith("The pick: Recall@5 is 0.90, but precision@5 is 0.20")
    assert steps[2].startswith("Pipelines measured on mrr@5")


def test_provenance_reads_yes_no_and_dashes_never_python_values():
    manifest = Manifest(
        run_id="r1",
        locked=True,
        lock={"locked": True, "problem": None, "files": ["a.md", "b.md"], "ratio": float("nan")},
        versions={"bench": "0.1.0"},
        machine={"cpus": 2, "memory_gb": 23.5},
    )
    pages = paginate([pdf_sections.provenance_section(manifest)])
    text = " ".join(op[3] for page in pages for op in page.ops if op[0] == "text")
    assert "lock: locked" in text and "yes" in text and "a.md, b.md" in text and "–" in text
    assert not PYTHON_LITERAL.search(text), PYTHON_LITERAL.search(text)


def test_per_tag_shows_each_tags_questions_and_what_the_table_says():
    summary = _summary()
    means = {"finance": {cid: 0.5 for cid in IDS} | {IDS[4]: 0.9}, "hr": {cid: 0.7 for cid in IDS}}
    section = pdf_sections.tag_section(summary, {"tags": {"finance": 7, "hr": 40}, "means": means}, IDS[0])
    assert section is not None
    table = next(b for b in section.blocks if isinstance(b, Table))
    assert table.header[1:] == ["finance\nn = 7", "hr\nn = 40"]
    said = " ".join(b.text for b in section.blocks if isinstance(b, Para))
    assert f"finance (n = 7): {IDS[4]} 0.900 against the pick's 0.500" in said
    assert "Fewer than 10 questions: finance (7)" in said
    assert (IDS.index(IDS[4]), 1) in table.bold  # the lead on the tag, in bold


def test_wide_glossary_terms_and_pages_stay_within_the_width():
    items = [(f"{name}@5", "a definition " * 30) for name in ("hit_rate", "span_iou", "evidence_recall")]
    pages = paginate([Section("Glossary", [Terms(items)])])
    assert all(_inside(op) for ops in _texts(pages) for op in ops)


def test_money_on_a_page_is_printed_as_written_not_as_mathtext(tmp_path):
    import io

    from matplotlib.backends.backend_pdf import PdfPages
    from pypdf import PdfReader

    from bench.report.pdf_layout import draw

    pages = paginate([Section("Cost", [Para("storage $0.25 per GB-month, compute $0.10 an hour")])])
    buffer = io.BytesIO()
    with PdfPages(buffer) as pdf:
        for fig in draw(pages, "footer"):
            pdf.savefig(fig)
    text = " ".join(PdfReader(buffer).pages[0].extract_text().split())
    assert "storage $0.25 per GB-month, compute $0.10 an hour" in text and "page 1 of 1" in text


def test_a_byte_order_mark_inside_a_text_is_drawn_as_nothing():
    """A question pasted with a U+FEFF inside it (matplotlib's PDF writer fails on that character)."""
    import io

    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages

    blocks = [Para("before\ufeffafter"), Table(["question"], [["what\ufeff is it?"]], clip=frozenset({0}))]
    figures = draw(book([Section("x", blocks)], []), "footer")
    with matplotlib.rc_context({"pdf.fonttype": 42}), PdfPages(io.BytesIO()) as pdf:
        for fig in figures:
            pdf.savefig(fig)
    drawn = [t.get_text() for fig in figures for t in fig.texts]
    assert "beforeafter" in drawn and "\ufeff" not in "".join(drawn)
