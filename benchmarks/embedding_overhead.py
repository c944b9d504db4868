"""What bench's cold corpus embedding costs against the model's own forward pass, on real texts.

    .venv/bin/python benchmarks/embedding_overhead.py [--n 800] [--model minilm] [--batch 64] [--repeats 3]
        [--dataset cranfield|squad] [--threads T] [--batches 16 32 64 128] [--profile]

In one process, on the same N real texts (Cranfield abstracts, or SQuAD paragraphs, from the shared
development datasets; the script skips when they are absent), alternating (each first in turn),
``--repeats`` times each:
- bench cold: ``EmbeddingCache.embed`` into a fresh temporary cache through bench's
  sentence-transformers embedder (hashing, lookups, length-sorted batches, the vector file and
  SQLite writes, progress callbacks);
- sentence-transformers alone: ``SentenceTransformer.encode`` on the same texts, in length-sorted
  batches of the same size (its own sort), normalised;
- per batch: bench's embedder called on bench's batches one after another, with no cache around it
  (what separates the cache's cost from that of calling the model batch by batch).
It prints the best and the median of each (wall clock and CPU time), the ratio of the medians
(target ≤ 1.10; on a loaded machine the best of a few passes is whichever found a quiet minute), and
the largest difference between the two sets of vectors (last bits only: the same texts, other batch
mates). On a shared machine the two passes' times swing with the load; the split of each
bench pass into time inside the model's calls and bench's own time around them does not, as both
are taken in the same pass. ``--batches`` adds a table of batch sizes against throughput through
bench; ``--profile`` prints bench's own functions from a cProfile of one bench pass.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "datasets"  # the shared collections, where this machine has them
TARGET = 1.10

sys.path.insert(0, str(REPO))
from bench.embedders import MODELS, PASSAGE, load_embedder  # noqa: E402
from bench.embedders.cache import EmbeddingCache  # noqa: E402


def cranfield(n: int) -> list[str]:
    texts = []
    with open(SHARED / "cranfield" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["text"].strip()
            if text:
                texts.append(text)
            if len(texts) == n:
                break
    return texts


def squad(n: int) -> list[str]:
    texts: list[str] = []
    for path in sorted((SHARED / "squad-articles" / "corpora").glob("*.txt")):
        texts += [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    return texts[:n]


class Timed:
    """The embedder, with the seconds spent inside its ``embed`` calls added up."""

    def __init__(self, embedder) -> None:
        self.inner, self.spec, self.dims = embedder, embedder.spec, embedder.dims
        self.seconds = 0.0

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        t0 = time.perf_counter()
        vectors = self.inner.embed(texts, role)
        self.seconds += time.perf_counter() - t0
        return vectors

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        return self.inner.count_tokens(texts)


def bench_cold(embedder, texts: list[str], batch: int) -> tuple[float, float, float, np.ndarray]:
    """Wall seconds, CPU seconds and seconds inside the model's calls of one cold pass, and its vectors."""
    timed = Timed(embedder)
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(tmp)
        t0, c0 = time.perf_counter(), time.process_time()
        vectors, _ = cache.embed(timed, texts, PASSAGE, batch, progress=lambda n: None)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        return wall, cpu, timed.seconds, np.array(vectors)


def model_alone(model, texts: list[str], batch: int) -> tuple[float, float, float, np.ndarray]:
    t0, c0 = time.perf_counter(), time.process_time()
    vectors = model.encode(
        texts, batch_size=batch, show_progress_bar=False, convert_to_numpy=True, normalize_embeddings=True
    )
    wall = time.perf_counter() - t0
    return wall, time.process_time() - c0, wall, vectors


