"""An HTTP front for the scripted provider, for test code that runs in another process.

The VS Code tests run inside code-server's extension host and in a Playwright driver,
not in pytest; they queue the model's replies and read the requests the server sent
through this small JSON API on 127.0.0.1:

- `POST /script` with a list of replies (below), queued in order;
- `GET /requests`: `{"requests": [...], "headers": [...]}`, every chat request so far;
- `POST /release`: lets every stalled reply go on;
- `POST /reset`: drops the replies still queued and releases stalled ones (the request
  log stays, for pytest to read after the run).

A reply is `{"text": "...", "chunkSize"?, "chunkDelay"?, "usage"?, "stallAfter"?}`,
`{"calls": [[id, name, arguments], ...], "text"?, "usage"?, "delay"?}` (`delay`: seconds
before the calls stream) or `{"error": status, "body"?, "headers"?}` (`{"Retry-After":
"3"}` makes the retry wait); `usage` is the billed input token count, and `cost`,
`cached` and `cacheWrite` (with `usage`) the call's cost in USD and the input tokens read
from and written to the prompt cache, as OpenRouter reports them.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.scripted_provider import STOP_POLL_SECONDS, Calls, Error, ScriptedProvider, Text, usage


def reply_from_json(data: dict[str, Any]) -> Text | Calls | Error:
    """One queued reply from its JSON description."""
    billed = (
        usage(
            data["usage"],
            cost=data.get("cost"),
            cached=data.get("cached"),
            cache_write=data.get("cacheWrite"),
        )
        if data.get("usage") is not None
        else None
    )
    if "error" in data:
        headers = {str(k): str(v) for k, v in (data.get("headers") or {}).items()}
        return Error(int(data["error"]), data.get("body"), headers=headers)
    if "calls" in data:
        calls = [(str(c[0]), str(c[1]), c[2]) for c in data["calls"]]
        delay = float(data.get("delay", 0.0))
        return Calls(calls, text=data.get("text", ""), usage=billed, delay=delay)
    if "text" in data:
        return Text(
            data["text"],
            usage=billed,
            thinking=data.get("thinking"),
            chunk_size=int(data.get("chunkSize", 8)),
            chunk_delay=float(data.get("chunkDelay", 0.0)),
            stall_after=data.get("stallAfter"),
        )
    raise ValueError(f"a reply needs text, calls or error: {data!r}")


class ProviderControl:
    """Serves the control API for one ScriptedProvider."""

    def __init__(self, provider: ScriptedProvider) -> None:
        self.provider = provider
        self._stalled: list[Text] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(STOP_POLL_SECONDS,), daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ProviderControl:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def release(self) -> None:
        """Let every stalled reply (queued or being answered) go on."""
        for reply in self._stalled:
            reply.release.set()

    def reset(self) -> None:
        self.release()
        with self.provider.received:
            self.provider.replies.clear()

    def script(self, replies: list[dict[str, Any]]) -> None:
        parsed = [reply_from_json(reply) for reply in replies]
        stalled = [r for r in parsed if isinstance(r, Text) and r.stall_after is not None]
        self._stalled.extend(stalled)
        self.provider.script(*parsed)


def _handler_for(control: ProviderControl) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            if self.path == "/requests":
                provider = control.provider
                with provider.received:
                    payload = {"requests": provider.requests, "headers": provider.headers}
                    self._json(200, payload)
            else:
                self._json(404, {"error": f"no such path {self.path}"})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            try:
                body = json.loads(self.rfile.read(length) or b"null")
                if self.path == "/script":
                    control.script(body)
                elif self.path == "/release":
                    control.release()
                elif self.path == "/reset":
                    control.reset()
                else:
                    self._json(404, {"error": f"no such path {self.path}"})
                    return
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                self._json(400, {"error": str(exc)})
                return
            self._json(200, {"ok": True})

        def _json(self, status: int, payload: Any) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler
