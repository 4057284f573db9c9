"""What the engine needs from the face it runs behind (an editor, or a terminal).

The engine never imports pygls; it talks to this interface. The defaults describe a
host with no editor: no open buffers, no workspace edits, nobody to ask.

Files reach the tools in one of two ways. An LSP editor shows its open buffers
(`document_text`) and changes files by edits (`apply_edit`); an ACP editor reads and
writes whole files for the agent (`read_file`, `write_file` with `writes_files`), its
unsaved buffers and undo included. The defaults of the file hooks keep the first way.

Every path the engine hands the file hooks is a real path (symbolic links followed, as
`Workspace.resolve` gives it, on a tool thread): a host compares it as it is and reads
nothing from disk on the event loop to canonicalise it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from seri_lsp.events import Activity, Event

Level = Literal["error", "warning", "info", "log"]


@dataclass(frozen=True)
class EditResult:
    """How a host applied (or refused) a change to a file's text."""

    applied: bool
    reason: str = ""


QuestionKind = Literal["write", "memory", "checks", "command", "mcp", "mcpServers"]


@dataclass(frozen=True)
class Question:
    """Something a task waits on the user for: a write, a memory line, running checks.

    `message` is the sentence asked and `choices` the answers offered (the same words a
    `window/showMessageRequest` shows); `details` says what the question is about, in the
    wire's camelCase, so an editor can show it (a write's path and its text before and
    after, a memory's line, the checks' commands). `session_id` is the top-level session
    whose task asks (a subagent's question is its parent's).
    """

    kind: QuestionKind
    message: str
    choices: tuple[str, ...]
    session_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Answer:
    """The user's answer: one of the question's choices, or None (no answer); `note` is
    what they added to a refusal, for the model to read."""

    choice: str | None
    note: str = ""


# Why a request was refused when nobody answered (no terminal, a dismissed dialog).
NO_ANSWER = "the user did not answer the permission request"


def refusal(answer: Answer, what: str) -> str:
    """Why a refused request of `what` (`write`, `command`, `call`) did not go ahead, for
    the model: no answer, or the user's Deny with their note (whitespace folded)."""
    if answer.choice is None:
        return NO_ANSWER
    note = " ".join(answer.note.split())
    return f"the user denied this {what}: {note}" if note else f"the user denied this {what}"


class ProgressReporter:
    """Reports the progress of one piece of long work."""

    def report(self, message: str, percentage: int | None = None) -> None:
        """Tell the user how far the work has come."""


class Host:
    """The face's services. Subclasses override what their face can do."""

    def emit(self, event: Event) -> None:
        """Deliver an engine event (a stored message, a delta, ...)."""

    def log(self, level: Level, message: str) -> None:
        """Write to the face's log (LSP `window/logMessage`)."""

    def show(self, level: Level, message: str) -> None:
        """Tell the user something now (LSP `window/showMessage`)."""

    def show_report(self, text: str) -> None:
        """Show a report of aligned lines (`/cost`, `/context`); by default as a notice."""
        self.show("info", text)

    async def ask(self, message: str, choices: list[str]) -> str | None:
        """Ask the user to pick one of `choices`; None when nobody can answer."""
        return None

    async def approve(self, question: Question) -> Answer:
        """Ask a question a task waits on. By default as a plain `ask` (the sentence and
        the choices); a face that can show what the question is about overrides it."""
        return Answer(await self.ask(question.message, list(question.choices)))

    @asynccontextmanager
    async def progress(self, title: str) -> AsyncIterator[ProgressReporter]:
        """Report long work (LSP `$/progress`) for the duration of the block."""
        yield ProgressReporter()

    def document_text(self, path: Path) -> str | None:
        """The editor's (possibly unsaved) text of `path`, if it has it open."""
        return None

    def open_documents(self) -> dict[Path, str]:
        """Every document the editor has open, with its current text."""
        return {}

    async def read_file(self, path: Path) -> str | None:
        """The editor's text of `path`, unsaved changes included, when the editor serves
        it; None and the tools read the disk. By default, the open document's text."""
        return self.document_text(path)

    @property
    def writes_files(self) -> bool:
        """Whether the tools write (and create) files through `write_file` rather than
        with `apply_edit` and the disk."""
        return False

    async def write_file(self, path: Path, text: str) -> EditResult:
        """Replace the whole text of `path` (creating it if need be) through the editor."""
        return EditResult(False, "this host cannot write files")

    @property
    def can_apply_edits(self) -> bool:
        """Whether `apply_edit` can change files through the editor."""
        return False

    async def apply_edit(
        self, path: Path, base_text: str, start: int, end: int, new_text: str
    ) -> EditResult:
        """Replace `base_text[start:end]` with `new_text` in the editor's copy of `path`."""
        return EditResult(False, "this host cannot edit documents")

    @property
    def can_delete_files(self) -> bool:
        """Whether `delete_file` can delete files through the editor."""
        return False

    async def delete_file(self, path: Path) -> EditResult:
        """Delete `path` through the editor, which closes its buffer too."""
        return EditResult(False, "this host cannot delete files")

    async def save_files(self, paths: Sequence[Path]) -> list[Path]:
        """Ask the editor to save its open documents among `paths`, so that commands run
        on the disk (the checks) see the text the tools gave them; returns the paths that
        are still open with unsaved changes. By default, nothing is left unsaved."""
        return []


async def ask_user(host: Host, question: Question, resume: Activity | None = None) -> Answer:
    """Ask `question` through the host, telling the editor meanwhile that the task waits
    for the user (`approval`), and what it does again once answered (`resume`)."""
    if question.session_id is not None:
        path = question.details.get("path") if question.kind == "write" else None
        detail = f"{question.kind} {path}" if path else question.kind
        host.emit(Activity(question.session_id, "approval", detail))
    try:
        return await host.approve(question)
    finally:
        if resume is not None:
            host.emit(resume)
