"""minilm under PyTorch, ONNX Runtime fp32 and ONNX Runtime int8, on the same real texts in one process.

    .venv/bin/python benchmarks/onnx_backends.py [--passages 512] [--queries 200] [--batch 64] [--repeats 2]

Texts: Cranfield's abstracts and queries from ../shared/datasets/cranfield where this machine has it,
else the bundled corpora/northwind's paragraphs and goldsets/northwind.jsonl's questions. Each backend
is loaded as a run loads it (the ONNX ones exported into bench's cache on first use, a temporary one
with --fresh, timed apart) and warmed up on a few texts; then, per backend:

- corpus: the passages embedded in batches of ``--batch`` (as a run embeds chunks that miss the
  cache), best of ``--repeats``, as passages a second;
- queries: each query embedded alone (as a run measures query latency), as queries a second and the
  median milliseconds per query;
- agreement with PyTorch's passage vectors: the largest component difference and the lowest cosine.

Requires the ``onnx`` extra (``pip install 'retrieval-shootout[onnx]'``); without onnxruntime the
script says so and stops.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.embedders import MODELS, PASSAGE, QUERY, load_embedder, paths
from bench.measure import cores
from tests.helpers import REPO, SHARED

BACKENDS = ("torch", "onnx", "onnx-int8")


def cranfield(passages: int, queries: int) -> tuple[str, list[str], list[str]] | None:
    folder = SHARED / "cranfield"
    if not (folder / "corpus.jsonl").is_file() or not (folder / "queries.jsonl").is_file():
        return None
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        docs = [row["text"] for row in map(json.loads, f) if row.get("text", "").strip()][:passages]
    with (folder / "queries.jsonl").open(encoding="utf-8") as f:
        asked = [row["text"] for row in map(json.loads, f)][:queries]
    return "cranfield", docs, asked


def northwind(passages: int, queries: int) -> tuple[str, list[str], list[str]]:
    """The bundled corpus's paragraphs (of 40 characters or more) and its goldset's questions."""
    paragraphs = [
        p.strip()
        for path in sorted((REPO / "corpora" / "northwind").rglob("*"))
        if path.is_file() and path.suffix in (".md", ".txt")
        for p in path.read_text(encoding="utf-8").split("\n\n")
        if len(p.strip()) >= 40
    ]
    with (REPO / "goldsets" / "northwind.jsonl").open(encoding="utf-8") as f:
        asked = [json.loads(line)["question"] for line in f if line.strip()]
    return "corpora/northwind", paragraphs[:passages], asked[:queries]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=512)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--fresh", action="store_true", help="export into a temporary cache, timing the export")
    args = parser.parse_args()
    if importlib.util.find_spec("onnxruntime") is None:
        print("onnxruntime is not installed: pip install 'retrieval-shootout[onnx]'")
        return

    name, passages, queries = cranfield(args.passages, args.queries) or northwind(args.passages, args.queries)
    models_dir = Path(tempfile.mkdtemp()) if args.fresh else paths.models_dir(paths.cache_root())
    import torch

    print(
        f"{name}: {len(passages)} passages (mean {statistics.mean(map(len, passages)):.0f} characters), "
        f"{len(queries)} queries; batches of {args.batch}, best of {args.repeats}; "
        f"{cores()} cores (torch threads {torch.get_num_threads()}, onnxruntime intra-op threads {cores()})"
    )
    rows, reference = [], None
    for backend in BACKENDS:
        spec = replace(MODELS.get("minilm"), backend=backend)
        t0 = time.perf_counter()
        embedder = load_embedder(spec, batch_size=args.batch, models_dir=models_dir)
        embedder.embed(queries[:4], QUERY)  # weights loaded (or exported), session built
        ready = time.perf_counter() - t0
        corpus_seconds = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            vectors = embedder.embed(passages, PASSAGE)
            corpus_seconds = min(corpus_seconds, time.perf_counter() - t0)
        per_query = []
        for query in queries:
            t0 = time.perf_counter()
            embedder.embed([query], QUERY)
            per_query.append(time.perf_counter() - t0)
        if reference is None:
            reference = vectors
        cosine = (vectors * reference).sum(axis=1)
        rows.append(
            (
                backend,
                ready,
                len(passages) / corpus_seconds,
                len(queries) / sum(per_query),
                statistics.median(per_query) * 1000,
                float(np.abs(vectors - reference).max()),
                float(cosine.min()),
            )
        )

    print(
        f"{'backend':<10} {'load s':>7} {'passages/s':>11} {'queries/s':>10} {'p50 ms/query':>13}"
        f" {'max |Δ| vs torch':>17} {'min cos vs torch':>17} {'corpus speed-up':>16}"
    )
    for backend, ready, corpus_rate, query_rate, p50, gap, low in rows:
        print(
            f"{backend:<10} {ready:>7.1f} {corpus_rate:>11.1f} {query_rate:>10.1f} {p50:>13.2f}"
            f" {gap:>17.1e} {low:>17.4f} {corpus_rate / rows[0][2]:>15.2f}×"
        )


if __name__ == "__main__":
    main()
