"""The engine's Host, served by the language server: notifications, requests, buffers."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from seri_lsp.events import (
    Activity,
    Compacted,
    Delta,
    Event,
    MessageStored,
    SessionChanged,
    ToolOutput,
    TurnEnded,
)
from seri_lsp.host import Answer, EditResult, Host, Level, ProgressReporter, Question
from seri_lsp.limits import clean_text
from seri_lsp.lsp.wire import to_wire

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer
    from pygls.workspace import TextDocument

logger = logging.getLogger(__name__)

SAVE_DOCUMENTS = "seri/saveDocuments"
APPROVE = "seri/approve"
# The longest note a user may give with a refusal (more is cut): it goes to the model.
MAX_NOTE_CHARS = 2000
# How long the editor has to save the documents before the checks run without them.
SAVE_TIMEOUT = 10.0

NOTIFICATIONS: dict[type, str] = {
    SessionChanged: "seri/sessionChanged",
    MessageStored: "seri/message",
    Delta: "seri/delta",
    Compacted: "seri/compacted",
    TurnEnded: "seri/turnEnded",
    Activity: "seri/status",
    ToolOutput: "seri/toolOutput",
}

_MESSAGE_TYPES = {
    "error": types.MessageType.Error,
    "warning": types.MessageType.Warning,
    "info": types.MessageType.Info,
    "log": types.MessageType.Log,
}


class _LspProgress(ProgressReporter):
    def __init__(self, server: LanguageServer, token: str | None) -> None:
        self._server = server
        self._token = token

    def report(self, message: str, percentage: int | None = None) -> None:
        if self._token is not None:
            self._server.work_done_progress.report(
                self._token,
                types.WorkDoneProgressReport(message=message, percentage=percentage),
            )


class LspHost(Host):
    """Turns engine events into `seri/*` notifications and engine needs into LSP calls."""

    def __init__(self, server: LanguageServer) -> None:
        self.server = server
        # The real path of each open document's uri (None: not a file), worked out once
        # per uri, on a thread, when it opens (`note_opened`): following links reads the
        # disk, which the event loop never waits on.
        self._real_paths: dict[str, Path | None] = {}

    async def note_opened(self, uri: str) -> None:
        """A document opened: work out its real path before a tool looks for it."""
        if uri not in self._real_paths:
            self._real_paths[uri] = await asyncio.to_thread(_real_path, uri)

    def emit(self, event: Event) -> None:
        method = NOTIFICATIONS.get(type(event))
        if method is None:
            return  # an event the LSP contract has no notification for
        self.server.protocol.notify(method, to_wire(event))

    def log(self, level: Level, message: str) -> None:
        self.server.window_log_message(
            types.LogMessageParams(type=_MESSAGE_TYPES[level], message=message)
        )

    def show(self, level: Level, message: str) -> None:
        self.server.window_show_message(
            types.ShowMessageParams(type=_MESSAGE_TYPES[level], message=message)
        )

    async def ask(self, message: str, choices: list[str]) -> str | None:
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=message,
            actions=[types.MessageActionItem(title=choice) for choice in choices],
        )
        try:
            answer = await self._request(types.WINDOW_SHOW_MESSAGE_REQUEST, params)
        except Exception:
            logger.exception("window/showMessageRequest failed")
            return None
        return answer.title if answer is not None else None

    @property
    def shows_approvals(self) -> bool:
        """Whether the client shows questions with what they are about (`seri/approve`):
        it announces `experimental.seri.approvals: true` in its capabilities."""
        experimental = self.server.client_capabilities.experimental
        seri = experimental.get("seri") if isinstance(experimental, dict) else None
        return isinstance(seri, dict) and seri.get("approvals") is True

    async def approve(self, question: Question) -> Answer:
        """`seri/approve` for a client that shows it, else `window/showMessageRequest`.

        An answer that is not one of the choices, an error or a client that does not
        know the method counts as no answer; a cancelled task withdraws the question
        (`$/cancelRequest`)."""
        if not self.shows_approvals:
            return await super().approve(question)
        # The request's own id, also in its params: Neovim's handlers are not given the
        # id, yet must match the `$/cancelRequest` that withdraws the question.
        msg_id = str(uuid.uuid4())
        params = {
            "requestId": msg_id,
            "sessionId": question.session_id,
            "kind": question.kind,
            "message": question.message,
            "choices": list(question.choices),
            **question.details,
        }
        try:
            answer = await self._request(APPROVE, params, msg_id)
        except Exception as exc:
            logger.warning("%s failed: %s", APPROVE, exc)
            return Answer(None)
        choice = _field(answer, "choice")
        if choice not in question.choices:
            if choice is not None:
                logger.warning("%s answered %r, not one of %s", APPROVE, choice, question.choices)
            return Answer(None)
        note = _field(answer, "note")
        note = clean_text(note[:MAX_NOTE_CHARS]) if isinstance(note, str) else ""
        return Answer(choice, note)

    async def _request(self, method: str, params: Any, msg_id: str | None = None) -> Any:
        """A request to the client whose waiting can be cancelled: the client then gets
        `$/cancelRequest` (its dialog or card goes away) instead of a question left open.

        The request's own future is shielded: the client's late answer (RequestCancelled)
        then completes a future nobody waits for, instead of one already cancelled.
        `msg_id` is the request's id, when its params must name it too."""
        msg_id = msg_id or str(uuid.uuid4())
        protocol = self.server.protocol
        request = protocol.send_request_async(method, params, msg_id=msg_id)
        try:
            return await asyncio.shield(request)
        except asyncio.CancelledError:
            request.add_done_callback(_ignore_outcome)
            protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise

    @asynccontextmanager
    async def progress(self, title: str) -> AsyncIterator[ProgressReporter]:
        token: str | None = None
        capabilities = self.server.client_capabilities
        if capabilities.window is not None and capabilities.window.work_done_progress:
            token = f"seri-{uuid.uuid4()}"
            try:
                await self.server.work_done_progress.create_async(token)
            except Exception:
                logger.warning("The client refused a progress token; going on without one.")
                token = None
        if token is not None:
            self.server.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title=title, cancellable=False)
            )
        try:
            yield _LspProgress(self.server, token)
        finally:
            if token is not None:
                self.server.work_done_progress.end(token, types.WorkDoneProgressEnd())

    def open_documents(self) -> dict[Path, str]:
        return {real: document.source for _, real, document in self._open_files()}

    def document_text(self, path: Path) -> str | None:
        # `path` is real already (see seri_lsp.host): compared as it is, no disk read.
        return next((d.source for _, r, d in self._open_files() if r == path), None)

    def _open_files(self) -> list[tuple[str, Path, TextDocument]]:
        """The open documents that are files: (uri, real path, document)."""
        documents = self.server.workspace.text_documents
        known = self._real_paths
        if len(known) > 2 * len(documents) + 64:  # forget the uris closed since
            self._real_paths = known = {uri: known[uri] for uri in documents if uri in known}
        files = []
        for uri, document in documents.items():
            # Until its real path is known (a moment after it opened), a document is
            # where its uri says: no disk read here.
            real = known[uri] if uri in known else _named_path(uri)
            if real is not None:
                files.append((uri, real, document))
        return files

    @property
    def can_apply_edits(self) -> bool:
        workspace = self.server.client_capabilities.workspace
        return bool(workspace is not None and workspace.apply_edit)

    async def apply_edit(
        self, path: Path, base_text: str, start: int, end: int, new_text: str
    ) -> EditResult:
        uri, version = self._document_identity(path)
        edit = types.TextEdit(
            range=types.Range(
                start=self._position(base_text, start), end=self._position(base_text, end)
            ),
            new_text=new_text,
        )
        capabilities = self.server.client_capabilities.workspace
        document_changes = bool(
            capabilities is not None
            and capabilities.workspace_edit is not None
            and capabilities.workspace_edit.document_changes
        )
        if document_changes:
            workspace_edit = types.WorkspaceEdit(
                document_changes=[
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(
                            uri=uri, version=version
                        ),
                        edits=[edit],
                    )
                ]
            )
        else:
            workspace_edit = types.WorkspaceEdit(changes={uri: [edit]})
        return await self._apply(workspace_edit, f"seri: {path.name}")

    @property
    def can_delete_files(self) -> bool:
        workspace = self.server.client_capabilities.workspace
        edits = workspace.workspace_edit if workspace is not None else None
        operations = (edits.resource_operations if edits is not None else None) or []
        return self.can_apply_edits and types.ResourceOperationKind.Delete in operations

    async def delete_file(self, path: Path) -> EditResult:
        uri, _ = self._document_identity(path)
        delete = types.DeleteFile(
            uri=uri, options=types.DeleteFileOptions(ignore_if_not_exists=True)
        )
        return await self._apply(
            types.WorkspaceEdit(document_changes=[delete]), f"seri: delete {path.name}"
        )

    async def _apply(self, edit: types.WorkspaceEdit, label: str) -> EditResult:
        """Send `workspace/applyEdit` and say whether the editor applied it (and why not)."""
        try:
            result = await self.server.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label=label)
            )
        except Exception as exc:
            return EditResult(False, f"workspace/applyEdit failed ({exc})")
        if result.applied:
            return EditResult(True)
        return EditResult(False, result.failure_reason or "no reason given")

    async def save_files(self, paths: Sequence[Path]) -> list[Path]:
        """`seri/saveDocuments`: the editor saves what it holds unsaved among `paths`.

        A client without it (MethodNotFound), an error or no answer within
        `SAVE_TIMEOUT` seconds leaves every one of them unsaved, as far as seri knows.
        """
        if not paths:
            return []
        by_uri = {self._document_identity(path)[0]: path for path in paths}
        request = self.server.protocol.send_request_async(SAVE_DOCUMENTS, {"uris": list(by_uri)})
        try:
            # Shielded: a late answer then completes a request nobody waits for, instead
            # of one whose future was cancelled.
            result = await asyncio.wait_for(asyncio.shield(request), SAVE_TIMEOUT)
        except TimeoutError:
            logger.warning("%s got no answer within %s s", SAVE_DOCUMENTS, SAVE_TIMEOUT)
            return list(paths)
        except Exception as exc:
            logger.info("%s failed: %s", SAVE_DOCUMENTS, exc)
            return list(paths)
        return await asyncio.to_thread(_still_unsaved, by_uri, _saved_uris(result))

    def _document_identity(self, path: Path) -> tuple[str, int | None]:
        for uri, open_real, document in self._open_files():
            if open_real == path:  # a real path already (see seri_lsp.host)
                return uri, document.version
        return from_fs_path(str(path)) or path.as_uri(), None

    def _position(self, text: str, offset: int) -> types.Position:
        line = text.count("\n", 0, offset)
        line_start = text.rfind("\n", 0, offset) + 1
        codec = self.server.workspace.position_codec
        return types.Position(line=line, character=codec.client_num_units(text[line_start:offset]))


