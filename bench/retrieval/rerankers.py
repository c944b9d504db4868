"""Rerankers: a second stage that re-scores the first stage's top N passages of one query.

Three kinds: a bench embedding model (``bi-encoder``: query and passage vectors, inner product),
a sentence-transformers cross-encoder from a local folder (``cross-encoder``), and a rerank API
(``http``: Cohere, Jina and Voyage's ``documents`` body, Hugging Face TEI's ``texts`` body).
Each scores with ``score`` (the quality pass, which may reuse earlier work) and ``score_live``
(computed now, nothing reused: what query latency is timed on); the two agree.
``[reranker.NAME]`` tables become a ``RerankerSpec`` through ``reranker_spec_from_config``.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import threading
import urllib.parse
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from bench.core.tables import read_table, setting
from bench.embedders.base import PASSAGE, QUERY, Embedder
from bench.embedders.sbert import is_hub_name, resolve_source
from bench.errors import BenchError
from bench.llm import http_api
from bench.registry import check_keys, suggest

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

    from bench.embedders.cache import EmbeddingCache

log = logging.getLogger(__name__)

RERANKER_KINDS = ("bi-encoder", "cross-encoder", "http")
SHAPES = ("documents", "texts")
_PRICES = ("price_per_1k_searches", "price_per_mtok", "hourly_usd")
_COMMON = ("kind", "top", "over", "description", *_PRICES)
# The keys each kind reads; any other key in its table is a mistake worth naming.
_KIND_KEYS = {
    "bi-encoder": ("model",),
    "cross-encoder": ("source", "max_length", "batch_size"),
    "http": ("url", "api_model", "api_key_env", "shape", "timeout_s", "max_retries"),
}
KEYS = (*_COMMON, *(k for keys in _KIND_KEYS.values() for k in keys))


_TOP = "a whole number >= 1 (how many first-stage results are re-scored) or a list, e.g. top = [10, 50]"
_OVER = 'a glob on first-stage candidate ids, e.g. "minilm*", or a list (leave it out for every one)'
_SHAPE = '"documents" (Cohere, Jina, Voyage) or "texts" (Hugging Face TEI)'


@dataclass(frozen=True)
class RerankerSpec:
    """Everything known about a reranker before it loads; one candidate per value of ``top``."""

    name: str
    kind: str
    # how many first-stage results are re-scored
    top: tuple[int, ...] = setting((20,), minimum=1, unique=True, what=_TOP)
    # glob patterns on first-stage candidate ids; () = every one
    over: tuple[str, ...] = setting((), blank=False, what=_OVER)
    model: str | None = None  # bi-encoder: a dense model of the config
    source: str | None = None  # cross-encoder: a folder, package:<module> or hub:org/name
    url: str | None = None  # http: the endpoint, e.g. https://api.cohere.com/v2/rerank
    api_model: str | None = None  # http: the "model" sent in the body
    api_key_env: str | None = None  # http: env var holding the key, sent as Authorization: Bearer
    # http body: "documents" (Cohere, Jina, Voyage) or "texts" (TEI)
    shape: Literal["documents", "texts"] = setting("documents", what=_SHAPE)
    # prices are kept as written (an integer stays one): the config hash of a priced reranker stays the same
    price_per_1k_searches: int | float | None = setting(None, minimum=0)
    price_per_mtok: int | float | None = setting(None, minimum=0)  # cl100k tokens of query + documents per search
    hourly_usd: int | float | None = setting(None, minimum=0)  # self-hosted: cost from measured seconds
    max_length: int | None = setting(None, minimum=1)  # cross-encoder: max tokens per (query, passage) pair
    batch_size: int = setting(32, minimum=1)
    timeout_s: float = setting(30.0, above=0, what="a positive number of seconds")
    max_retries: int = setting(5, minimum=0)
    description: str = ""


class Reranker(Protocol):
    spec: RerankerSpec
    remote: bool  # an API: latency and price come from a service
    billed_tokens: int  # tokens sent so far (http with price_per_mtok), else 0
    searches: int  # scoring calls made so far

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """float64, one per text, higher = more relevant; may reuse earlier work (the quality pass)."""

    def score_live(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The same scores computed now, nothing reused: what latency is timed on."""


# -- [reranker.NAME] ---------------------------------------------------------------------------


