"""The language server: lifecycle (initialize, initialized, shutdown) and wiring.

`initialize` resolves the profile root and settings and opens the store; a store that
cannot be used stops the server with a clear message (and the file untouched).
`initialized` runs the legacy import and opens what the command line asked for
(`--continue`, `--resume ID`), else resumes the project's latest session when
`resumeOnOpen` is on. The commands live in `commands.py`, the JSON-RPC guarantees in
`protocol.py`, the transports and the clean stop in `transport.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from cattrs import Converter
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter
from pygls.uris import to_fs_path

from seri_lsp import __version__
from seri_lsp.engine import Engine
from seri_lsp.errors import SeriError
from seri_lsp.limits import shorten
from seri_lsp.lsp import commands, transport
from seri_lsp.lsp.host import LspHost
from seri_lsp.lsp.protocol import (
    INVALID_REQUEST,
    REQUEST_FAILED,
    SERVER_NOT_INITIALIZED,
    SeriProtocol,
)
from seri_lsp.profile import resolve_profile_root
from seri_lsp.settings import load_settings
from seri_lsp.store.database import StoreError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerOptions:
    """What the command line said about the server."""

    profile_root: str | None = None
    max_turns: int | None = None
    # What `initialized` opens: `--continue` (the latest session) or `--resume ID`; both
    # win over the resumeOnOpen setting.
    continue_latest: bool = False
    resume: str | None = None


@functools.cache
def lsp_converter() -> Converter:
    """The LSP types' converter (pygls's), one per process. Building the first resolves
    every lsprotocol type, and its hooks are written as messages need them: about a
    tenth of a CPU-second of a server's start, which a process that forks servers (the
    tests' warm process, tests/warm_server.py) pays once for all of them."""
    return default_converter()


class SeriServer(LanguageServer):
    """pygls server holding one engine; features register in `setup` functions."""

    protocol: SeriProtocol

    def __init__(self, options: ServerOptions) -> None:
        super().__init__(
            "seri-lsp", __version__, protocol_cls=SeriProtocol, converter_factory=lsp_converter
        )
        self.options = options
        self.engine: Engine | None = None
        self.startup_problems: list[str] = []
        self._ready: asyncio.Future[Engine] | None = None
        self._startup: asyncio.Future[None] | None = None
        self._closing: asyncio.Future[None] | None = None
        self.protocol.on_cancel_task = self._cancel_task

    def _cancel_task(self) -> bool:
        return self.engine is not None and self.engine.cancel()

    def serve_stdio(self, ready: Callable[[], None] | None = None) -> int:
        """Serve on stdin/stdout until exit, end of input, SIGINT or SIGTERM (`ready` is
        called once those stop it cleanly)."""
        return transport.serve_stdio(self.protocol, self.close_engine, ready=ready)

    def serve_tcp(self, host: str, port: int) -> int:
        """Serve one client on a TCP port until exit, disconnect, SIGINT or SIGTERM."""
        return transport.serve_tcp(self.protocol, self.close_engine, host, port)

    async def close_engine(self) -> None:
        """Cancel the running task, let the requests in flight be answered, close the store.

        Safe to call more than once (shutdown, then exit or a signal): later calls wait
        for the first.
        """
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close_engine())
        await asyncio.shield(self._closing)

    async def _close_engine(self) -> None:
        engine = self.engine
        if engine is None:
            return
        if self._startup is not None and not self._startup.done():
            self._startup.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._startup
        engine.cancel(stopping=True)
        await self.protocol.wait_for_requests(transport.DRAIN_SECONDS)
        try:
            await engine.close()
        except Exception:
            logger.exception("Closing the store failed")

    async def ready(self) -> Engine:
        """The engine, once start-up (import, resume on open) has finished."""
        if self.engine is None or self._ready is None:
            raise JsonRpcException(
                message="seri-lsp is not initialized (or its store could not be opened).",
                code=SERVER_NOT_INITIALIZED,
            )
        engine = await asyncio.shield(self._ready)
        if self._closing is not None:
            raise JsonRpcException(message="The server is shutting down.", code=INVALID_REQUEST)
        return engine

    async def start(self, engine: Engine) -> None:
        """Start-up on `initialized`; a stop that comes first cancels it quietly."""
        ready = self.mark_starting()
        self._startup = asyncio.ensure_future(self._start(engine))
        try:
            await asyncio.shield(self._startup)
        except asyncio.CancelledError:
            pass
        finally:
            if not ready.done():
                ready.set_result(engine)

    async def _start(self, engine: Engine) -> None:
        for problem in self.startup_problems:
            engine.host.show("warning", problem)
        try:
            if self.options.resume is not None or self.options.continue_latest:
                await engine.import_legacy()
                await open_from_command_line(engine, self.options)
            else:
                await engine.start()
        except Exception as exc:
            logger.exception("Start-up failed")
            engine.host.show("error", f"seri-lsp start-up failed: {exc}")

    def mark_starting(self) -> asyncio.Future[Engine]:
        self._ready = asyncio.get_running_loop().create_future()
        return self._ready


def project_roots(params: types.InitializeParams) -> list[Path]:
    """The workspace folders, first one first (the project), canonical and absolute."""
    uris = [folder.uri for folder in params.workspace_folders or []]
    if not uris and params.root_uri:
        uris = [params.root_uri]
    paths = [to_fs_path(uri) for uri in uris]
    roots = [Path(os.path.realpath(p)) for p in paths if p]
    if not roots and params.root_path:
        roots = [Path(os.path.realpath(params.root_path))]
    if not roots:
        roots = [Path(os.path.realpath(os.getcwd()))]
    return roots


