"""Questions rewritten by a chat model before retrieval, declared as ``[query.NAME]`` tables:

- ``hyde``: the model writes a passage that would answer the question (Gao et al., 2022); the
  question and that passage are searched together, as query2doc does (Wang et al., 2023), so that
  BM25 and dense models alike read the question's own words beside the passage's;
- ``multi``: the model writes ``n`` other ways to ask it; the question and each rewrite are searched
  and their lists fused by reciprocal rank (k = 60);
- ``rewrite``: the model rewrites the question as one search query, searched instead of it.

A candidate ``minilm/md256/flat~hyde`` is its first stage asked the rewritten questions; the first
stage is built once and serves both. A reply that gives nothing usable, or a refusal, leaves the
question searched as asked, and is counted: a rewrite is never guessed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from bench.chunking.table import ChunkTable
from bench.core.chat_use import ChatUse
from bench.core.tables import read_table, setting
from bench.embedders import ModelSpec
from bench.errors import BenchError
from bench.llm.client import Usage, json_in_reply
from bench.llm.prompts import Template, load_template
from bench.llm.replies import Row, reply_text
from bench.registry import suggest
from bench.retrieval.fusion import Ranked, rrf
from bench.retrieval.pipelines import OverFirstStage
from bench.retrieval.retrievers import Retriever

KINDS = ("hyde", "multi", "rewrite")
QUERY_MARK = "~"  # joins a first stage's id and the rewrite it is asked through: minilm/md256/flat~hyde
PROMPTS = Path(__file__).parent / "prompts"
_PROMPT_FILES = {"hyde": "hyde_v1.md", "multi": "multi_query_v1.md", "rewrite": "rewrite_v1.md"}
_NEEDS = {"hyde": ("question",), "multi": ("question", "n"), "rewrite": ("question",)}
MAX_TOKENS = {"hyde": 300, "multi": 300, "rewrite": 100}  # a passage of ~100 words; n short queries; one query
RRF_K = 60
FUSION_DEPTH = 100  # how deep each of a multi-query's searches goes before fusing (as a fusion's default)
_OVER = 'a glob on first-stage candidate ids, e.g. "minilm/md256/*", or a list (leave it out for every one)'


@dataclass(frozen=True)
class RewriteSpec(ChatUse):
    """A ``[query.NAME]`` table: how questions are rewritten, by which model, for which first stages."""

    name: str = ""
    kind: Literal["hyde", "multi", "rewrite"] = setting("hyde", what='"hyde", "multi" or "rewrite"')
    over: tuple[str, ...] = setting((), blank=False, what=_OVER)
    n: int = setting(3, minimum=1, maximum=10, note="(multi: how many rewrites of each question)")
    description: str = ""

    @property
    def prompt_path(self) -> Path:
        return Path(self.prompt) if self.prompt else PROMPTS / _PROMPT_FILES[self.kind]

    def template(self) -> Template:
        return load_template(self.prompt_path, {"system": (), "user": _NEEDS[self.kind]})

    def messages(self, template: Template, question: str) -> list[dict[str, str]]:
        values = {"question": question, **({"n": str(self.n)} if self.kind == "multi" else {})}
        return template.messages("user", **values)


def rewrite_spec_from_config(name: str, table: object, base: Path) -> RewriteSpec:
    """A RewriteSpec from ``[query.NAME]``; ``kind`` defaults to NAME when NAME is a kind, and a prompt
    file given relative is relative to the config's folder (``base``)."""
    where = f"[query.{name}]"
    if not name or any(c in name for c in "/+@>~ "):
        raise BenchError(f"{where}: the name may not be empty or contain '/', '+', '@', '>', '~' or spaces; rename it")
    if not isinstance(table, Mapping):
        raise BenchError(f'{where}: must be a table of settings, e.g. kind = "hyde" and model = "gpt-4o-mini"')
    if "kind" not in table and name not in KINDS:
        raise BenchError(f'{where}: needs kind = "hyde", "multi" or "rewrite" {suggest(name, KINDS)}'.strip())
    spec = read_table(RewriteSpec, {"kind": name, **table}, where, name=name)
    if spec.prompt is not None and not Path(spec.prompt).expanduser().is_absolute():
        spec = replace(spec, prompt=str(base / spec.prompt))
    if spec.kind != "multi" and "n" in table:
        raise BenchError(f'{where}: n applies to kind = "multi"; remove it')
    spec.template()  # a missing or malformed prompt file is found as the config is read
    return spec


@dataclass(frozen=True)
class Rewrite:
    """What one question is searched as (``texts``: one text, or the question and its rewrites) and
    what asking for it took."""

    texts: tuple[str, ...]
    problem: str | None = None  # why the question is searched as asked
    seconds: float | None = None  # the call, as measured when it was sent
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0


def read_reply(spec: RewriteSpec, question: str, row: Row) -> Rewrite:
    """The texts a reply gives for ``question``; the question alone, with the problem, when it gives none."""
    usage = Usage.from_dict(row.get("usage"))
    seconds = row.get("seconds")
    took = Rewrite(
        (question,), None, float(seconds) if isinstance(seconds, int | float) else None, usage.prompt_tokens,
        usage.completion_tokens, usage.cached_prompt_tokens,
    )  # fmt: skip
    if row.get("refusal"):
        return replace(took, problem=f"refused: {str(row['refusal'])[:200]}")
    texts, problem = _texts(spec, question, reply_text(row))
    return replace(took, texts=texts, problem=problem)


