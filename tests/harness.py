"""Driving the real seri-lsp server process through pytest-lsp, as an editor would.

The test client records every `seri/*` notification, answers
`window/showMessageRequest` from a queue of scripted answers, and applies
`workspace/applyEdit` to the documents it has open (sending `didChange` back, as an
editor does) and saves them on `seri/saveDocuments`, so tests see the server exactly as
VS Code or Neovim would.
"""

from __future__ import annotations

import asyncio
import compileall
import contextlib
import functools
import logging
import os
import subprocess
import sys
import time
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cattrs import Converter
from lsprotocol import types
from pygls.io_ import run_async
from pygls.protocol import default_converter
from pygls.uris import to_fs_path as uri_to_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

import seri_lsp
from tests.warm_server import ForkedServer, warm_servers

SERI_NOTIFICATIONS = (
    "seri/sessionChanged",
    "seri/message",
    "seri/delta",
    "seri/compacted",
    "seri/turnEnded",
    "seri/status",
    "seri/toolOutput",
)
CLIENTS = ("visual-studio-code", "neovim")
HOLD = object()  # an answer to showMessageRequest that never comes
_MISSING = object()


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie waiting to be reaped (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] != "Z"


@functools.cache
def shared_converter() -> Converter:
    """One lsprotocol converter for every client in this test process: cattrs writes
    (and compiles) the code that converts a type the first time it meets the type, which
    for a fresh converter per client was most of the test process's time."""
    return default_converter()


def make_client() -> LanguageClient:
    """A pytest-lsp client that also records seri's notifications and plays the editor."""
    # pytest-lsp's make_test_lsp_client, with the shared converter.
    client = LanguageClient(converter_factory=shared_converter)
    register_lsp_features(client)
    client.seri = defaultdict(list)  # type: ignore[attr-defined]
    client.answers = deque()  # type: ignore[attr-defined]
    client.message_requests = []  # type: ignore[attr-defined]
    client.applied_edits = []  # type: ignore[attr-defined]
    client.documents = {}  # type: ignore[attr-defined]
    client.refuse_edits = False  # type: ignore[attr-defined]
    client.hold_edits = False  # type: ignore[attr-defined]  # an editor that never answers
    client.save_requests = []  # type: ignore[attr-defined]
    client.approvals = deque()  # type: ignore[attr-defined]  # answers to seri/approve
    client.approve_requests = []  # type: ignore[attr-defined]
    client.approve_ids = []  # type: ignore[attr-defined]  # the id of each seri/approve
    client.withdrawn = []  # type: ignore[attr-defined]  # questions the server took back

    for method in SERI_NOTIFICATIONS:
        client.feature(method)(_recorder(method))

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def show_message_request(ls: LanguageClient, params: types.ShowMessageRequestParams):
        ls.message_requests.append(params)
        answer = ls.answers.popleft() if ls.answers else None
        if answer is HOLD:
            await asyncio.Event().wait()  # the user walked away from the dialog
        return types.MessageActionItem(title=answer) if answer is not None else None

    @client.feature("seri/approve")
    async def approve(ls: LanguageClient, params: Any) -> Any:
        """The chat's approval card: answered from `approvals` (an answer object, or
        HOLD for a user who never answers), recorded in `approve_requests`."""
        question = _plain(params)
        ls.approve_requests.append(question)
        ls.approve_ids.append(ls.protocol._ctx_msg_id.get())
        answer = ls.approvals.popleft() if ls.approvals else None
        if answer is HOLD:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:  # $/cancelRequest: the card goes away
                ls.withdrawn.append(question)
                raise
        return answer

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    async def apply_edit(ls: LanguageClient, params: types.ApplyWorkspaceEditParams):
        ls.applied_edits.append(params)
        if ls.hold_edits:
            await asyncio.Event().wait()
        if ls.refuse_edits:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="read-only")
        for change in params.edit.document_changes or []:
            if isinstance(change, types.DeleteFile):  # the editor closes it and deletes it
                if ls.documents.pop(change.uri, None) is not None:
                    ls.text_document_did_close(
                        types.DidCloseTextDocumentParams(
                            text_document=types.TextDocumentIdentifier(uri=change.uri)
                        )
                    )
                Path(uri_to_path(change.uri)).unlink(missing_ok=True)
        for uri, edits in _edits_by_uri(params.edit):
            if uri in ls.documents:
                version, text = ls.documents[uri]
                for edit in sorted(edits, key=lambda e: _offset(text, e.range.start), reverse=True):
                    start = _offset(text, edit.range.start)
                    end = _offset(text, edit.range.end)
                    text = text[:start] + edit.new_text + text[end:]
                ls.documents[uri] = (version + 1, text)
                ls.text_document_did_change(
                    types.DidChangeTextDocumentParams(
                        text_document=types.VersionedTextDocumentIdentifier(
                            uri=uri, version=version + 1
                        ),
                        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
                    )
                )
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature("seri/saveDocuments")
    def save_documents(ls: LanguageClient, params: Any) -> dict[str, list[str]]:
        """Write each open document among the uris to its file (the others are saved
        already: the disk is all there is)."""
        ls.save_requests.append(list(params.uris))
        for uri in params.uris:
            if uri in ls.documents:
                Path(uri_to_path(uri)).write_text(ls.documents[uri][1])
        return {"saved": list(params.uris)}

    return client


