"""What the harness's own bookkeeping around model calls costs, against the model calls themselves.

    .venv/bin/python benchmarks/bookkeeping_overhead.py [CONFIG]

For every dense model and chunker of the config (default: the bundled shootout), in one process:
- model: ``embedder.embed`` on the chunk texts in the run's batches, nothing else;
- harness: the same texts through ``EmbeddingCache.embed`` into an empty cache (hashing every
  text, looking it up, storing every batch) plus the run's token counting and timers.
The overhead is (harness − model) / model, reported per pair and over the whole shootout; the
target is under 5%. Each measurement is the best of --repeats (machines here are shared).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench import measure
from bench.chunking.table import ChunkTable
from bench.config import load_config
from bench.embedders import PASSAGE, load_embedder, paths
from bench.embedders.cache import EmbeddingCache
from bench.inputs.corpus import load_corpus

REPO = Path(__file__).resolve().parent.parent


def model_only(embedder, texts: list[str], batch: int) -> float:
    t0 = time.perf_counter()
    for lo in range(0, len(texts), batch):
        embedder.embed(texts[lo : lo + batch], PASSAGE)
    return time.perf_counter() - t0


def through_harness(embedder, texts: list[str], batch: int, max_tokens: int | None) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(tmp)
        t0 = time.perf_counter()
        cache.embed(embedder, texts, PASSAGE, batch, progress=lambda n: None)
        measure.token_figures(embedder.count_tokens(texts), max_tokens)
        measure.peak_rss_mb()
        return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", nargs="?", default=str(REPO / "bench.toml"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = load_config(args.config)
    corpus = load_corpus(config.corpus)
    models_dir = paths.models_dir(paths.cache_root(config.cache_dir))
    tables = {c.name: ChunkTable.chunk_corpus(corpus, c.build()) for c in config.chunkers if not c.model}
    total_model = total_harness = 0.0
    print(f"{'model/chunker':<22}{'chunks':>8}{'model s':>10}{'harness s':>11}{'overhead':>10}")
    for name in config.models:
        spec = config.model(name)
        if spec.lexical:
            continue
        embedder = load_embedder(spec, batch_size=config.batch_size, models_dir=models_dir)
        embedder.embed(["warm-up"], PASSAGE)
        for chunker, table in tables.items():
            texts = table.texts
            best_model = min(model_only(embedder, texts, config.batch_size) for _ in range(args.repeats))
            best_harness = min(
                through_harness(embedder, texts, config.batch_size, spec.max_tokens) for _ in range(args.repeats)
            )
            total_model += best_model
            total_harness += best_harness
            print(
                f"{name + '/' + chunker:<22}{len(texts):>8}{best_model:>10.3f}{best_harness:>11.3f}"
                f"{(best_harness - best_model) / best_model:>10.1%}"
            )
    overall = (total_harness - total_model) / total_model
    print(
        f"all dense candidates: model {total_model:.2f} s, harness {total_harness:.2f} s, "
        f"overhead {overall:.1%} (target < 5%): {'PASS' if overall < 0.05 else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