def reranker_spec_from_config(name: str, table: Mapping | None, models: Collection[str]) -> RerankerSpec:
    """A RerankerSpec from a ``[reranker.NAME]`` table (None: the name listed without one).

    ``models`` are the dense models the config knows: a reranker named after one, or with
    ``model = "..."``, is a bi-encoder by default. A missing API key is no error here: the key
    is needed only when the reranker loads."""
    where = f"reranker {name!r}"
    table = {} if table is None else table
    if not isinstance(table, Mapping):
        raise BenchError(f"{where}: [reranker.{name}] must be a table of settings, not {type(table).__name__}")
    check_keys(table, KEYS, where, noun="key")
    kind = _kind(where, name, table, models)
    prices = [p for p in _PRICES if table.get(p) is not None]
    if len(prices) > 1:
        raise BenchError(f"{where}: give one price, not {' and '.join(prices)}; remove all but one")
    rest = {key: value for key, value in table.items() if key != "kind"}
    spec = read_table(RerankerSpec, rest, where, name=name, kind=kind)
    if kind == "bi-encoder":
        spec = replace(spec, model=spec.model or name)
        if spec.model not in models:
            hint = f"{suggest(str(spec.model), models)}set model = one of: {', '.join(sorted(models)) or '(none)'}"
            raise BenchError(f"{where}: model {spec.model!r} is no dense model of the config; {hint}")
    elif kind == "cross-encoder" and not spec.source:
        fix = 'a folder holding the model, "package:<module>" or "hub:org/name"'
        raise BenchError(f'{where}: kind = "cross-encoder" needs source = {fix}')
    elif kind == "http":
        _check_http(where, spec)
    return spec


def _kind(where: str, name: str, table: Mapping, models: Collection[str]) -> str:
    """The table's kind (a bi-encoder when it names a model or is named after one), and that the
    table's keys apply to it."""
    kind = table.get("kind", "bi-encoder" if "model" in table or name in models else None)
    if kind is None:
        fix = 'set kind = "cross-encoder" or "http", or model = a dense model'
        raise BenchError(f"{where}: no kind, and {name!r} is no model of the config; {fix}")
    if kind not in RERANKER_KINDS:
        hint = suggest(str(kind), RERANKER_KINDS)
        raise BenchError(f"{where}: kind = {kind!r} is unknown; {hint}known: {', '.join(RERANKER_KINDS)}")
    for key in table:
        if key not in _COMMON and key not in _KIND_KEYS[kind]:
            owner = next(k for k, keys in _KIND_KEYS.items() if key in keys)
            raise BenchError(f'{where}: {key!r} applies to kind = "{owner}", not "{kind}"; remove it')
    return kind


