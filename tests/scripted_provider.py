"""A small scripted OpenAI-compatible HTTP server for the tests, on 127.0.0.1.

Tests queue the replies the "model" will give (text, tool calls, usage, errors with a
status and a body, a stream that stalls or breaks off) and read back every request body
the server under test sent. Replies stream as server-sent events when the request asks
for `stream: true`, and come whole otherwise, as a real provider does.

Like a real provider it speaks HTTP/1.1 keep-alive: a whole reply has a Content-Length
and a finished stream (Text, Calls) is sent chunked, so a client that reads each reply
to its end can send the next request on the same connection. `connections` counts the
TCP connections accepted, so a test can tell whether a client reuses its connection.
Like a gateway, it can close a connection left idle for `idle_close` seconds, and drop
a request without a reply (`Drop`), as a server that closes a kept-alive connection
just as it is reused does.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# How often the serving thread looks whether `stop` was called (socketserver's default,
# 0.5 s, is waited out by every test that stops a provider).
STOP_POLL_SECONDS = 0.02


@dataclass
class Text:
    """The model answers with text (and optionally thinking), streamed in pieces."""

    text: str
    usage: dict[str, Any] | None = None
    thinking: str | None = None
    chunk_size: int = 8
    # Seconds between content chunks, so that a client can watch the reply stream in.
    chunk_delay: float = 0.0
    # Stall after this many content chunks until `release` is set (for cancel tests).
    stall_after: int | None = None
    release: threading.Event = field(default_factory=threading.Event)


@dataclass
class Calls:
    """The model asks for tool calls: (id, name, arguments-object-or-JSON-text)."""

    calls: list[tuple[str, str, Any]]
    text: str = ""
    usage: dict[str, Any] | None = None
    # Seconds the model "thinks" before the calls come (a streamed reply sends nothing
    # meanwhile), so that a client can act while the task waits for the model.
    delay: float = 0.0


@dataclass
class Error:
    """The provider answers with an error status and body."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Truncated:
    """A stream that sends some text and then ends without finishing the reply."""

    text: str = "partial"


@dataclass
class Hang:
    """The provider accepts the request and says nothing until released (or forever)."""

    release: threading.Event = field(default_factory=threading.Event)
    then: Text | None = None


@dataclass(frozen=True)
class Drop:
    """The request arrives and nothing comes back: the provider closes the connection
    (as a gateway does that closes an idle connection just as the client reuses it)."""


@dataclass
class Respond:
    """The reply is chosen when the request arrives: `decide(body)` returns the reply
    (a Text, Calls, Error, ...). For long runs whose order of turn and summariser
    requests the test does not want to spell out."""

    decide: Callable[[dict[str, Any]], Any]


@dataclass
class Raw:
    """A reply written exactly as given, for replies no well-behaved provider sends.

    For a streamed request, `events` go out one by one: a dict or list as
    `data: <JSON>`, a string verbatim as `data: <string>`, a `Comment` as `: <text>`.
    For a whole (`stream: false`) request, `body` is the reply's body. `end` says how
    the reply stops: "done" (`data: [DONE]`, or the whole body), "close" (the connection
    closes: no [DONE], or a body shorter than its Content-Length), "reset" (the same,
    with a TCP reset instead of a close) or, for a stream, "hold" (`data: [DONE]`, then
    the body never ends: the connection stays open, silent, until the provider stops).
    """

    events: list[Any] = field(default_factory=list)
    end: str = "close"
    body: str = ""


@dataclass(frozen=True)
class Comment:
    """An SSE comment line (`: text`), as providers send for keep-alive."""

    text: str = "keep-alive"


@dataclass
class Drip:
    """A stream that never finishes but is never silent for long.

    Every `interval` seconds it sends a keep-alive comment (`what="comment"`), a
    one-character content chunk (`"content"`) or one more byte of a data line that
    never ends (`"bytes"`), until the client hangs up or the provider stops.
    """

    what: str = "comment"
    interval: float = 0.2
    sent: int = 0


def usage(
    input_tokens: int,
    output_tokens: int = 10,
    *,
    cached: int | None = None,
    reasoning: int | None = None,
    cost: float | None = None,
    cache_write: int | None = None,
) -> dict[str, Any]:
    """A `usage` object as OpenAI-compatible providers send it: the cached input and
    reasoning tokens in their details when given, OpenRouter's `cost` and its cache
    writes (`prompt_tokens_details.cache_write_tokens`) when given."""
    body: dict[str, Any] = {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }
    if cached is not None:
        body["prompt_tokens_details"] = {"cached_tokens": cached}
    if cache_write is not None:
        body.setdefault("prompt_tokens_details", {})["cache_write_tokens"] = cache_write
    if reasoning is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    if cost is not None:
        body["cost"] = cost
    return body


