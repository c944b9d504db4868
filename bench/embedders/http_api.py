"""What every client of an OpenAI-compatible HTTP API needs: a key that never shows, no redirects
(urllib would re-send the key), retryable failures with the server's ``Retry-After``, and the
human part of an error body, for one-line errors."""

from __future__ import annotations

import email.utils
import json
import math
import time
import urllib.parse
import urllib.request

from bench.errors import BenchError

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
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

    def __reduce__(self):  # never pickle the key along with an embedder
        raise TypeError("the API key cannot be pickled")


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an error here: urllib would re-send the Authorization header to wherever it points."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class Retryable(Exception):
    """One failed attempt worth retrying; ``what`` is already free of the key."""

    def __init__(self, what: str, retry_after: float | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


class Aborted(Exception):
    """Another batch of the same call failed; stop retrying this one."""


def as_bool(value, name: str, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "1", "false", "no", "0"}:
        return value.strip().lower() in {"true", "yes", "1"}
    raise BenchError(f"{where}: {name} = {value!r} must be true or false")


def as_int(value, name: str, where: str, minimum: int) -> int:
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
