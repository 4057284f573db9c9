"""The language server: lifecycle (initialize, initialized, shutdown) and wiring.

`initialize` resolves the profile root and settings and opens the store; a store that
cannot be used stops the server with a clear message (and the file untouched).
`initialized` runs the legacy import and resumes the project's latest session.
The commands live in `commands.py`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from seri_lsp import __version__
from seri_lsp.engine import Engine
from seri_lsp.lsp import commands
from seri_lsp.lsp.host import LspHost
from seri_lsp.profile import resolve_profile_root
from seri_lsp.settings import load_settings
from seri_lsp.store.database import StoreError

logger = logging.getLogger(__name__)

# LSP's ServerNotInitialized code (RequestFailed lives with the commands).
SERVER_NOT_INITIALIZED = -32002


@dataclass(frozen=True)
class ServerOptions:
    """What the command line said about the server."""

    profile_root: str | None = None
    max_turns: int | None = None


class SeriServer(LanguageServer):
    """pygls server holding one engine; features register in `setup` functions."""

    def __init__(self, options: ServerOptions) -> None:
        super().__init__("seri-lsp", __version__)
        self.options = options
        self.engine: Engine | None = None
        self.startup_problems: list[str] = []
        self._ready: asyncio.Future[Engine] | None = None

    async def ready(self) -> Engine:
        """The engine, once start-up (import, resume on open) has finished."""
        if self.engine is None or self._ready is None:
            raise JsonRpcException(
                message="seri-lsp is not initialized (or its store could not be opened).",
                code=SERVER_NOT_INITIALIZED,
            )
        return await asyncio.shield(self._ready)

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


def setup_lifecycle(server: SeriServer) -> None:
    """Register initialize, initialized, shutdown and workspace-folder handling."""

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: SeriServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        problems = []
        if options is not None and not isinstance(options, dict):
            problems.append("initializationOptions must be a JSON object; ignoring them.")
            options = {}
        profile_root = resolve_profile_root(
            ls.options.profile_root, (options or {}).get("profileRoot")
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
            message = f"seri-lsp cannot start: {exc}"
            print(message, file=sys.stderr, flush=True)
            ls.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=message)
            )
            # Answer the request first, then stop: there is nothing to serve.
            asyncio.get_running_loop().call_later(0.5, os._exit, 1)
            raise JsonRpcException(message=message, code=commands.REQUEST_FAILED) from exc
        ls.startup_problems = problems + setting_problems

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: SeriServer, params: types.InitializedParams) -> None:
        if ls.engine is None:
            return
        ready = ls.mark_starting()
        engine = ls.engine
        for problem in ls.startup_problems:
            engine.host.show("warning", problem)
        try:
            await engine.start()
        except Exception as exc:
            logger.exception("Start-up failed")
            engine.host.show("error", f"seri-lsp start-up failed: {exc}")
        ready.set_result(engine)

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: SeriServer, params: None) -> None:
        if ls.engine is not None:
            await ls.engine.close()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def on_folders_changed(ls: SeriServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        if ls.engine is None:
            return
        paths = [to_fs_path(folder.uri) for folder in ls.workspace.folders.values()]
        ls.engine.set_workspace_roots([Path(os.path.realpath(p)) for p in paths if p])


def create_server(options: ServerOptions | None = None) -> SeriServer:
    """A fully wired server, ready for `start_io` or `start_tcp`."""
    server = SeriServer(options or ServerOptions())
    setup_lifecycle(server)
    commands.setup(server)
    return server
