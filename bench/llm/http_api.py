"""What every client of an OpenAI-compatible HTTP API needs: a key that never shows, no redirects
(urllib would re-send the key), retryable failures with the server's ``Retry-After``, and the
human part of an error body, for one-line errors. ``JsonEndpoint`` puts them together: one URL that
JSON is POSTed to, once (``send``) or with retries (``post``)."""

from __future__ import annotations

import email.utils
import functools
import http.client
import json
import math
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import IO

from bench.errors import BenchError

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine: a server there needs no key and no proxy."""
    return (urllib.parse.urlsplit(url).hostname or "") in LOOPBACK


MAX_ERROR_BODY = 4096


class Secret:
    """Holds the API key so that no repr, vars() or traceback of the embedder shows it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "<redacted>" if self._value else "<unset>"

    __str__ = __repr__

    def __reduce__(self) -> str | tuple[object, ...]:  # never pickle the key along with an embedder
        raise TypeError("the API key cannot be pickled")


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error here: urllib would re-send the Authorization header to wherever it points."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


class Retryable(Exception):
    """One failed attempt worth retrying; ``what`` is already free of the key."""

    def __init__(self, what: str, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


class Aborted(Exception):
    """Another batch of the same call failed; stop retrying this one."""


class Rejected(Exception):
    """A 4xx (or 3xx) that another attempt would not change; ``what`` and ``location`` are free of the key."""

    def __init__(self, status: int, what: str, location: str = "") -> None:
        super().__init__(what)
        self.status = status
        self.what = what
        self.location = location


class Exhausted(Exception):
    """Every attempt failed with a ``Retryable``; ``str()`` reads "failed N attempts (last: ...)"."""

    def __init__(self, last: str, attempts: int) -> None:
        super().__init__(f"failed {attempts} attempt{'s' if attempts != 1 else ''} (last: {last})")
        self.last = last
        self.attempts = attempts

    @property
    def rate_limited(self) -> bool:
        return self.last.startswith("HTTP 429")


def as_bool(value: object, name: str, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "1", "false", "no", "0"}:
        return value.strip().lower() in {"true", "yes", "1"}
    raise BenchError(f"{where}: {name} = {value!r} must be true or false")


def as_int(value: object, name: str, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise BenchError(f"{where}: {name} = {value!r} must be an integer >= {minimum}")
    return value


def redact_url(url: str) -> str:
    """The URL without any ``user:password@`` part."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit((parts.scheme, "***@" + host, parts.path, parts.query, parts.fragment))


def unreachable(url: str, timeout_s: float = 3.0) -> str | None:
    """Why nothing at ``url``'s host and port accepts a TCP connection (the proxy's, where the
    environment names one for it, as requests go), or None when something does. Nothing is sent:
    the connection is closed as soon as it is made."""
    parts = urllib.parse.urlsplit(url)
    try:
        host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "its port is not a number"
    via = ""
    proxy = urllib.request.getproxies().get(parts.scheme) if host not in LOOPBACK else None
    if proxy and not urllib.request.proxy_bypass(host):
        proxied = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port, via = proxied.hostname or "", proxied.port or 80, f" (through the proxy {redact_url(proxy)})"
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except socket.gaierror:
        return f"cannot find the host {host}{via}"
    except ConnectionRefusedError:
        return f"connection refused{via}"
    except TimeoutError:
        return f"no answer within {timeout_s:g}s{via}"
    except OSError as e:
        return f"{e.strerror or type(e).__name__}{via}"


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds (a number or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def server_message(body: bytes) -> str:
    """The human part of an error body: ``error.message``, ``error``, ``detail`` or the text."""
    text = body.decode("utf-8", "replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    if isinstance(obj, dict):
        err = obj.get("error", obj.get("detail", obj.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return err if isinstance(err, str) else json.dumps(err)
    return text


def backoff(attempt: int, failure: Retryable, base: float, cap: float, retry_after_cap: float) -> float:
    """Seconds before the next attempt: the server's ``Retry-After`` up to ``retry_after_cap``, else
    full jitter, uniform(0, min(cap, base * 2**attempt))."""
    if failure.retry_after is not None:
        return min(retry_after_cap, failure.retry_after)
    return random.uniform(0, min(cap, base * 2**attempt))


class JsonEndpoint:
    """One URL that JSON is POSTed to with the key as ``Authorization: Bearer``; counts ``requests``
    (retries included) and ``retries``; safe to use from several threads."""

    def __init__(self, url: str, key: Secret, user_agent: str, timeout_s: float) -> None:
        self.url = url
        self.shown_url = redact_url(url)
        self.timeout_s = timeout_s
        self._key = key
        self._user_agent = user_agent
        # A local server is reached directly, whatever proxy the environment names.
        proxies: dict[str, str] | None = {} if is_loopback(url) else None
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler(proxies), NoRedirects())
        self._lock = threading.Lock()
        self.requests = 0
        self.retries = 0

    def scrub(self, text: str) -> str:
        """One line, short, and without the key even if the server echoed it back."""
        key = self._key.reveal()
        if key:
            text = text.replace(key, "***")
        text = " ".join(text.split())
        return text if len(text) <= 200 else text[:197] + "..."

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": self._user_agent}
        if self._key:
            headers["Authorization"] = "Bearer " + self._key.reveal()
        return headers

    def send(self, payload: bytes) -> bytes:
        """POST once: the body of a 2xx, ``Retryable`` when worth another try, ``Rejected`` otherwise."""
        request = urllib.request.Request(self.url, data=payload, headers=self._headers(), method="POST")
        with self._lock:
            self.requests += 1
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            status, reason = exc.code, self.scrub(str(exc.reason or ""))
            try:
                detail = self.scrub(server_message(exc.read(MAX_ERROR_BODY)))
            except Exception:  # the body is only a courtesy
                detail = ""
            headers = exc.headers
            exc.close()
            what = f"HTTP {status} {reason}".rstrip() + (f": {detail}" if detail else "")
            if status == 429 or 500 <= status <= 599:
                raise Retryable(what, retry_after_seconds(headers.get("Retry-After") if headers else None)) from None
            location = self.scrub(redact_url(headers.get("Location", ""))) if headers else ""
            raise Rejected(status, what, location) from None
        except (TimeoutError, http.client.HTTPException, OSError) as exc:
            raise Retryable(self._describe_network_error(exc)) from None

    def _describe_network_error(self, exc: BaseException) -> str:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return f"timed out after {self.timeout_s:g}s"
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused"
        text = self.scrub(str(reason)) or type(reason).__name__
        return f"{type(reason).__name__}: {text}" if type(reason).__name__ not in text else text

    def post(
        self,
        payload: bytes | Callable[[], bytes],
        attempts: int,
        delay: Callable[[int, Retryable], float],
        abort: threading.Event | None = None,
        on_retry: Callable[[int, str, float], None] | None = None,
    ) -> bytes:
        """``send`` until an answer, up to ``attempts`` times, waiting ``delay(attempt, failure)`` between;
        ``payload`` may instead be one attempt of the caller's own (which sends). ``Exhausted`` when every
        attempt failed, ``Aborted`` once ``abort`` is set; ``on_retry(attempt, what, seconds)`` hears each retry."""
        attempt_once = payload if callable(payload) else functools.partial(self.send, payload)
        abort = abort or threading.Event()
        last = "no attempt made"
        for attempt in range(attempts):
            if abort.is_set():
                raise Aborted()
            try:
                return attempt_once()
            except Retryable as failure:
                last = failure.what
                if attempt + 1 >= attempts:
                    break
                seconds = delay(attempt, failure)
                with self._lock:
                    self.retries += 1
                if on_retry is not None:
                    on_retry(attempt, last, seconds)
                if abort.wait(seconds):
                    raise Aborted() from None
        raise Exhausted(last, attempts)


class EndpointCounters:
    """A client's ``requests`` and ``retries``: those of its ``_endpoint``."""

    _endpoint: JsonEndpoint

    @property
    def requests(self) -> int:
        """HTTP requests sent, retries included."""
        return self._endpoint.requests

    @property
    def retries(self) -> int:
        return self._endpoint.retries