def _ignore_outcome(future: asyncio.Future[Any]) -> None:
    """Take the outcome of a request nobody waits for any more (no 'never retrieved')."""
    if not future.cancelled():
        future.exception()


def _field(result: Any, name: str) -> Any:
    """A field of a client's answer (pygls hands a custom one over as a namedtuple)."""
    if isinstance(result, dict):
        return result.get(name)
    return getattr(result, name, None)


def _saved_uris(result: Any) -> list[str]:
    """The `saved` uris of a `seri/saveDocuments` answer (pygls hands it over as a
    namedtuple); anything malformed counts as nothing saved."""
    saved = result.get("saved") if isinstance(result, dict) else getattr(result, "saved", None)
    if not isinstance(saved, list | tuple):
        return []
    return [uri for uri in saved if isinstance(uri, str)]


def _real_path(uri: str) -> Path | None:
    """The canonical path a file uri names (None: not a file uri)."""
    path = to_fs_path(uri)
    return Path(os.path.realpath(path)) if path is not None else None


def _still_unsaved(by_uri: dict[str, Path], saved: list[str]) -> list[Path]:
    """The paths whose uris the editor did not report saved, uris compared as the real
    paths they name (links followed: run on a thread)."""
    done = {_real(uri) for uri in saved}
    return [path for uri, path in by_uri.items() if _real(uri) not in done]


def _named_path(uri: str) -> Path | None:
    """The absolute path a file uri names, links not followed (None: not a file uri)."""
    path = to_fs_path(uri)
    return Path(os.path.abspath(path)) if path is not None else None


def _real(uri: str) -> Path | str:
    """A file uri as the canonical path it names (an unusable one stays as it is)."""
    real = _real_path(uri)
    return real if real is not None else uri
