"""The engine's Host for one ACP session: session updates, permission questions, files.

Every engine event becomes `session/update`s (see `transcript`), sent in order through
the connection's outbox. What seri tells the user appears in the transcript as a note.
A question (a write permission, a memory to keep, a check to run) is asked with
`session/request_permission`, about the tool call running now or, when none is, about a
tool call of its own that shows the question; its choices become the permission options
(allow once, allow always for the session, reject once, or reject always when the
question is asked once per session). When the client offers
`fs/read_text_file` and `fs/write_text_file`, the tools read and write through it, so
they see unsaved buffers and their changes land in the editor's undo history; paths are
confined to the workspace before any request is made.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from acp.schema import (
    AllowedOutcome,
    FileSystemCapabilities,
    PermissionOption,
    PermissionOptionKind,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    ToolKind,
)

from seri_lsp.acp.toolcalls import ToolContent, present, proposed_change, text_content
from seri_lsp.acp.transcript import Transcript, Update
from seri_lsp.agent.workspace import Workspace
from seri_lsp.events import Event
from seri_lsp.host import EditResult, Host, Level

if TYPE_CHECKING:
    from acp.interfaces import Client

    from seri_lsp.acp.outbox import Outbox

logger = logging.getLogger(__name__)

_LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO}
_REJECT = re.compile(r"^(deny|don'?t|do not|reject|no|skip|cancel|never)\b", re.IGNORECASE)
_ALWAYS = re.compile(r"\b(always|session)\b", re.IGNORECASE)
_BINARY_SNIFF = 8192


def option_kind(choice: str, choices: list[str]) -> PermissionOptionKind:
    """How a question's choice reads as an ACP permission option.

    A question whose every allowing choice lasts for the session is asked once per
    session (`permissions.run`: "Allow for this session" / "Deny"), so its rejection
    lasts for the session too: `reject_always`.
    """
    if _REJECT.search(choice):
        allowing = [c for c in choices if not _REJECT.search(c)]
        lasting = bool(allowing) and all(_ALWAYS.search(c) for c in allowing)
        return "reject_always" if lasting else "reject_once"
    if _ALWAYS.search(choice):
        return "allow_always"
    return "allow_once"


def option_id(choice: str) -> str:
    """A stable id for a choice: its words in lower case, joined by dashes
    ("Allow for this session" -> "allow-for-this-session", "Don't remember" -> "dont-remember")."""
    words = re.findall(r"[a-z0-9]+", choice.lower().replace("'", ""))
    return "-".join(words) or "choice"


class AcpHost(Host):
    """Serves the engine of one ACP session."""

    def __init__(self, client: Client, outbox: Outbox, fs: FileSystemCapabilities | None) -> None:
        self._client = client
        self._outbox = outbox
        self._reads = bool(fs and fs.read_text_file)
        self._writes = bool(fs and fs.write_text_file)
        # Files written through the editor: it holds them, saved to disk or not yet.
        self._written: set[Path] = set()
        self.session_id: str | None = None  # the ACP session id, once the client knows it
        self.transcript = Transcript()
        self._held: list[Update] | None = []
        self._questions = itertools.count(1)
        self.shown: list[str] = []  # what `show` told the user (a face may reset it)

    # --- the session's updates ------------------------------------------------------------

    def attach(self, workspace: Workspace) -> None:
        """Place the tools' paths in this workspace (for tool call locations), as written:
        the event loop reads nothing from disk for it."""

        def locate(raw: str) -> str | None:
            where = workspace.locate(raw)
            return None if where is None else str(where)

        self.transcript.locate = locate

    def hold(self) -> None:
        """Keep updates back (the client does not know the session yet, or a replay is
        being put together)."""
        if self._held is None:
            self._held = []

    def release(self, session_id: str) -> None:
        """Send the held updates, and every later one at once, for `session_id`."""
        self.session_id = session_id
        held, self._held = self._held or [], None
        for update in held:
            self._outbox.put(session_id, update)

    def take_held(self) -> list[Update]:
        """The updates held so far (they are no longer held); holding goes on."""
        held, self._held = self._held or [], []
        return held

    def send(self, updates: list[Update]) -> None:
        """Send updates (or hold them while the session is held)."""
        if self._held is not None or self.session_id is None:
            if self._held is None:
                self._held = []
            self._held.extend(updates)
            return
        for update in updates:
            self._outbox.put(self.session_id, update)

    def note(self, text: str, kind: str) -> None:
        """A visible note in the transcript."""
        self.send(self.transcript.note(text, kind))

    async def flush(self) -> None:
        """Wait until the updates sent so far reached the client."""
        await self._outbox.flush()

    def emit(self, event: Event) -> None:
        self.send(self.transcript.on_event(event))

    def log(self, level: Level, message: str) -> None:
        logger.log(_LEVELS.get(level, logging.DEBUG), message)

    def show(self, level: Level, message: str) -> None:
        self.log(level, message)
        self.shown.append(message)
        self.note(message, level)

    def show_report(self, text: str) -> None:
        """A report keeps its lines and columns in the transcript (markdown): fenced."""
        self.shown.append(text)
        self.note(f"```\n{text}\n```", "info")

    # --- questions --------------------------------------------------------------------

    async def ask(self, message: str, choices: list[str]) -> str | None:
        if self.session_id is None or not choices:
            return None
        running = self.transcript.call_for_question()
        if running is not None:
            call_id, call = running
            shown = present(call, self.transcript.locate)
            content: list[ToolContent] = [text_content(message)]
            preview = proposed_change(call, self.transcript.locate)
            if preview is not None:
                content.append(preview)
            tool_call = ToolCallUpdate(
                tool_call_id=call_id,
                title=shown.title,
                kind=shown.kind,
                content=content,
                locations=shown.locations or None,
            )
        else:
            call_id = f"seri-question-{next(self._questions)}"
            tool_call = ToolCallUpdate(
                tool_call_id=call_id, title=message, kind=_question_kind(message), status="pending"
            )
            self.send(
                [
                    ToolCallStart(
                        session_update="tool_call",
                        tool_call_id=call_id,
                        title=message,
                        kind=_question_kind(message),
                        status="pending",
                    )
                ]
            )
        options = [
            PermissionOption(
                option_id=option_id(choice), name=choice, kind=option_kind(choice, choices)
            )
            for choice in choices
        ]
        by_id = {option.option_id: choice for option, choice in zip(options, choices, strict=True)}
        answer: str | None = None
        try:
            await self._outbox.flush()  # the client knows the tool call before the question
            response = await self._client.request_permission(
                session_id=self.session_id, tool_call=tool_call, options=options
            )
            if isinstance(response.outcome, AllowedOutcome):
                answer = by_id.get(response.outcome.option_id)
        except Exception as exc:
            logger.warning("session/request_permission failed: %s", exc)
        finally:
            if running is None:
                self._answered(call_id, answer)
        return answer

    def _answered(self, call_id: str, answer: str | None) -> None:
        said = f"Answer: {answer}" if answer is not None else "Not answered."
        self.send(
            [
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=call_id,
                    status="completed" if answer is not None else "failed",
                    content=[text_content(said)],
                )
            ]
        )

    # --- files ----------------------------------------------------------------------------

    async def read_file(self, path: Path) -> str | None:
        if not self._reads or self.session_id is None:
            return None
        if path not in self._written and not await asyncio.to_thread(_readable_text_file, path):
            return None  # absent, a folder, a special or a binary file: the disk says which
        try:
            response = await self._client.read_text_file(session_id=self.session_id, path=str(path))
        except Exception as exc:
            logger.warning("fs/read_text_file of %s failed (%s); reading the disk.", path, exc)
            return None
        return response.content

    @property
    def writes_files(self) -> bool:
        return self._writes and self.session_id is not None

    async def write_file(self, path: Path, text: str) -> EditResult:
        assert self.session_id is not None
        try:
            await self._client.write_text_file(
                session_id=self.session_id, path=str(path), content=text
            )
        except Exception as exc:
            return EditResult(False, f"fs/write_text_file failed: {exc}")
        self._written.add(path)
        return EditResult(True)


def _question_kind(message: str) -> ToolKind:
    return "execute" if message.lower().startswith("seri wants to run") else "other"


def _readable_text_file(path: Path) -> bool:
    """Whether `path` is a regular file that does not look binary."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as handle:
            return b"\x00" not in handle.read(_BINARY_SNIFF)
    except OSError:
        return False