def model_per_batch(embedder, texts: list[str], batch: int) -> tuple[float, float, float, np.ndarray]:
    """The embedder called on bench's batches (sorted by length, shortest first) with no cache around it."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), embedder.dims), dtype=np.float32)
    t0, c0 = time.perf_counter(), time.process_time()
    for lo in range(0, len(order), batch):
        rows = order[lo : lo + batch]
        out[rows] = embedder.embed([texts[i] for i in rows], PASSAGE)
    wall = time.perf_counter() - t0
    return wall, time.process_time() - c0, wall, out


def compare(embedder, texts: list[str], batch: int, repeats: int) -> None:
    model = embedder.model
    runs = {
        "bench cold": lambda: bench_cold(embedder, texts, batch),
        "per batch": lambda: model_per_batch(embedder, texts, batch),
        "s-t alone": lambda: model_alone(model, texts, batch),
    }
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in runs}
    vectors: dict[str, np.ndarray] = {}
    for repeat in range(repeats):
        for name, run in list(runs.items())[:: 1 if repeat % 2 == 0 else -1]:  # each goes first in turn
            *seconds, vectors[name] = run()
            times[name].append(tuple(seconds))
    print(f"{'':<12}{'best s':>8}{'median s':>10}{'best cpu s':>12}{'in model s':>12}{'own s':>8}")
    for name, rows in times.items():
        wall = [r[0] for r in rows]
        inside = min(rows)[2]
        print(
            f"{name:<12}{min(wall):>8.2f}{statistics.median(wall):>10.2f}{min(r[1] for r in rows):>12.2f}"
            f"{inside:>12.2f}{min(rows)[0] - inside:>8.3f}"
        )
    bench, alone = min(times["bench cold"]), min(times["s-t alone"])
    medians = [statistics.median(r[0] for r in times[name]) for name in runs]
    ratio = medians[0] / medians[-1]
    cpu = [min(r[1] for r in times[name]) for name in runs]
    print(f"ratio of bests {bench[0] / alone[0]:.3f}×, of best CPU times {cpu[0] / cpu[-1]:.3f}×")
    print(f"ratio of medians {ratio:.3f}× (target ≤ {TARGET:.2f}×): {'PASS' if ratio <= TARGET else 'FAIL'}")
    own = bench[0] - bench[2]
    print(f"bench's own time in its best pass: {own:.3f} s ({bench[0] / bench[2]:.4f}× the model's calls in that pass)")
    diff = float(np.abs(vectors["bench cold"] - vectors["s-t alone"]).max())
    print(f"vectors: max |Δ| {diff:.1e} ({'agree' if diff < 1e-5 else 'DIFFER'})")


def batch_table(embedder, texts: list[str], sizes: list[int], repeats: int) -> None:
    print(f"{'batch':>6}{'best s':>8}{'texts/s':>9}")
    default = embedder.batch_size
    for size in sizes:
        embedder.batch_size = size  # a run loads its embedder with the config's batch size too
        seconds = min(bench_cold(embedder, texts, size)[0] for _ in range(repeats))
        print(f"{size:>6}{seconds:>8.2f}{len(texts) / seconds:>9.1f}")
    embedder.batch_size = default


def profile(embedder, texts: list[str], batch: int) -> None:
    prof = cProfile.Profile()
    prof.enable()
    bench_cold(embedder, texts, batch)
    prof.disable()
    stats = pstats.Stats(prof).sort_stats("tottime")
    stats.print_stats(r"bench/|sqlite|hashlib|blake|posix|tokenization_utils|numpy", 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=800)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dataset", choices=("cranfield", "squad"), default="cranfield")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's own choice)")
    parser.add_argument("--batches", type=int, nargs="*", default=[], help="batch sizes to time through bench")
    parser.add_argument("--profile", action="store_true", help="cProfile one bench pass")
    args = parser.parse_args()

    folder = SHARED / ("cranfield" if args.dataset == "cranfield" else "squad-articles")
    if not folder.is_dir():
        print(f"SKIP: {folder} absent (the shared development datasets)")
        return
    texts = (cranfield if args.dataset == "cranfield" else squad)(args.n)
    embedder = load_embedder(MODELS.get(args.model), batch_size=args.batch)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    embedder.embed(["warm up"], PASSAGE)
    model_alone(embedder.model, texts[: args.batch], args.batch)
    print(
        f"{args.model}, {len(texts)} {args.dataset} texts, batches of {args.batch}, "
        f"{torch.get_num_threads()} torch threads, {args.repeats} repeats each"
    )
    compare(embedder, texts, args.batch, args.repeats)
    if args.batches:
        batch_table(embedder, texts, args.batches, args.repeats)
    if args.profile:
        profile(embedder, texts, args.batch)


if __name__ == "__main__":
    main()
