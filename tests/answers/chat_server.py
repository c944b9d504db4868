"""A local chat-completions endpoint for the answer layer's tests: it records every request and
answers with what a test's ``reply`` function makes of it (None: a refusal)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from bench.llm.client import ChatClient
from tests.helpers import JsonHandler, LocalServer


class ChatServer(LocalServer):
    """``plan`` scripts the first answers ("429", "500", "503", "401" echoing the key, "slow": the reply
    after half a second, "ok"); then every request is answered with ``reply(body)``: a string as the
    message's content, None as a refusal."""

    def __init__(
        self,
        reply: Callable[[dict], str | None],
        plan: tuple[str, ...] = (),
        utf8: bool = False,
        usage: Callable[[dict], dict] | None = None,
    ) -> None:
        """``utf8``: replies are sent as UTF-8 JSON (Chinese characters as they are) rather than with \\u escapes;
        ``usage(body)``: the usage reported (else 100 prompt and 10 completion tokens)."""
        self.reply, self.plan, self.usage = reply, list(plan), usage
        self.received: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.received.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    action = server.plan.pop(0) if server.plan else "ok"
                if action == "429":
                    self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
                elif action in ("500", "503"):
                    self._send(int(action), {"error": "overloaded"})
                elif action == "401":
                    self._send(401, {"error": {"message": f"bad key {self.headers.get('Authorization')}"}})
                else:
                    if action == "slow":
                        time.sleep(0.5)
                    content = server.reply(body)
                    message = {"role": "assistant", "content": content}
                    if content is None:
                        message["refusal"] = "I can't help with that."
                    usage = (
                        server.usage(body)
                        if server.usage
                        else {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
                    )
                    obj = {"choices": [{"index": 0, "message": message}], "usage": usage}
                    self._send(200, json.dumps(obj, ensure_ascii=False).encode() if utf8 else obj)

        self.serve(Handler)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def prompts(self) -> list[str]:
        """Every message's content the server was sent, system prompts included."""
        return [m["content"] for r in self.received for m in r["body"]["messages"]]


def quick_retries(monkeypatch, key_env: str | None = None, key: str = "") -> None:
    """The chat client retries without the waits a real server needs (a 429 or 5xx is retried at once);
    with ``key_env``, the key a test's client sends is ``key``."""
    monkeypatch.setattr(ChatClient, "backoff_base", 0.001)
    monkeypatch.setattr(ChatClient, "backoff_cap", 0.005)
    if key_env is not None:
        monkeypatch.setenv(key_env, key)