def empty_tables_as_objects(options: object) -> object:
    """Initialization options with Neovim's empty tables (`[]`) read as objects.

    Neovim encodes an empty Lua table as `[]`; where the settings expect an object
    (the options themselves, `provider`, `provider.provider`, `permissions`) it means `{}`.
    """
    if isinstance(options, list) and not options:
        return {}
    if not isinstance(options, dict):
        return options
    options = dict(options)
    for key in ("provider", "permissions"):
        if options.get(key) == []:
            options[key] = {}
    provider = options.get("provider")
    if isinstance(provider, dict) and provider.get("provider") == []:
        options["provider"] = {**provider, "provider": {}}
    return options


async def open_from_command_line(engine: Engine, options: ServerOptions) -> None:
    """Open what `--resume ID` or `--continue` asked for (they win over resumeOnOpen).

    `--resume` of a session that cannot be opened (an unknown id, one held by another
    seri process) is shown as an error and nothing is opened: the next prompt starts a
    new session. `--continue` behaves as resume on open does, also when `resumeOnOpen`
    is false: the latest session no other process holds, else a new one when all are
    held, else (none at all) nothing; the log says which.
    """
    if options.resume is None:
        await engine.continue_session(or_new=True)
        return
    try:
        session = await engine.resume_session(options.resume)
    except SeriError as exc:
        engine.host.show(
            "error",
            f"--resume {shorten(options.resume)}: {exc} No session is open; the next prompt "
            "starts a new one (seri.session.list lists the sessions).",
        )
        return
    engine.host.log("info", f"Resumed session {session.id} (--resume).")


def cannot_start(ls: SeriServer, message: str, exc: Exception) -> NoReturn:
    """Answer `initialize` with RequestFailed saying why, show it, and end the process
    once the answer is out: there is nothing to serve."""
    print(message, file=sys.stderr, flush=True)
    ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))
    asyncio.get_running_loop().call_later(0.5, os._exit, 1)
    raise JsonRpcException(message=message, code=REQUEST_FAILED) from exc


def setup_lifecycle(server: SeriServer) -> None:
    """Register initialize, initialized, shutdown, document opens and workspace-folder
    handling."""

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: SeriServer, params: types.InitializeParams) -> None:
        options = empty_tables_as_objects(params.initialization_options)
        problems = []
        if options is not None and not isinstance(options, dict):
            problems.append("initializationOptions must be a JSON object; ignoring them.")
            options = {}
        init_root = (options or {}).get("profileRoot")
        if init_root is not None and not isinstance(init_root, str):
            problems.append(
                f"profileRoot must be a folder path (text), got {type(init_root).__name__}; "
                "ignoring it."
            )
            init_root = None
        try:
            # `~nosuchuser/x`, a NUL, a lone surrogate: no path the system can use.
            profile_root = resolve_profile_root(ls.options.profile_root, init_root)
        except (ValueError, RuntimeError) as exc:
            given = ls.options.profile_root or init_root or os.environ.get("SERI_PROFILE_ROOT")
            cannot_start(
                ls,
                f"seri-lsp cannot start: the profile root {shorten(repr(given))} is not "
                f"usable ({exc})",
                exc,
            )
        settings, setting_problems = load_settings(profile_root, options)
        roots = project_roots(params)
        try:
            ls.engine = Engine.open(
                profile_root=profile_root,
                settings=settings,
                project=str(roots[0]),
                workspace_roots=roots,
                host=LspHost(ls),
                max_turns_flag=ls.options.max_turns,
            )
        except (StoreError, OSError) as exc:
            cannot_start(ls, f"seri-lsp cannot start: {exc}", exc)
        ls.startup_problems = problems + setting_problems

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: SeriServer, params: types.InitializedParams) -> None:
        if ls.engine is not None:
            await ls.start(ls.engine)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def on_configuration_changed(
        ls: SeriServer, params: types.DidChangeConfigurationParams
    ) -> None:
        # `settings` holds what `initializationOptions` held, in full. An empty or absent
        # one says nothing (clients send it so), and is not taken as "all defaults". Read
        # in place (config.json is a few hundred bytes): a prompt sent next must see it.
        options = empty_tables_as_objects(params.settings)
        if ls.engine is None or not options:
            return
        engine = ls.engine
        if not isinstance(options, dict):
            engine.host.show("warning", "The changed settings must be a JSON object; ignored.")
            return
        settings, problems = load_settings(engine.profile_root, options)
        engine.set_provider_settings(settings.provider)
        for problem in problems:
            engine.host.show("warning", problem)
        engine.host.log(
            "info",
            "Settings changed: the provider settings apply from the next prompt, the others "
            "when the server restarts.",
        )

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: SeriServer, params: None) -> None:
        await ls.close_engine()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def on_document_opened(ls: SeriServer, params: types.DidOpenTextDocumentParams) -> None:
        # pygls keeps the document; the host learns its real path off the event loop.
        if ls.engine is not None and isinstance(ls.engine.host, LspHost):
            await ls.engine.host.note_opened(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def on_folders_changed(
        ls: SeriServer, params: types.DidChangeWorkspaceFoldersParams
    ) -> None:
        if ls.engine is None:
            return
        # pygls has applied the change: its folders are all of them, in order.
        paths = [to_fs_path(folder.uri) for folder in ls.workspace.folders.values()]
        await ls.engine.set_workspace_roots([path for path in paths if path])


def create_server(options: ServerOptions | None = None) -> SeriServer:
    """A fully wired server, ready for `start_io` or `start_tcp`."""
    server = SeriServer(options or ServerOptions())
    setup_lifecycle(server)
    commands.setup(server)
    server.protocol.experimental_capabilities = {
        "seri": {"slashCommands": commands.slash_commands()}
    }
    return server
