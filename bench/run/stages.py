"""The single-model first stages of a run's pipelines: each built once, kept while a later candidate
(a fusion, a reranked pipeline, another query setting) still needs it, then released."""

from __future__ import annotations

from dataclasses import dataclass

from bench.config import Candidate, Config
from bench.core.sections import JsonObject
from bench.evaluation.prices import Price
from bench.retrieval.retrievers import BuildStats, Retriever


@dataclass(frozen=True)
class Part:
    """One built single-model first stage of a candidate, and the price of the model it runs."""

    candidate: Candidate
    retriever: Retriever
    build: BuildStats
    price: Price


class BuiltStages:
    """Built first stages by (model, chunker, index). ``release_after(i)`` drops every one no
    candidate after position ``i`` needs, so memory holds only what is still to be used."""

    def __init__(self, config: Config, candidates: list[Candidate]) -> None:
        self._last_use: dict[tuple[str, str, str], int] = {}
        for position, cand in enumerate(candidates):
            for part in config.parts(cand):
                self._last_use[part.key] = position
        self._built: dict[tuple[str, str, str], tuple[Retriever, BuildStats]] = {}

    def __contains__(self, key: tuple[str, str, str]) -> bool:
        return key in self._built

    def __getitem__(self, key: tuple[str, str, str]) -> tuple[Retriever, BuildStats]:
        return self._built[key]

    def add(self, key: tuple[str, str, str], retriever: Retriever, build: BuildStats) -> None:
        self._built[key] = (retriever, build)

    def release_after(self, position: int) -> None:
        for key in [k for k in self._built if self._last_use.get(k, -1) <= position]:
            self._built.pop(key)[0].close()

    def close(self) -> None:
        """Release every stage still built (the run ends, or stops)."""
        while self._built:
            self._built.popitem()[1][0].close()


def pipeline_description(config: Config, cand: Candidate) -> JsonObject:
    """What a candidate is made of, for summary.json: its kind, the single-model first stages it
    uses (by id), the fusion's settings and the reranker, so reports can set a pipeline beside its parts."""
    parts = config.parts(cand)
    if cand.fused:
        fusion = config.fusion(cand.model)
        kind = "fusion"
        out: JsonObject = {
            "fusion": {**config.fusion_settings(cand), "depth": fusion.depth, "models": list(fusion.models)}
        }
    else:
        kind = "lexical" if config.model(cand.model).lexical else "dense"
        out = {}
    out = {"kind": kind, "parts": [p.id for p in parts], **out}
    if isinstance(out.get("fusion", {}).get("weights"), tuple):
        out["fusion"]["weights"] = list(out["fusion"]["weights"])
    if cand.reranker:
        spec = config.reranker(cand.reranker)
        out["reranker"] = {
            "name": spec.name,
            "kind": spec.kind,
            "top": cand.top,
            **({"model": spec.model} if spec.model else {}),
        }
        out["first_stage"] = cand.first_stage.id
    chunker = config.chunker(cand.chunker)
    if chunker.context:
        out["plain_chunker"] = chunker.plain
    if cand.query:
        rewrite = config.rewrite(cand.query)
        template = rewrite.template()
        out["query"] = {
            "name": rewrite.name, "kind": rewrite.kind, "model": rewrite.model, "prompt": template.version,
            **({"n": rewrite.n} if rewrite.kind == "multi" else {}),
        }  # fmt: skip
        out["as_written"] = cand.as_written.id
    return out