def _texts(spec: RewriteSpec, question: str, reply: str) -> tuple[tuple[str, ...], str | None]:
    found = json_in_reply(reply)
    if spec.kind == "multi":
        queries = found.get("queries") if isinstance(found, dict) else found
        if isinstance(queries, list):
            kept = [q.strip() for q in queries if isinstance(q, str) and q.strip()]
            kept = [q for q in dict.fromkeys(kept) if q != question.strip()][: spec.n]
            if kept:
                return (question, *kept), None
        return (question,), 'no "queries" list of strings in the reply'
    key = "passage" if spec.kind == "hyde" else "query"
    value = found.get(key) if isinstance(found, dict) else None
    if found is None and reply.strip() and spec.kind == "hyde":
        value = reply  # a passage written as plain text, not JSON: it is still the passage
    if not isinstance(value, str) or not value.strip():
        return (question,), f'no "{key}" in the reply'
    return ((f"{question}\n\n{value.strip()}",) if spec.kind == "hyde" else (value.strip(),)), None


def searched_texts(rewrites: Mapping[str, Rewrite], question: str) -> tuple[str, ...]:
    """What is searched for ``question``: its rewrite's texts, or the question as asked when it has none."""
    rewrite = rewrites.get(question)
    return rewrite.texts if rewrite is not None else (question,)


@dataclass
class RewrittenQueries:
    """The first stage's encoding of every text searched, the questions' texts one after another
    (``spans``: each question's rows), and the fused lists already computed."""

    encoded: Any
    spans: list[tuple[int, int]]
    fused: dict[tuple[int, int], Ranked] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.spans)

    def __getitem__(self, rows: slice) -> RewrittenQueries:
        spans = self.spans[rows]
        if not spans:
            return RewrittenQueries(self.encoded[0:0], [])
        lo, hi = spans[0][0], spans[-1][1]
        return RewrittenQueries(self.encoded[lo:hi], [(a - lo, b - lo) for a, b in spans])


class RewrittenRetriever(OverFirstStage):
    """A first stage asked each question as its rewrite says: one text searched, or several fused by
    reciprocal rank. Questions it has no rewrite for are searched as asked."""

    def __init__(
        self, first: Retriever, rewrites: Mapping[str, Rewrite], table: ChunkTable, fusion_depth: int = FUSION_DEPTH
    ) -> None:
        self.first, self.rewrites, self.fusion_depth = first, rewrites, fusion_depth
        self.tie_order = table.tie_order
        self.spec: ModelSpec = first.spec
        self.lexical = first.lexical

    def texts(self, question: str) -> tuple[str, ...]:
        return searched_texts(self.rewrites, question)

    def _queries(self, questions: list[str], encode: Callable[[list[str]], Any]) -> RewrittenQueries:
        flat: list[str] = []
        spans = []
        for question in questions:
            texts = self.texts(question)
            spans.append((len(flat), len(flat) + len(texts)))
            flat.extend(texts)
        return RewrittenQueries(encode(flat), spans)

    def encode(self, questions: list[str]) -> RewrittenQueries:
        return self._queries(questions, self.first.encode)

    def encode_live(self, questions: list[str]) -> RewrittenQueries:
        return self._queries(questions, self.first.encode_live)

    def _ranked(self, queries: RewrittenQueries, q: int, n: int) -> Ranked:
        lo, hi = queries.spans[q]
        if hi - lo == 1:
            [ranked] = self.first.search(queries.encoded[lo:hi], n)
            return ranked
        depth = max(self.fusion_depth, n)
        if (q, depth) not in queries.fused:
            self._fuse(queries, depth)
        return queries.fused[(q, depth)]

    def _fuse(self, queries: RewrittenQueries, depth: int) -> None:
        """Every text of every question searched in one call, and each question's lists fused."""
        lists = self.first.search(queries.encoded, depth)
        for q, (lo, hi) in enumerate(queries.spans):
            if hi - lo > 1:
                queries.fused[(q, depth)] = rrf(lists[lo:hi], k=RRF_K, tie_order=self.tie_order)

    def search(self, queries: RewrittenQueries, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
        if all(hi - lo == 1 for lo, hi in queries.spans):  # one text a question: one search for all
            return self.first.search(queries.encoded, n)
        out = []
        for q in range(len(queries)):
            units, scores = self._ranked(queries, q, n)
            out.append((units[:n], scores[:n]))
        return out

    def score(self, queries: RewrittenQueries, q: int, chunks: np.ndarray) -> np.ndarray:
        """The first stage's score of each chunk for the one text searched; for several texts fused, the
        fused score (0 for a chunk none of the lists holds, as in ranx)."""
        lo, hi = queries.spans[q]
        if hi - lo == 1:
            return self.first.score(queries.encoded, lo, chunks)
        units, scores = self._ranked(queries, q, 0)
        where = dict(zip(units.tolist(), scores.tolist()))
        return np.array([where.get(int(c), 0.0) for c in chunks], dtype=np.float64)

    def recall_against_exact(self, queries: RewrittenQueries, n: int) -> float | None:
        return None  # the first stage's own candidate reports how well its index finds its exact neighbours

    @contextlib.contextmanager
    def one_query_at_a_time(self) -> Iterator[None]:
        with self.first.one_query_at_a_time():
            yield