def _check_http(where: str, spec: RerankerSpec) -> None:
    url = spec.url
    parts = urllib.parse.urlsplit(url or "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        what = f"url = {http_api.redact_url(url)!r} is not an http(s) URL" if url else "needs url = the endpoint"
        raise BenchError(f'{where}: {what}; set it like url = "https://api.cohere.com/v2/rerank"')
    if spec.shape == "documents" and not spec.api_model:
        fix = 'api_model = the model the service runs, e.g. "rerank-v3.5"'
        raise BenchError(f'{where}: shape = "documents" needs {fix}')


# -- loading -----------------------------------------------------------------------------------


def load_reranker(
    spec: RerankerSpec, embedder: Embedder | None = None, cache: EmbeddingCache | None = None, batch_size: int = 64
) -> Reranker:
    """The reranker of ``spec``; a bi-encoder needs the loaded ``embedder`` of ``spec.model`` (and
    uses ``cache``, embedding ``batch_size`` texts at a time, in its quality pass)."""
    if spec.kind == "bi-encoder":
        if embedder is None:
            raise ValueError(f"reranker {spec.name!r} is a bi-encoder: pass the embedder of model {spec.model!r}")
        return BiEncoderReranker(spec, embedder, cache, batch_size)
    if spec.kind == "cross-encoder":
        return CrossEncoderReranker(spec)
    if spec.kind == "http":
        return HttpReranker(spec)
    raise BenchError(f"reranker {spec.name!r}: kind = {spec.kind!r} is unknown; known: {', '.join(RERANKER_KINDS)}")


class BiEncoderReranker:
    """Inner product of the query's vector with each passage's (normalised, so cosine).
    ``score`` takes vectors through the cache; ``score_live`` embeds the query and the N passages
    now: the honest cost of rescoring without stored vectors."""

    billed_tokens = 0

    def __init__(
        self, spec: RerankerSpec, embedder: Embedder, cache: EmbeddingCache | None = None, batch_size: int = 64
    ):
        self.spec, self.embedder, self.cache, self.batch_size = spec, embedder, cache, batch_size
        self.remote = embedder.spec.remote
        self.searches = 0

    def _cached(self, texts: list[str], role: str) -> np.ndarray:
        if self.cache is None:
            return self.embedder.embed(texts, role)
        return self.cache.embed(self.embedder, texts, role, self.batch_size)[0]

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        return self._score(query, list(texts), self._cached)

    def score_live(self, query: str, texts: Sequence[str]) -> np.ndarray:
        return self._score(query, list(texts), self.embedder.embed)

    def _score(self, query: str, texts: list[str], vectors: Callable[[list[str], str], np.ndarray]) -> np.ndarray:
        self.searches += 1
        if not texts:
            return np.zeros(0, dtype=np.float64)
        q = np.asarray(vectors([query], QUERY), dtype=np.float64)[0]
        return np.asarray(vectors(texts, PASSAGE), dtype=np.float64) @ q


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder reading each (query, passage) pair together.

    Scores are the model's raw logits. CrossEncoder's own default activation is whatever the
    saved config names, else a sigmoid for a one-label model; a float32 sigmoid flattens large
    logits into ties at 1.0, and the identity keeps the model's order whichever it saved. The
    folder is checked at once, the weights load on first use. ``score`` keeps each pair's score,
    so the quality pass never scores a pair twice; ``score_live`` always runs the model."""

    remote = False
    billed_tokens = 0

    def __init__(self, spec: RerankerSpec) -> None:
        self.spec = spec
        self.searches = 0
        self._memo: dict[tuple[str, str], float] = {}
        if not spec.source:
            raise BenchError(f'reranker {spec.name!r}: kind = "cross-encoder" needs source = the model\'s folder')
        self._path = None if is_hub_name(spec.source) else _cross_encoder_folder(spec.name, spec.source)

    @functools.cached_property
    def model(self) -> CrossEncoder:
        if self._path is not None:  # weights are local: never let the hub client reach for the network
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        import torch
        from sentence_transformers import CrossEncoder
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        where = f"reranker {self.spec.name!r}"
        name = str(self._path or str(self.spec.source).removeprefix("hub:"))
        settings = {"max_length": self.spec.max_length, "local_files_only": self._path is not None}
        try:
            model = CrossEncoder(name, device="cpu", activation_fn=torch.nn.Identity(), **settings)
        except (OSError, ValueError) as e:
            if self._path is None:
                fix = "without a network, download it elsewhere and give its folder as source"
                raise BenchError(f"{where}: cannot load {name!r} from the hub ({type(e).__name__}); {fix}") from None
            reason = " ".join(str(e).split())[:160]
            raise BenchError(f"{where}: cannot load the cross-encoder in {name} ({reason})") from None
        if model.num_labels != 1:
            fix = "a reranker needs a one-label cross-encoder (one relevance score per pair)"
            raise BenchError(f"{where}: the model {name} has {model.num_labels} labels; {fix}")
        return model

    def _predict(self, query: str, texts: list[str]) -> np.ndarray:
        pairs = [(query, t) for t in texts]
        scores = self.model.predict(pairs, batch_size=self.spec.batch_size, show_progress_bar=False)
        return np.asarray(scores, dtype=np.float64).reshape(len(texts))

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        self.searches += 1
        todo = [t for t in dict.fromkeys(texts) if (query, t) not in self._memo]
        if todo:
            self._memo.update(((query, t), float(s)) for t, s in zip(todo, self._predict(query, todo)))
        return np.array([self._memo[(query, t)] for t in texts], dtype=np.float64)

    def score_live(self, query: str, texts: Sequence[str]) -> np.ndarray:
        self.searches += 1
        texts = list(texts)
        return self._predict(query, texts) if texts else np.zeros(0, dtype=np.float64)


def _cross_encoder_folder(name: str, source: str) -> Path:
    """The model folder of ``source``, checked to hold a cross-encoder: a bi-encoder's folder
    would load too, with a classifier head of random weights, and rank at random."""
    where = f"reranker {name!r}"
    fix = 'set source to a cross-encoder\'s folder (config.json and weights), "package:<module>" or "hub:org/name"'
    if source.startswith("package:"):
        try:
            path = resolve_source(source)
        except BenchError as e:
            raise BenchError(f"{where}: {e}") from None
    else:
        path = Path(source).expanduser()
        if not path.is_dir():
            raise BenchError(f"{where}: cross-encoder folder {path} does not exist; {fix}")

    def read(file: str, key: str) -> object:
        try:
            return json.loads((path / file).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            return None

    architectures = read("config.json", "architectures")
    if not isinstance(architectures, list):
        raise BenchError(f"{where}: {path} holds no readable config.json naming a model; {fix}")
    heads = ("ForSequenceClassification", "ForCausalLM")
    if read("config_sentence_transformers.json", "model_type") != "CrossEncoder" and not any(
        str(a).endswith(heads) for a in architectures
    ):
        model = ", ".join(map(str, architectures)) or "?"
        fix = 'an embedding model reranks as kind = "bi-encoder"'
        raise BenchError(f"{where}: {path} is not a cross-encoder (its {model} has no classification head); {fix}")
    return path


class HttpReranker(http_api.EndpointCounters):
    """A rerank API. Never cached: its scores and latency are the service's of the day, so
    ``score`` and ``score_live`` both ask it. The key stays in a ``Secret``, out of every
    message; a loopback URL may go without one."""

    remote = True
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    retry_after_cap: float = 60.0  # a server's Retry-After is honoured up to this many seconds

    def __init__(self, spec: RerankerSpec) -> None:
        self.spec = spec
        self.where = f"reranker {spec.name!r}"
        if not spec.url or spec.shape not in SHAPES:
            raise BenchError(f'{self.where}: kind = "http" needs url = the endpoint and shape = "documents" or "texts"')
        self.shown_url = http_api.redact_url(spec.url)
        key = os.environ.get(spec.api_key_env, "").strip() if spec.api_key_env else ""
        if spec.api_key_env and not key and not http_api.is_loopback(spec.url):
            where = f"(api_key_env in [reranker.{spec.name}])"
            raise BenchError(f"{self.where}: set ${spec.api_key_env} to the API key for {self.shown_url} {where}")
        self._key = http_api.Secret(key)
        self._endpoint = http_api.JsonEndpoint(spec.url, self._key, "bench-rerank/0.1", spec.timeout_s)
        self._lock = threading.Lock()
        self.searches = 0
        self.billed_tokens = 0
        self.tokens_estimated = False  # some billed tokens are cl100k's count, not the service's

    def __repr__(self) -> str:
        key = "set" if self._key else "unset"
        return f"HttpReranker(name={self.spec.name!r}, url={self.shown_url!r}, key=${self.spec.api_key_env} {key})"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        return self.score_live(query, texts)

    def score_live(self, query: str, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros(0, dtype=np.float64)
        where, table = f"{self.where} at {self.shown_url}", f"[reranker.{self.spec.name}]"
        try:
            body = self._endpoint.post(
                self._payload(query, texts),
                attempts=self.spec.max_retries + 1,
                delay=lambda attempt, failure: http_api.backoff(
                    attempt, failure, self.backoff_base, self.backoff_cap, self.retry_after_cap
                ),
                on_retry=lambda attempt, what, delay: log.info(
                    "%s: %s; retry %d/%d in %.2fs", where, what, attempt + 1, self.spec.max_retries, delay
                ),
            )
        except http_api.Rejected as rejected:
            raise BenchError(f"{where}: answered {rejected.what}; {self._hint(rejected.status, table)}") from None
        except http_api.Exhausted as exhausted:
            hint = (
                f"the service is rate-limiting: raise max_retries in {table} or try later"
                if exhausted.rate_limited
                else f"check that the server is up, or raise max_retries / timeout_s in {table}"
            )
            raise BenchError(f"{where}: {exhausted}; {hint}") from None
        return self._parse(body, query, texts)

    def _payload(self, query: str, texts: list[str]) -> bytes:
        if self.spec.shape == "texts":
            return json.dumps({"query": query, "texts": texts}).encode("utf-8")
        body = {"model": self.spec.api_model, "query": query, "documents": texts, "top_n": len(texts)}
        return json.dumps(body).encode("utf-8")

    def _hint(self, status: int, table: str) -> str:
        if 300 <= status <= 399:
            return f"a redirect is not followed (the key would go along): set url in {table} to where it leads"
        if status in (401, 403) and not self._key:
            return f"no API key was sent: set api_key_env in {table} and export the key in it"
        if status in (401, 403):
            return f"check the key in ${self.spec.api_key_env} (and that it may use model {self.spec.api_model!r})"
        if status == 404:
            return f"check url in {table} (e.g. https://api.cohere.com/v2/rerank) and api_model {self.spec.api_model!r}"
        if status == 413:
            return f"the request is too large: lower top in {table}"
        return f'check api_model and shape in {table} ("documents" for Cohere, Jina, Voyage; "texts" for TEI)'

    def _malformed(self, why: str) -> BenchError:
        fix = f'is this a rerank endpoint taking shape = "{self.spec.shape}"?'
        return BenchError(f"{self.where} at {self.shown_url}: malformed reply ({self._endpoint.scrub(why)}); {fix}")

    def _parse(self, body: bytes, query: str, texts: list[str]) -> np.ndarray:
        """Scores in input order from a list (TEI) or an object's "results" (Cohere, Jina) or "data"
        (Voyage): items come best first, each naming its input's index."""
        try:
            obj = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise self._malformed(f"not JSON: {body[:60].decode('utf-8', 'replace')!r}") from None
        reply = obj if isinstance(obj, dict) else {}
        items = obj if isinstance(obj, list) else reply.get("results", reply.get("data"))
        if not isinstance(items, list):
            raise self._malformed('no "results" or "data" list')
        n = len(texts)
        scores = np.full(n, np.nan, dtype=np.float64)
        for position, item in enumerate(items):
            index = item.get("index") if isinstance(item, dict) else None
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
                raise self._malformed(f"item {position}: index = {index!r} is not in 0..{n - 1}")
            if not np.isnan(scores[index]):
                raise self._malformed(f"index {index} appears twice")
            value = item.get("relevance_score", item.get("score"))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise self._malformed(f"item {position}: score = {value!r} is not a finite number")
            scores[index] = value
        missing = np.flatnonzero(np.isnan(scores))
        if len(missing):
            raise self._malformed(f"no score for {len(missing)} of {n} texts, the first index {missing[0]}")
        tokens: Any = 0
        estimated = False
        if self.spec.price_per_mtok is not None:  # the service's count when it gives one
            usage = reply.get("usage")
            tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
            if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
                from bench.chunking.tokens import count_tokens

                tokens, estimated = count_tokens(query) + sum(count_tokens(t) for t in texts), True
        with self._lock:
            self.searches += 1
            self.billed_tokens += tokens
            self.tokens_estimated = self.tokens_estimated or estimated
        return scores


# -- costs -------------------------------------------------------------------------------------


def reranker_costs(
    spec: RerankerSpec,
    searches_per_1k: int = 1000,
    tokens_per_search: float | None = None,
    ms_mean: float | None = None,
) -> dict:
    """What reranking 1000 queries costs, and where the price comes from. ``searches_per_1k``:
    searches billed per 1000 queries; ``tokens_per_search``: query + documents tokens of one;
    ``ms_mean``: measured milliseconds per query. What is not known stays None, never 0."""
    table = f"[reranker.{spec.name}]"
    cost: float | None = None
    if spec.price_per_1k_searches is not None:
        cost = spec.price_per_1k_searches * searches_per_1k / 1000
        source = f"${spec.price_per_1k_searches:g} per 1k searches in {table}"
    elif spec.price_per_mtok is not None:
        source = f"${spec.price_per_mtok:g}/Mtok in {table}"
        if tokens_per_search is None:
            source = f"unknown: {source}, but no tokens per search"
        else:
            cost = tokens_per_search * 1000 / 1e6 * spec.price_per_mtok
            source += f" x {tokens_per_search:.0f} tokens per search"
    elif spec.hourly_usd is not None:
        source = f"${spec.hourly_usd:g}/hour in {table}"
        if ms_mean is None:
            source = f"unknown: {source}, but no measured latency"
        else:  # ms per query x 1000 queries, in hours
            cost = ms_mean / 1000 * 1000 / 3600 * spec.hourly_usd
            source += f" x {ms_mean:.1f} ms per query"
    elif spec.kind in ("bi-encoder", "cross-encoder"):
        cost, source = 0.0, "local model"
    else:
        source = f"unknown: set price_per_1k_searches or price_per_mtok in {table}"
    return {"rerank_price_source": source, "rerank_cost_per_1k_queries_usd": cost}