def approval_capabilities(client_name: str = "visual-studio-code") -> types.ClientCapabilities:
    """An editor's capabilities plus `experimental.seri.approvals`: it shows questions
    in its chat (`seri/approve`) instead of `window/showMessageRequest`."""
    capabilities = client_capabilities(client_name)
    capabilities.experimental = {"seri": {"approvals": True}}
    return capabilities


def without_save_documents(client: LanguageClient) -> None:
    """Make the client one that does not know `seri/saveDocuments` (MethodNotFound)."""
    client.protocol.fm.features.pop("seri/saveDocuments")


def _recorder(method: str) -> Callable[[LanguageClient, Any], None]:
    def record(ls: LanguageClient, params: Any) -> None:
        ls.seri[method].append(_plain(params))

    return record


def _plain(value: Any) -> Any:
    """pygls hands custom notification params over as namedtuples; make them JSON again."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _edits_by_uri(edit: types.WorkspaceEdit) -> list[tuple[str, list[types.TextEdit]]]:
    if edit.document_changes:
        return [
            (change.text_document.uri, list(change.edits))
            for change in edit.document_changes
            if isinstance(change, types.TextDocumentEdit)
        ]
    return [(uri, list(edits)) for uri, edits in (edit.changes or {}).items()]


def _offset(text: str, position: types.Position) -> int:
    """UTF-16 position to string offset (the tests use ASCII and BMP text)."""
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[: position.line]) + position.character


def compile_server() -> None:
    """Byte-compile seri_lsp once, before the servers start: with PYTHONDONTWRITEBYTECODE
    set (and an editable install, which pip does not compile), each of the hundreds of
    server processes would compile it again, a fifth of its CPU time."""
    compileall.compile_dir(Path(seri_lsp.__file__).parent, quiet=1)


def seri(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The `seri-lsp` command line, as a user runs it (the environment as `server_env`),
    forked from this worker's warm process unless `SERI_TEST_FORK=0`."""
    warm = warm_servers()
    if warm is not None:
        return warm.run(list(args), server_env(env), cwd=cwd, timeout=60)
    return subprocess.run(
        [sys.executable, "-m", "seri_lsp", *args],
        cwd=cwd,
        env=server_env(env),
        stdin=subprocess.DEVNULL,  # no terminal to ask on
        capture_output=True,
        text=True,
        timeout=60,
    )


