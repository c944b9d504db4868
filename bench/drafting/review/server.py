"""The review app's HTTP server: the page and a small JSON API over the draft, on 127.0.0.1 only.

Every request needs the session token (the page's address carries it; the page then sends it as the
``X-Bench-Token`` header), compared in constant time; every change also needs the CSRF token embedded
in the page (``X-Bench-CSRF``). The Host header must name 127.0.0.1 or localhost at this port, so a
site that rebinds its DNS name to 127.0.0.1 gets nothing. Documents are named by their corpus id,
never by a path; whatever is not one of the routes below is 404.

    GET  /?token=T                          the page
    GET  /api/questions                     every question's id, text, status, evidence count, version
    GET  /api/question?id=Q&context=N       one question: evidence, passages in windows of the document
    GET  /api/doc?id=D&start=S&end=E        a stretch of a document (characters S..E)
    GET  /api/search?q=TERMS                documents holding every term, with snippets and offsets
    POST /api/change  {"id", "version", "op", ...}
                                            one change; 409 with the stored question when the version is old

Offsets are characters (code points) of the document text, as the goldset counts them.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bench.drafting.review.search import search
from bench.drafting.review.store import BadChange, ReviewStore, Stale
from bench.inputs.answers import JsonObject
from bench.report.inspector import script_json

HOST = "127.0.0.1"
CONTEXT = 400  # characters of the document shown either side of a passage
MAX_CONTEXT = 20_000
MAX_WINDOW = 60_000  # characters one /api/doc reply holds at most
MAX_BODY = 1 << 20
TOKEN_HEADER, CSRF_HEADER = "X-Bench-Token", "X-Bench-CSRF"


class ReviewServer(ThreadingHTTPServer):
    """Serves one draft's review; ``url`` is the address to open, token included."""

    daemon_threads = True

    def __init__(self, store: ReviewStore, port: int = 0, title: str = "") -> None:
        super().__init__((HOST, port), _Handler)
        self.store = store
        self.port = int(self.server_address[1])
        self.token = secrets.token_urlsafe(24)
        self.csrf = secrets.token_urlsafe(24)
        self.hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        self.title = title or store.draft.path.name
        self.run_label = ""  # "distractor in <run>" when --from-run added passages

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/?token={self.token}"

    def page(self) -> str:
        data = {
            "token": self.token,
            "csrf": self.csrf,
            "draft": str(self.store.draft.path),
            "goldset": str(self.store.goldset),
            "title": self.title,
            "run": self.run_label,
        }
        return render_page(data)


class _Handler(BaseHTTPRequestHandler):
    server: ReviewServer
    server_version = "bench-review"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the address and, at the end, where the goldset is."""

    # --- checks ----------------------------------------------------------------------------------

    def _allowed(self, url_token: str | None) -> bool:
        """The Host names this server, and the session token is right; a 403 sent otherwise."""
        if self.headers.get("Host", "") not in self.server.hosts:
            self._error(HTTPStatus.FORBIDDEN, "wrong Host header")
            return False
        token = self.headers.get(TOKEN_HEADER) or url_token or ""
        if not hmac.compare_digest(token.encode(), self.server.token.encode()):
            self._error(HTTPStatus.FORBIDDEN, "missing or wrong session token; open the address bench printed")
            return False
        return True

    # --- routes ----------------------------------------------------------------------------------

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if not self._allowed(query.get("token") if url.path == "/" else None):
            return
        store = self.server.store
        try:
            if url.path == "/":
                self._send(HTTPStatus.OK, self.server.page().encode(), "text/html; charset=utf-8")
            elif url.path == "/api/questions":
                self._json({"questions": store.summaries(), "written": store.written()})
            elif url.path == "/api/question":
                context = min(_int(query, "context", CONTEXT), MAX_CONTEXT)
                self._json({"question": store.question(query.get("id", ""), max(context, 0))})
            elif url.path == "/api/doc":
                start = max(_int(query, "start", 0), 0)
                end = min(_int(query, "end", start + MAX_WINDOW), start + MAX_WINDOW)
                window = store.window(query.get("id", ""), start, max(end, start), 0)
                self._json({"doc": query.get("id"), "window": window})
            elif url.path == "/api/search":
                self._json(search(store, query.get("q", "")))
            else:
                self._error(HTTPStatus.NOT_FOUND, "not found")
        except (KeyError, BadChange):
            self._error(HTTPStatus.NOT_FOUND, "not found")
        except ValueError as e:
            self._error(HTTPStatus.BAD_REQUEST, str(e))

    def do_POST(self) -> None:
        if not self._allowed(None):
            return
        csrf = self.headers.get(CSRF_HEADER) or ""
        if not hmac.compare_digest(csrf.encode(), self.server.csrf.encode()):
            self._error(HTTPStatus.FORBIDDEN, "missing or wrong CSRF token; reload the page")
            return
        if urlsplit(self.path).path != "/api/change":
            self._error(HTTPStatus.NOT_FOUND, "not found")
            return
        body = self._body()
        if body is None:
            return
        store = self.server.store
        qid, version, op = body.get("id"), body.get("version"), body.get("op")
        if not (isinstance(qid, str) and isinstance(version, str) and isinstance(op, str)):
            self._error(HTTPStatus.BAD_REQUEST, 'a change needs "id", "version" and "op" as strings')
            return
        context = min(max(_int(body, "context", CONTEXT), 0), MAX_CONTEXT)
        try:
            store.change(qid, version, op, body)
        except Stale:
            stored = store.question(qid, context)
            self._json(
                {"error": "changed elsewhere (another tab?); shown as stored now", "question": stored},
                HTTPStatus.CONFLICT,
            )
            return
        except BadChange as e:
            self._error(HTTPStatus.BAD_REQUEST, str(e))
            return
        self._json({"question": store.question(qid, context), "written": store.written()})

    def _body(self) -> JsonObject | None:
        """The request's JSON object as sent: a change's arguments are checked as the store reads them."""
        if self.headers.get_content_type() != "application/json":
            self._error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send JSON")
            return None
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "a change is at most 1 MiB")
            return None
        try:
            body = json.loads(self.rfile.read(length))
        except (ValueError, UnicodeDecodeError):
            body = None
        if not isinstance(body, dict):
            self._error(HTTPStatus.BAD_REQUEST, "send one JSON object")
            return None
        return body

    # --- replies ---------------------------------------------------------------------------------

    def _json(self, obj: object, status: HTTPStatus = HTTPStatus.OK) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode(), "application/json; charset=utf-8")

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._json({"error": message}, status)

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Content-Security-Policy", page_csp() + "; frame-ancestors 'none'")
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the tab was closed mid-reply


def _int(query: Mapping[str, object], key: str, default: int) -> int:
    value = query.get(key)
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value))
    except ValueError:
        raise ValueError(f'"{key}" must be an integer') from None


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


@functools.cache
def page_csp() -> str:
    """Only the page's own script and style run; the script may talk to this server and nothing else."""
    return (
        f"default-src 'none'; script-src {_csp_hash(_static('review.js'))}; "
        f"style-src {_csp_hash(_static('review.css'))}; connect-src 'self'; img-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


def render_page(data: dict[str, str]) -> str:
    page = _static("review.html")
    return (
        page.replace("@CSP@", page_csp())
        .replace("@CSS@", _static("review.css"))
        .replace("@JS@", _static("review.js"))
        .replace("@DATA@", script_json(data))
    )


@functools.cache
def _static(name: str) -> str:
    """A file of static/, embedded exactly as stored: the policy allows the script and style by hash."""
    return resources.files("bench.drafting.review").joinpath("static", name).read_text(encoding="utf-8")
