"""What a goldset holds: questions, evidence per question, grades, tags, and corpus coverage."""

from __future__ import annotations

from collections import Counter

import numpy as np

from bench.inputs.corpus import Corpus
from bench.inputs.goldset import CHUNK, Evidence, Goldset
from bench.text.languages import LanguageMix, detect_mix


def question_languages(goldset: Goldset, sample: int = 1000) -> LanguageMix:
    """The questions' languages by characters, from at most ``sample`` of them spread over the goldset."""
    return detect_mix([q.text for q in goldset.questions], sample)


def goldset_stats(goldset: Goldset, corpus: Corpus) -> dict:
    per_question = np.array([len(q.evidence) for q in goldset.questions])
    evidence = [e for q in goldset.questions for e in q.evidence]
    docs = {e.doc for e in evidence}
    stats = {
        "questions": len(goldset.questions),
        "unit": goldset.unit,
        "evidence_items": len(evidence),
        "evidence_per_question": {
            "mean": float(per_question.mean()),
            "max": int(per_question.max()),
            "histogram": {str(n): int(c) for n, c in sorted(Counter(per_question.tolist()).items())},
        },
        "multi_evidence_share": float((per_question >= 2).mean()),
        "multi_document_questions": sum(len({e.doc for e in q.evidence}) >= 2 for q in goldset.questions),
        "grades": {str(g): c for g, c in sorted(Counter(e.grade for e in evidence).items())},
        "tags": dict(Counter(t for q in goldset.questions for t in q.tags).most_common()),
        "documents_referenced": len(docs),
        "documents_in_corpus": len(corpus),
        "languages": question_languages(goldset).to_json(),
    }
    total_chars = sum(len(d.text) for d in corpus.documents)
    if goldset.unit == CHUNK:
        covered = 0
        for doc in docs:
            mask = np.zeros(len(corpus.get(doc).text), dtype=bool)
            for e in evidence:
                if e.doc == doc:
                    mask[e.start : e.end] = True
            covered += int(mask.sum())
        stats["evidence_chars"] = covered
        stats["corpus_chars"] = total_chars
        stats["corpus_coverage"] = covered / total_chars if total_chars else 0.0
        lengths = np.array([end - start for start, end in map(_span, evidence)])
        stats["evidence_chars_per_item"] = {
            "mean": float(lengths.mean()),
            "min": int(lengths.min()),
            "max": int(lengths.max()),
        }
    else:
        stats["corpus_coverage"] = len(docs) / len(corpus)
    return stats


def _span(evidence: Evidence) -> tuple[int, int]:
    """``(start, end)`` of an evidence item of a chunk-unit goldset, where every item has both."""
    if evidence.start is None or evidence.end is None:
        raise ValueError(f"evidence in {evidence.doc!r} has no span, but the goldset is in chunk unit")
    return evidence.start, evidence.end