async def seri_async(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`seri` off the event loop, for tests that talk to a server meanwhile."""
    return await asyncio.to_thread(seri, *args, cwd=cwd, env=env)


def provider_config(provider: Any, /, **extra: Any) -> dict[str, Any]:
    """Provider settings that point seri at the scripted provider (quick retries)."""
    return {
        "baseUrl": provider.base_url,
        "model": provider.model,
        "apiKey": "test-key",
        "timeout": 10,
        "maxRetries": 2,
        "retryBaseDelay": 0.01,
        "retryMaxDelay": 0.05,
        **extra,
    }


def cli_env(provider: Any, profile_root: Path) -> dict[str, str]:
    """The environment that points the command line at the scripted provider and a profile."""
    return {
        "SERI_BASE_URL": provider.base_url,
        "SERI_MODEL": provider.model,
        "SERI_API_KEY": "k",
        "SERI_PROFILE_ROOT": str(profile_root),
    }


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment without the developer's own seri or provider settings."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SERI_") and key != "OPENROUTER_API_KEY"
    }
    env.update(extra or {})
    return env


async def start_server(
    profile_root: Path | None,
    workspace: Path,
    *,
    client_name: str = "visual-studio-code",
    init_options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
    initialize: bool = True,
    capabilities: types.ClientCapabilities | None = None,
) -> LanguageClient:
    """Start `python -m seri_lsp` and initialize it for `workspace` (as `client_name`
    does, unless `capabilities` are given)."""
    arguments = [] if profile_root is None else ["--profile-root", str(profile_root)]
    arguments += args
    warm = warm_servers()
    if warm is None:
        config = ClientServerConfig(
            server_command=[sys.executable, "-m", "seri_lsp", *arguments],
            client_factory=make_client,
            server_env=server_env(env),
        )
        client = await config.start()
    else:
        client = make_client()
        attach(client, await warm.spawn(arguments, server_env(env)))
    if initialize:
        await initialize_client(client, workspace, client_name, init_options, capabilities)
    return client


def attach(client: LanguageClient, server: ForkedServer) -> None:
    """Talk to `server` over its pipes, as pygls's `start_io` does with a process it
    started itself."""
    client.protocol.set_writer(server.stdin)
    connection = asyncio.create_task(
        run_async(
            stop_event=client._stop_event,
            reader=server.stdout,
            protocol=client.protocol,
            logger=logging.getLogger("pygls.client"),
            error_handler=client.report_server_error,
        )
    )
    notify_exit = asyncio.create_task(client._server_exit())
    client._server = server
    client._async_tasks.extend([connection, notify_exit])


async def initialize_client(
    client: LanguageClient,
    workspace: Path,
    client_name: str = "visual-studio-code",
    init_options: dict[str, Any] | None = None,
    capabilities: types.ClientCapabilities | None = None,
) -> types.InitializeResult:
    uri = workspace.as_uri()
    return await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities or client_capabilities(client_name),
            root_uri=uri,
            workspace_folders=[types.WorkspaceFolder(uri=uri, name=workspace.name)],
            initialization_options=init_options,
        )
    )


async def stop_server(client: LanguageClient) -> None:
    """Shut the server down politely; kill it if it does not go."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.shutdown_session(), timeout=10)
    with contextlib.suppress(Exception):
        await asyncio.wait_for(client.stop(), timeout=10)


async def command(client: LanguageClient, name: str, args: Any = _MISSING) -> Any:
    """Run a `seri.*` command with one argument object (none when omitted)."""
    arguments = None if args is _MISSING else [args]
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=arguments)
    )


async def wait_until(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll until `predicate()` is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.02)


def shown_messages(
    client: LanguageClient, kind: types.MessageType | None = None, containing: str = ""
) -> list[str]:
    """The messages shown to the user so far (window/showMessage), of one type and
    holding a phrase when given."""
    return [
        m.message
        for m in client.messages
        if (kind is None or m.type == kind) and containing in m.message
    ]


def open_document(client: LanguageClient, path: Path, text: str) -> str:
    """Open a document in the editor (didOpen) with unsaved `text`; returns its uri."""
    uri = path.as_uri()
    client.documents[uri] = (1, text)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="plaintext", version=1, text=text
            )
        )
    )
    return uri
