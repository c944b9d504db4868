"""A scripted, misbehaving OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1 for tests.

Each request takes the next behaviour from ``plan``; when the plan is used up, ``default``
applies. Behaviours:

``ok``           vectors + usage                ``no-usage``    vectors, no ``usage``
``429``          Too Many Requests, Retry-After ``500`` / ``503`` server errors
``401-echo``     Unauthorized, echoing the Authorization header back in the message
``404``          Not Found                      ``sleep``       wait ``sleep_s``, then ``ok``
``bad-json``     200 with a body that is not JSON
``wrong-count``  one embedding too few          ``dup-index``   two items with index 0
``ragged``       embeddings of different lengths
``shuffled``     the items in reverse order (with correct ``index`` fields)
``base64``       embeddings as base64 little-endian float32, whatever was asked
``redirect``     307 to ``/v1/elsewhere/embeddings``
``drop``         the connection closed without any response, as when a server or proxy dies

Headers are recorded with lower-case names. Vectors are a deterministic function of the text
(``vector_for``), so a test can check that every row came back in its place.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import threading
import time

import numpy as np

from tests.helpers import JsonHandler, LocalServer


def vector_for(text: str, dims: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dims).astype(np.float32)


class FakeEmbeddingServer(LocalServer):
    def __init__(
        self,
        plan=(),
        default: str = "ok",
        dims: int = 8,
        sleep_s: float = 0.5,
        retry_after: str | None = "0",
        usage_tokens: int = 7,
    ) -> None:
        self.plan = list(plan)
        self.default = default
        self.dims = dims
        self.sleep_s = sleep_s
        self.retry_after = retry_after
        self.usage_tokens = usage_tokens  # per text
        self.received: list[dict] = []  # {"headers", "body", "behaviour", "at": time.monotonic() on arrival}
        self._lock = threading.Lock()
        self.serve(self._handler_class())

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _next(self) -> str:
        with self._lock:
            return self.plan.pop(0) if self.plan else self.default

    def _handler_class(self):
        server = self

        class Handler(JsonHandler):
            def handle(self) -> None:
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def _error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
                self._send(code, json.dumps({"error": {"message": message, "type": "test"}}).encode(), headers)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                behaviour = server._next()
                body = json.loads(raw)
                with server._lock:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    server.received.append(
                        {"headers": headers, "body": body, "behaviour": behaviour, "at": time.monotonic()}
                    )
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if behaviour == "drop":
                    self.close_connection = True
                    self.request.shutdown(socket.SHUT_RDWR)
                    return None
                if behaviour == "429":
                    headers = {"Retry-After": server.retry_after} if server.retry_after is not None else {}
                    return self._error(429, "slow down", headers)
                if behaviour in ("500", "503"):
                    return self._error(int(behaviour), "server trouble")
                if behaviour == "401-echo":
                    return self._error(401, f"invalid key in header {self.headers.get('Authorization')!r}")
                if behaviour == "redirect":
                    return self._error(307, "moved", {"Location": server.base_url + "/elsewhere/embeddings"})
                if behaviour == "404":
                    return self._error(404, f"model {body.get('model')!r} not found")
                if behaviour == "sleep":
                    server._stop.wait(server.sleep_s)
                if behaviour == "bad-json":
                    return self._send(200, b"<html>this is not json")
                vectors = [vector_for(t, server.dims) for t in texts]
                as_b64 = behaviour == "base64" or body.get("encoding_format") == "base64"
                data = [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode()
                        if as_b64
                        else [float(x) for x in v],
                    }
                    for i, v in enumerate(vectors)
                ]
                if behaviour == "wrong-count":
                    data = data[:-1]
                elif behaviour == "dup-index" and len(data) > 1:
                    data[1]["index"] = 0
                elif behaviour == "ragged":
                    data[-1]["embedding"] = (
                        data[-1]["embedding"][:-1]
                        if not as_b64
                        else base64.b64encode(vectors[-1][:-1].astype("<f4").tobytes()).decode()
                    )
                elif behaviour == "shuffled":
                    data = data[::-1]
                reply = {"object": "list", "data": data, "model": body.get("model")}
                if behaviour != "no-usage":
                    n = server.usage_tokens * len(texts)
                    reply["usage"] = {"prompt_tokens": n, "total_tokens": n}
                self._send(200, json.dumps(reply).encode())

        return Handler