class ScriptedProvider:
    """The server: a queue of replies and a log of requests."""

    def __init__(self, model: str = "test/model", context_length: int | None = 128_000) -> None:
        self.model = model
        self.context_length = context_length
        # The model list's field that gives the window: OpenRouter's `context_length`,
        # LiteLLM's `max_input_tokens` or vLLM's `max_model_len`.
        self.window_field = "context_length"
        self.replies: deque[Any] = deque()
        self.requests: list[dict[str, Any]] = []
        # Every chat request body exactly as it arrived (for byte-for-byte comparisons).
        self.raw_requests: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.model_list_requests = 0
        # Seconds between the bytes of the model list (None: it is sent at once); a
        # provider that trickles its /models answer.
        self.models_drip: float | None = None
        # The status of the model list (not 200: an error, as from a provider without one).
        self.models_status = 200
        # TCP connections accepted so far (each a new handshake for the client).
        self.connections = 0
        # Seconds after which an idle kept-alive connection is closed (None: never), as
        # gateways do (uvicorn and Node after 5 s).
        self.idle_close: float | None = None
        # Seconds spent writing chat replies (from the request read to the reply's last
        # byte): the "model time" a benchmark leaves out of the client's time.
        self.busy_seconds = 0.0
        self._sockets: set[socket.socket] = set()
        # Requests being answered now (a Hang counts until released), and the most at once.
        self.active = 0
        self.most_active = 0
        self.received = threading.Condition()
        self.stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(STOP_POLL_SECONDS,), daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> ScriptedProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for reply in self.replies:
            if isinstance(reply, Hang | Text):
                reply.release.set()
        self._server.shutdown()
        self._server.server_close()
        # Kept-alive connections end too: their handler threads wait for a next request.
        with self.received:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def script(self, *replies: Any) -> None:
        """Queue replies, answered in order, one per chat completion request."""
        self.replies.extend(replies)

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Block until at least `count` chat requests arrived; returns them."""
        deadline = time.monotonic() + timeout
        with self.received:
            while len(self.requests) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"only {len(self.requests)} of {count} requests arrived")
                self.received.wait(remaining)
            return list(self.requests)

    def chat_requests(self, *, with_tools: bool | None = None) -> list[dict[str, Any]]:
        """Requests received, optionally only those with (or without) tools the model may
        call: the turns' requests (or the compaction summariser's, whose tools are
        offered with `tool_choice: "none"`)."""
        if with_tools is None:
            return list(self.requests)
        return [r for r in self.requests if callable_tools(r) == with_tools]


def callable_tools(body: dict[str, Any]) -> bool:
    """Whether a request offers tools the model may call."""
    return bool(body.get("tools")) and body.get("tool_choice") != "none"


def _handler_for(provider: ScriptedProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Each SSE event goes out at once (TCP_NODELAY), as a provider's stream does;
        # Nagle's algorithm would hold it back until the client's delayed ACK (40 ms).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            return

        def setup(self) -> None:
            # Waiting for the next request on the connection times out after this long,
            # and the connection is closed (reads of a request and writes are immediate).
            self.timeout = provider.idle_close
            super().setup()
            self.chunked = False
            with provider.received:
                provider.connections += 1
                provider._sockets.add(self.connection)

        def finish(self) -> None:
            with provider.received:
                provider._sockets.discard(self.connection)
            super().finish()

        def handle_one_request(self) -> None:
            self.counted = False
            self.chunked = False
            try:
                super().handle_one_request()
            finally:
                if self.counted:
                    with provider.received:
                        provider.active -= 1
                        provider.received.notify_all()

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                provider.model_list_requests += 1
                if provider.models_status != 200:
                    self._json(provider.models_status, {"error": {"message": "no model list"}})
                    return
                data = []
                if provider.context_length is not None:
                    window = {provider.window_field: provider.context_length}
                    data.append({"id": provider.model, **window})
                data.append({"id": "other/model", "context_length": 4096})
                if provider.models_drip is not None:
                    self._trickle(json.dumps({"data": data}).encode(), provider.models_drip)
                    return
                self._json(200, {"data": data})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw or b"{}")
            with provider.received:
                provider.requests.append(body)
                provider.raw_requests.append(raw)
                provider.headers.append(dict(self.headers))
                reply = provider.replies.popleft() if provider.replies else None
                provider.active += 1
                provider.most_active = max(provider.most_active, provider.active)
                self.counted = True
                provider.received.notify_all()
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": "not found"}})
                return
            started = time.perf_counter()
            try:
                self._answer(reply, body)
            finally:
                with provider.received:
                    provider.busy_seconds += time.perf_counter() - started

        def _answer(self, reply: Any, body: dict[str, Any]) -> None:
            if isinstance(reply, Respond):
                reply = reply.decide(body)
            if reply is None:
                self._json(500, {"error": {"message": "the script has no reply left"}})
                return
            stream = bool(body.get("stream"))
            if isinstance(reply, Drop):
                self.close_connection = True
                return
            if isinstance(reply, Hang):
                reply.release.wait()
                if reply.then is None:
                    self.close_connection = True
                    return
                reply = reply.then
            if isinstance(reply, Error):
                payload = reply.body if reply.body is not None else {"error": {"message": "x"}}
                self._json(reply.status, payload, reply.headers)
            elif isinstance(reply, Truncated):
                self._truncated(reply)
            elif isinstance(reply, Raw):
                self._raw(reply, stream)
            elif isinstance(reply, Drip):
                self._drip(reply)
            elif stream:
                self._stream(reply)
            else:
                self._json(200, _whole(reply, provider.model))

        def _trickle(self, body: bytes, interval: float) -> None:
            """Send `body` one byte every `interval` seconds (until the client goes)."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for byte in body:
                if provider.stopping.wait(interval):
                    return
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return

        def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = payload if isinstance(payload, bytes | str) else json.dumps(payload)
            raw = data.encode() if isinstance(data, str) else data
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(raw)

        def _start_events(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True

        def _start_chunked_events(self) -> None:
            """An event stream that ends with its last chunk; the connection stays open."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.chunked = True

        def _write(self, data: bytes) -> None:
            if self.chunked:
                data = b"%x\r\n%s\r\n" % (len(data), data)
            self.wfile.write(data)

        def _end_chunked(self) -> None:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _event(self, chunk: dict[str, Any] | str) -> None:
            data = chunk if isinstance(chunk, str) else json.dumps(chunk)
            self._write(f"data: {data}\n\n".encode())
            self.wfile.flush()

        def _stream(self, reply: Text | Calls) -> None:
            self._start_chunked_events()
            self._write(b": PROCESSING\n\n")
            model = provider.model
            try:
                if isinstance(reply, Text):
                    if reply.thinking:
                        self._event(_chunk(model, {"reasoning": reply.thinking}))
                    pieces = [
                        reply.text[i : i + reply.chunk_size]
                        for i in range(0, len(reply.text), reply.chunk_size)
                    ]
                    for index, piece in enumerate(pieces):
                        if index and reply.chunk_delay:
                            time.sleep(reply.chunk_delay)
                        self._event(_chunk(model, {"content": piece}))
                        if reply.stall_after is not None and index + 1 == reply.stall_after:
                            reply.release.wait()
                            # Released without finishing: the body ends unfinished.
                            self.close_connection = True
                            return
                else:
                    if reply.delay:
                        time.sleep(reply.delay)
                    if reply.text:
                        self._event(_chunk(model, {"content": reply.text}))
                    for index, (call_id, name, args) in enumerate(reply.calls):
                        text = args if isinstance(args, str) else json.dumps(args)
                        half = len(text) // 2
                        first = {"index": index, "id": call_id, "type": "function"}
                        first["function"] = {"name": name, "arguments": text[:half]}
                        self._event(_chunk(model, {"tool_calls": [first]}))
                        rest = {"index": index, "function": {"arguments": text[half:]}}
                        self._event(_chunk(model, {"tool_calls": [rest]}))
                finish = "tool_calls" if isinstance(reply, Calls) else "stop"
                self._event(_chunk(model, {}, finish))
                if reply.usage:
                    self._event({"id": "x", "model": model, "choices": [], "usage": reply.usage})
                self._event("[DONE]")
                self._end_chunked()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
                return

        def _truncated(self, reply: Truncated) -> None:
            self._start_events()
            self._event(_chunk(provider.model, {"content": reply.text}))
            # End the response here: no finish_reason, no [DONE].

        def _raw(self, reply: Raw, stream: bool) -> None:
            try:
                if stream:
                    self._start_events()
                    for event in reply.events:
                        if isinstance(event, Comment):
                            self.wfile.write(f": {event.text}\n\n".encode())
                            self.wfile.flush()
                        else:
                            self._event(event if isinstance(event, str) else json.dumps(event))
                    if reply.end in ("done", "hold"):
                        self._event("[DONE]")
                    if reply.end == "hold":
                        provider.stopping.wait()
                else:
                    raw = reply.body.encode()
                    declared = len(raw) if reply.end == "done" else len(raw) + 100
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(declared))
                    self.end_headers()
                    self.wfile.write(raw)
                    self.wfile.flush()
                self.close_connection = True
                if reply.end == "reset":
                    # SO_LINGER with a zero timeout: close() sends RST, not FIN.
                    linger = struct.pack("ii", 1, 0)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    self.connection.close()
            except (BrokenPipeError, ConnectionResetError):
                return

        def _drip(self, reply: Drip) -> None:
            self._start_events()
            try:
                if reply.what == "bytes":
                    self.wfile.write(b'data: {"choices": [{"delta": {"content": "')
                while not provider.stopping.wait(reply.interval):
                    if reply.what == "comment":
                        self.wfile.write(b": keep-alive\n\n")
                    elif reply.what == "content":
                        self._event(_chunk(provider.model, {"content": "."}))
                    else:
                        self.wfile.write(b"a")
                    self.wfile.flush()
                    reply.sent += 1
            except (BrokenPipeError, ConnectionResetError):
                return

    return Handler


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _whole(reply: Text | Calls, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if isinstance(reply, Text) and reply.thinking:
        message["reasoning"] = reply.thinking
    if isinstance(reply, Calls):
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for call_id, name, args in reply.calls
        ]
    payload: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if isinstance(reply, Calls) else "stop",
            }
        ],
    }
    if reply.usage:
        payload["usage"] = reply.usage
    return payload
