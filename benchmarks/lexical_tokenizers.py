"""Which lexical tokenizer ranks Chinese best: BM25 over CMRC 2018 with each segmenter of
bench.text.words, with and without Chinese (and English) stopwords, against the ``\\w+`` words BM25 used before.

    .venv/bin/python benchmarks/lexical_tokenizers.py [../shared/datasets/cmrc2018-zh] [--chars 150]

One passage is one document (corpus.jsonl, its title and text as bench reads BEIR), the questions
are queries.jsonl, the judgments qrels/test.tsv. With ``--chars N`` the passages are cut into
pieces of N characters instead, and the pieces that hold an answer span (questions.jsonl) are the
relevant ones: a harder test, closer to chunks. Each ranking is BM25's top 10 (documents that
share no term with the question are not ranked, so a ranking may be empty); nDCG@10 and recall@10
are trec_eval's (pytrec_eval), over every judged question. Index time is tokenising and indexing
every document.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytrec_eval
from bm25s.stopwords import STOPWORDS_EN

from bench.retrieval.bm25 import BM25Index
from bench.text.words import TOKENIZERS, LexicalTokenizer

K = 10
DATA = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "cmrc2018-zh"  # beside the repository


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        out.setdefault(qid, {})[doc] = int(grade)
    return out


class _Before:
    """What BM25 tokenised with before: ``\\w+`` of the lower-cased text minus English stopwords."""

    _word = re.compile(r"\w+")
    _stop = frozenset(STOPWORDS_EN)

    def __call__(self, text: str) -> list[str]:
        return [w for w in self._word.findall(text.lower()) if w not in self._stop]

    def counts(self, text: str) -> Counter:
        return Counter(self(text))


def _pieces(data: Path, chars: int) -> tuple[list[tuple[str, str]], dict[str, dict[str, int]]]:
    """Passages cut every ``chars`` characters, and per question the pieces its answers overlap."""
    units, where = [], {}
    for d in _read_jsonl(data / "corpus.jsonl"):
        for start in range(0, len(d["text"]), chars):
            where[d["_id"], start] = f"{d['_id']}@{start}"
            units.append((where[d["_id"], start], d["text"][start : start + chars]))
    qrels: dict[str, dict[str, int]] = {}
    for q in _read_jsonl(data / "questions.jsonl"):
        for span in q["answer_spans"]:
            for start in range(span["start_index"] // chars * chars, span["end_index"], chars):
                if (q["corpus_id"], start) in where:
                    qrels.setdefault(q["qa_id"], {})[where[q["corpus_id"], start]] = 1
    return units, qrels


def evaluate(
    tokenize: LexicalTokenizer | _Before,
    units: list[tuple[str, str]],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
) -> dict[str, float]:
    t0 = time.perf_counter()
    index = BM25Index()
    index.build(tokenize.counts(text) for _, text in units)
    index_seconds = time.perf_counter() - t0
    ids = [unit for unit, _ in units]
    run: dict[str, dict[str, float]] = {}
    empty = 0
    for qid in qrels:
        scores = index.scores(tokenize(queries[qid]))
        order = np.lexsort((np.arange(len(scores)), -scores))[:K]  # best first, ties by passage order
        order = order[scores[order] > 0]
        empty += len(order) == 0
        run[qid] = {ids[i]: float(scores[i]) for i in order}
    measures = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_10"}).evaluate(run)
    return {
        "ndcg@10": float(np.mean([m["ndcg_cut_10"] for m in measures.values()])),
        "recall@10": float(np.mean([m["recall_10"] for m in measures.values()])),
        "empty": empty,
        "index_s": index_seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path, nargs="?", default=DATA)
    parser.add_argument("--chars", type=int, default=0, help="cut passages into pieces of this many characters")
    args = parser.parse_args()
    queries = {q["_id"]: q["text"] for q in _read_jsonl(args.data / "queries.jsonl")}
    if args.chars:
        units, qrels = _pieces(args.data, args.chars)
        unit = f"pieces of {args.chars} characters"
    else:
        units = [(d["_id"], f"{d['title']} {d['text']}") for d in _read_jsonl(args.data / "corpus.jsonl")]
        qrels, unit = _qrels(args.data / "qrels" / "test.tsv"), "passages"
    print(f"{args.data.name}: {len(units)} {unit}, {len(qrels)} judged questions, k = {K}\n")
    variants: list[tuple[str, str, LexicalTokenizer | _Before]] = [(r"\w+ (before)", "bm25s-en", _Before())]
    for name in TOKENIZERS:
        for use_stopwords in (False, True):
            tokenizer = LexicalTokenizer(name, "zh", use_stopwords=use_stopwords)
            variants.append((name, tokenizer.stopword_list, tokenizer))
    print(f"{'tokenizer':<20} {'stopwords':<14} {'nDCG@10':>8} {'recall@10':>10} {'empty':>6} {'index s':>8}")
    for name, stop, tokenize in variants:
        tokenize("预热")  # jieba loads its dictionary here, not inside the timing
        r = evaluate(tokenize, units, queries, qrels)
        print(
            f"{name:<20} {stop:<14} {r['ndcg@10']:>8.3f} {r['recall@10']:>10.3f} {r['empty']:>6} {r['index_s']:>8.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
