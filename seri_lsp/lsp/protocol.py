"""JSON-RPC as seri speaks it: every request gets an answer, user errors are not crashes.

pygls parses a message with `json.loads(body, object_hook=structure_message)`: a body it
cannot parse (too deeply nested, an integer of more than 4300 digits, not UTF-8) or
whose params do not fit the LSP types (`arguments: 5`, params `null`) raises inside the
parser, and the request is never answered. `SeriProtocol.receive` takes the raw body
instead: it parses it plainly (bounded depth, huge integers read as infinity), checks
the envelope, structures only the top level and answers every request that it cannot
dispatch with a JSON-RPC error carrying the request's id (found by scanning the raw text
when the body does not parse).

It also answers requests sent after `shutdown` (InvalidRequest) instead of dropping
them, turns `exit` into a clean stop of the transport, and logs refusals and bad
arguments in one line; tracebacks are for real internal errors only.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    lsp_method,
)

from seri_lsp.limits import describe
from seri_lsp.store.messages import EncodedMessages

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
REQUEST_FAILED = -32803
REQUEST_CANCELLED = -32800

# No LSP message comes near this; JSON nested deeper is refused before anything walks it.
MAX_DEPTH = 100
# The largest message body read (a prompt is at most 4,000,000 characters, 16 MB of UTF-8).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# Python refuses to read integers longer than this (sys.int_info.str_digits_check_threshold
# is 640; the default limit is 4300): longer ones are read as +/- infinity.
_MAX_INT_DIGITS = 4000

# Client mistakes: logged as one warning line. Refusals: one info line.
_CLIENT_ERRORS = {PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, METHOD_NOT_FOUND}

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:]', re.DOTALL)
_SCALAR = re.compile(rb'\s*(-?[0-9]{1,18}(?![0-9.eE])|"(?:[^"\\]|\\.)*")', re.DOTALL)


class MessageError(Exception):
    """A message that cannot be dispatched; answered with `code` when it has an id."""

    def __init__(self, code: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field


def _parse_int(text: str) -> int | float:
    if len(text) > _MAX_INT_DIGITS:
        return float("-inf") if text.startswith("-") else float("inf")
    return int(text)


def parse_body(body: bytes) -> Any:
    """The JSON value of a message body; MessageError when it cannot be read."""
    try:
        value = json.loads(body, parse_int=_parse_int)
    except RecursionError:
        raise MessageError(
            INVALID_PARAMS, f"The message is nested more than {MAX_DEPTH} levels deep.", "params"
        ) from None
    except UnicodeDecodeError:
        raise MessageError(PARSE_ERROR, "The message is not valid UTF-8.") from None
    except ValueError as exc:
        raise MessageError(PARSE_ERROR, f"The message is not valid JSON ({exc}).") from None
    if _too_deep(value):
        raise MessageError(
            INVALID_PARAMS, f"The message is nested more than {MAX_DEPTH} levels deep.", "params"
        )
    return value


def _too_deep(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values() if _container(child))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item if _container(child))
    return False


def _container(value: Any) -> bool:
    return isinstance(value, dict | list)


def salvage_id(body: bytes) -> int | str | None:
    """The top-level `"id"` of a body that does not parse, found by scanning its tokens."""
    depth = 0
    previous = b""
    for match in _TOKEN.finditer(body):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
        elif token in (b"}", b"]"):
            depth -= 1
        elif token == b":" and depth == 1 and previous == b'"id"':
            scalar = _SCALAR.match(body, match.end())
            if scalar is None:
                return None
            try:
                value = json.loads(scalar.group(1))
            except ValueError:
                return None
            return value if isinstance(value, int | str) else None
        previous = token
    return None


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _check_execute_command(params: Any) -> None:
    """workspace/executeCommand params, checked with messages that name the field."""
    if not isinstance(params, dict):
        raise MessageError(
            INVALID_PARAMS,
            "workspace/executeCommand needs params {command, arguments?}, "
            f"got {describe(params)}.",
            "params",
        )
    command = params.get("command")
    if not isinstance(command, str):
        raise MessageError(
            INVALID_PARAMS, f"command must be a string, got {describe(command)}.", "command"
        )
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, list):
        raise MessageError(
            INVALID_PARAMS,
            f"arguments must be an array holding one JSON object ([{{...}}]), "
            f"got {describe(arguments)}.",
            "arguments",
        )


def _structure_problem(exc: Exception) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(exc))
    return str(exc) or type(exc).__name__


class SeriProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with seri's guarantees about requests and logging."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self.on_exit: Callable[[int], None] | None = None
        # Stops the running task the way seri.cancel does (set by the server).
        self.on_cancel_task: Callable[[], bool] | None = None
        # The `experimental` capability `initialize` answers (set by the server).
        self.experimental_capabilities: dict[str, Any] | None = None
        self._labels: dict[Any, str] = {}
        self._writes: set[asyncio.Future[Any]] = set()

    # --- reading ------------------------------------------------------------------------

    def receive(self, body: bytes) -> None:
        """Handle one framed message body from the client."""
        try:
            data = parse_body(body)
        except MessageError as exc:
            msg_id = salvage_id(body)
            answer = msg_id is not None or exc.code == PARSE_ERROR
            self._refuse(msg_id, exc, "an unreadable message", answer)
            return
        if not isinstance(data, dict):
            self._refuse(None, MessageError(INVALID_REQUEST, "A message must be a JSON object."))
            return
        msg_id = data.get("id")
        method = data.get("method")
        if "method" not in data and "id" in data:
            self._receive_response(data, msg_id)
            return
        is_request = "id" in data
        label = method if isinstance(method, str) else "a message"
        try:
            self._check_envelope(data, msg_id, method)
            if is_request and self._shutdown and method != types.EXIT:
                raise MessageError(INVALID_REQUEST, "The server is shutting down.")
            if method == types.WORKSPACE_EXECUTE_COMMAND and is_request:
                _check_execute_command(data.get("params"))
                label = f"{method} {data['params']['command']}"
        except MessageError as exc:
            answer = is_request or "method" not in data  # no method: maybe a broken request
            self._refuse(msg_id if _valid_id(msg_id) else None, exc, label, answer)
            return
        try:
            message = self._structure(data)
        except Exception as exc:
            error = MessageError(INVALID_PARAMS, _structure_problem(exc))
            self._refuse(msg_id, error, label, is_request)
            return
        if is_request:
            self._labels[msg_id] = label
        self.handle_message(message)

    def refuse_too_large(self, head: bytes, size: int) -> None:
        """A body over MAX_MESSAGE_BYTES was skipped unread; `head` is its start."""
        error = MessageError(
            INVALID_REQUEST,
            f"The message is {size:,} bytes; seri-lsp reads at most {MAX_MESSAGE_BYTES:,}.",
        )
        self._refuse(salvage_id(head), error, "a message too large to read")

    def _receive_response(self, data: dict[str, Any], msg_id: Any) -> None:
        """A client's answer to one of our requests; one that cannot be read fails it."""
        if not _valid_id(msg_id):
            logger.warning("Ignoring a response with id %s", describe(msg_id))
            return
        try:
            if data.get("jsonrpc") != self.VERSION:
                raise ValueError('a message must carry "jsonrpc": "2.0"')
            message = self._structure(data)
        except Exception as exc:
            problem = _structure_problem(exc)
            logger.warning("Unreadable response to request %s: %s", msg_id, problem)
            self._handle_response(
                msg_id, error=types.ResponseError(code=INVALID_PARAMS, message=problem)
            )
            return
        self.handle_message(message)

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls' dispatch, without keeping a future for every notification forever.

        pygls files the future of each notification handler and of each step of its
        generator handlers under a random id that nothing removes: one per keystroke
        (`didChange`). Client requests are removed when answered; these when done.
        """
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        if msg_id in self._labels:
            return
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(lambda _: self._request_futures.pop(msg_id, None))

    def _check_envelope(self, data: dict[str, Any], msg_id: Any, method: Any) -> None:
        if data.get("jsonrpc") != self.VERSION:
            raise MessageError(INVALID_REQUEST, 'A message must carry "jsonrpc": "2.0".')
        if not isinstance(method, str):
            raise MessageError(INVALID_REQUEST, f"method must be a string, got {describe(method)}.")
        if "id" in data and not _valid_id(msg_id):
            raise MessageError(
                INVALID_REQUEST, f"id must be a string or an integer, got {describe(msg_id)}."
            )

    def _structure(self, data: dict[str, Any]) -> Any:
        """The typed message for `data` (pygls' `structure_message`, top level only)."""
        if "error" in data and "method" not in data:
            return self._converter.structure(data, types.ResponseErrorMessage)
        if "method" in data:
            fallback = JsonRPCRequestMessage if "id" in data else JsonRPCNotification
            message_type = self.get_message_type(data["method"]) or fallback
            return self._converter.structure(data, message_type)
        result_type = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
        return self._converter.structure(data, result_type)

    def _refuse(
        self, msg_id: Any, exc: MessageError, label: str = "a message", answer: bool = True
    ) -> None:
        """Log a message that cannot be dispatched and answer it when it is a request.

        A request whose id cannot be read is answered with id null, as JSON-RPC asks.
        """
        level = logging.WARNING if exc.code in _CLIENT_ERRORS else logging.INFO
        logger.log(level, "Refused %s: %s", label, exc.message)
        if not answer:
            return  # a notification: nobody waits for an answer
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.field is not None:
            error["data"] = {"field": exc.field}
        self._send_data({"jsonrpc": self.VERSION, "id": msg_id, "error": error})

    # --- answering ------------------------------------------------------------------------

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        """Send a handler's result or error; one log line for refusals, a traceback for bugs."""
        self._request_futures.pop(msg_id, None)
        label = self._labels.pop(msg_id, "a request")
        if future.cancelled():
            logger.info("Cancelled %s (request %s)", label, msg_id)
            self._send_error(msg_id, REQUEST_CANCELLED, f"Request {msg_id} was cancelled.")
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
            return
        if isinstance(exc, JsonRpcException) and exc.code != INTERNAL_ERROR:
            level = logging.WARNING if exc.code in _CLIENT_ERRORS else logging.INFO
            logger.log(level, "Refused %s: %s", label, exc.message)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        logger.error("Internal error in %s (request %s)", label, msg_id, exc_info=exc)
        if not isinstance(exc, JsonRpcException):
            exc = JsonRpcInternalError(message=f"Internal error in {label}: {exc!r}")
        self._send_error(msg_id, INTERNAL_ERROR, exc.message)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        self._labels.pop(msg_id, None)  # however it was answered, it is no longer in flight
        if error is None and type(result) is dict and self._include_headers:
            # A command's answer is JSON already. pygls would wrap it in a typed response
            # and have cattrs copy it, value by value, before encoding it: most of the
            # time of a large seri.session.get. It is encoded as it is instead.
            self._send_json({"jsonrpc": self.VERSION, "id": msg_id, "result": result})
            return
        super()._send_response(msg_id, result, error)

    def _send_json(self, payload: dict[str, Any]) -> None:
        """Write one message whose payload is JSON already (pygls' `_send_data`, leaner).

        The body is encoded to bytes once and written after its header, instead of
        being copied twice more (header + body, then encoded): a large answer is held
        in memory twice at most, not four times. Messages the engine gave already
        encoded (`EncodedMessages`, a long history) are written as they are.
        """
        if self.writer is None:
            logger.error("Unable to send data, no available transport!")
            return
        try:
            parts = encoded_body(payload, self._serialize_message)
            header = (
                f"Content-Length: {sum(len(part) for part in parts)}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            ).encode("ascii")
            for part in (header, *parts):
                written = self.writer.write(part)
                if inspect.isawaitable(written):  # an asynchronous writer
                    pending = asyncio.ensure_future(written)
                    self._writes.add(pending)
                    pending.add_done_callback(self._writes.discard)
        except BrokenPipeError:
            logger.exception("Error sending data. BrokenPipeError", exc_info=True)
            raise
        except Exception as exc:
            logger.exception("Error sending data", exc_info=True)
            self._server._report_server_error(exc, JsonRpcInternalError)

    def _send_error(self, msg_id: Any, code: int, message: str) -> None:
        self._labels.pop(msg_id, None)
        self._send_data(
            {"jsonrpc": self.VERSION, "id": msg_id, "error": {"code": code, "message": message}}
        )

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        """`$/cancelRequest`: a task-running command is cancelled like `seri.cancel`.

        Cancelling the request's future (what pygls does) would answer RequestCancelled
        while the task went on running unseen; instead the task stops through its cancel
        scope, stores how it ended, and the request answers `{status: "cancelled"}`.
        """
        label = self._labels.get(msg_id, "")
        runs_a_task = label.endswith((" seri.prompt", " seri.compact"))
        if runs_a_task and self.on_cancel_task is not None and self.on_cancel_task():
            logger.info("Cancelling the task of request %s (%s)", msg_id, label)
            return
        super()._handle_cancel_notification(msg_id)

    def stopping(self) -> None:
        """The server is stopping: later requests are refused, notifications dropped."""
        self._shutdown = True

    def wait_for_requests(self, timeout: float) -> asyncio.Future[Any]:
        """Wait (at most `timeout` seconds) for the client's requests in flight.

        The request being handled now (a `shutdown` waiting for the others) is not
        waited for, nor are our own requests to the client.
        """
        current = self.msg_id
        pending = [
            asyncio.wrap_future(future) if isinstance(future, Future) else future
            for msg_id, future in list(self._request_futures.items())
            if msg_id in self._labels and msg_id != current and not future.done()
        ]
        if not pending:
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        return asyncio.ensure_future(asyncio.wait(pending, timeout=timeout))

    # --- built-in methods seri answers itself ------------------------------------------

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        """pygls' initialize, with seri's `experimental` capability in its result."""
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = self.experimental_capabilities
        return result

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    # pygls declares a generator; this coroutine answers the same request (see below).
    async def lsp_workspace__execute_command(  # type: ignore[override]
        self, params: types.ExecuteCommandParams
    ) -> Any:
        """Run a `seri.*` command with its raw arguments (checked by the command).

        A coroutine rather than pygls' generator, so `$/cancelRequest` cancels the
        command itself, not only the future its answer was waiting on.
        """
        handler = self.fm.commands.get(params.command)
        if handler is None:
            known = ", ".join(sorted(self.fm.commands))
            raise JsonRpcException(
                message=f"Unknown command {params.command!r}; this server has: {known}.",
                code=INVALID_PARAMS,
                data={"field": "command"},
            )
        return await handler(*(params.arguments or ()))

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        """Stop the transport (0 after `shutdown`, else 1); the face closes the store."""
        if (user_handler := self.fm.features.get(types.EXIT)) is not None:
            yield user_handler, args, None
        code = 0 if self._shutdown else 1
        if self.on_exit is not None:
            self.on_exit(code)


def encoded_body(payload: dict[str, Any], default: Callable[[Any], Any]) -> list[bytes]:
    """The UTF-8 JSON of a response, in parts: the result's EncodedMessages values are
    spliced in as they were encoded (`payload["result"]` comes last in the payload)."""
    result = payload.get("result")
    encoded = (
        {key: value for key, value in result.items() if isinstance(value, EncodedMessages)}
        if isinstance(result, dict)
        else {}
    )
    if not encoded:
        return [json.dumps(payload, default=default).encode("utf-8")]
    assert isinstance(result, dict) and list(payload)[-1] == "result"
    rest = {key: value for key, value in result.items() if key not in encoded}
    text = json.dumps({**payload, "result": rest}, default=default)
    head = text[:-2]  # without the braces that close the result and the payload
    parts = [head.encode("utf-8")]
    separator = b"" if head.endswith("{") else b", "
    for key, messages in encoded.items():
        parts.append(separator + json.dumps(key).encode("utf-8") + b": [")
        for index, piece in enumerate(messages.pieces):
            parts += [b", ", piece] if index else [piece]  # (no copy of a piece)
        parts.append(b"]")
        separator = b", "
    parts.append(b"}}")
    return parts
