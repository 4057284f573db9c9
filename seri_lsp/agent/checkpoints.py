"""Taking checkpoints: one per user prompt, filled in by the write tools as they work.

Before a prompt's task starts, `CheckpointKeeper.take` records the prompt's position in
the conversation (and a snapshot of the rest of the conversation's state) and returns
the task's `TaskCheckpoint`. The task's write tools, its subagents' included, tell it
about every change (`FileChanges`): the content before the task's first change to a
path (or "absent" for a file being created), and after every successful write what seri
wrote. A task that is cancelled or fails keeps its checkpoint for what it did change.

Taking a checkpoint, and opening a session, touch the session; each time, the
checkpoints of the project's sessions beyond the 20 most recently touched are retired.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from seri_lsp.agent.workspace import FileChanges, WorkspacePath
from seri_lsp.context.conversation import Conversation
from seri_lsp.errors import StoreBusy
from seri_lsp.host import Host
from seri_lsp.store.checkpoints import Checkpoint, CheckpointStore
from seri_lsp.store.worker import Worker

logger = logging.getLogger(__name__)


def encode(text: str) -> bytes:
    """A text as stored in a blob (the tools only ever hold UTF-8 text)."""
    return text.encode("utf-8", "surrogatepass")


def decode(data: bytes) -> str:
    """A blob back as text."""
    return data.decode("utf-8", "surrogatepass")


class TaskCheckpoint(FileChanges):
    """The checkpoint of one running task; its tools (and subagents' tools) report here."""

    def __init__(self, checkpoint: Checkpoint, store: CheckpointStore, io: Worker, host: Host):
        self.checkpoint = checkpoint
        self._store = store
        self._io = io
        self._host = host
        # Paths this task has changed (canonical path -> display), in the order first changed.
        self._seen: dict[str, str] = {}
        self._gone = False

    @property
    def files(self) -> list[str]:
        """Display paths of the files this task changed so far."""
        return list(self._seen.values())

    async def before(self, target: WorkspacePath, current: str | None) -> None:
        await self._before(target, None if current is None else encode(current))

    async def command_changed(
        self, target: WorkspacePath, before: bytes | None, after: bytes | None
    ) -> None:
        """A `run` command changed a file: recorded like a write tool's change, as bytes
        (binary and non-UTF-8 content included; None: absent before, or deleted)."""
        await self._before(target, before)
        await self._after(target, after)

    async def _before(self, target: WorkspacePath, data: bytes | None) -> None:
        key = str(target.real)
        if key in self._seen or self._gone:
            return
        # Claimed before the first wait, so a parallel subagent's write to the same path
        # never records a "before" that is already this task's own change.
        self._seen[key] = target.display
        try:
            kept = await self._io(
                self._store.record_before, self.checkpoint.id, key, target.display, data
            )
        except BaseException:
            del self._seen[key]
            raise  # the write does not happen: it could not be undone
        if not kept:
            self._gone = True
            self._host.log(
                "warning",
                "This session's checkpoints were retired while a task ran; its changes "
                "cannot be rewound.",
            )

    async def after(self, target: WorkspacePath, text: str) -> None:
        await self._after(target, encode(text))

    async def _after(self, target: WorkspacePath, data: bytes | None) -> None:
        key = str(target.real)
        if key not in self._seen or self._gone:
            return
        try:
            await self._io(self._store.record_after, self.checkpoint.id, key, data)
        except StoreBusy:
            # The write happened; a rewind will see the file as changed by someone else
            # and leave it alone unless forced. Better than failing a write that is done.
            self._host.log(
                "warning",
                f"Could not record seri's change to {target.display} in its checkpoint "
                "(seri.db is busy); a rewind will treat the file as changed since.",
            )

    async def finish(self, conversation: Conversation) -> None:
        """The task ended (however): record the checkpoint with the files it covers."""
        try:
            await conversation.record_event(
                "checkpoint",
                {
                    "checkpointId": self.checkpoint.id,
                    "promptSeq": self.checkpoint.prompt_seq,
                    "files": self.files,
                },
            )
        except StoreBusy:
            self._host.log("warning", "Could not record the checkpoint event: seri.db is busy.")


class CheckpointKeeper:
    """Takes checkpoints for one engine's prompts and applies retention."""

    def __init__(
        self,
        *,
        store: CheckpointStore,
        io: Worker,
        host: Host,
        project: str,
        in_use: Callable[[str], bool],
    ) -> None:
        self.store = store
        self.io = io
        self.host = host
        self.project = project
        # Whether a session is open, in this process or another (read on the DB thread).
        self._in_use = in_use

    async def take(self, conversation: Conversation, prompt: str) -> TaskCheckpoint:
        """Record a checkpoint before `prompt`'s task starts (then apply retention)."""
        checkpoint = await self.io(self.store.take, conversation.session_id, prompt)
        await self.retain()
        return TaskCheckpoint(checkpoint, self.store, self.io, self.host)

    async def retain(self) -> None:
        """Retire the checkpoints of the project's sessions beyond the 20 most recent.

        A session open in this or another seri process keeps its checkpoints. Never
        fails the work that touched a session: a busy database only postpones retention
        to the next touch.
        """
        try:
            retired = await self.io(self.store.retain, self.project, spare=self._in_use)
        except StoreBusy:
            self.host.log("info", "Checkpoint retention postponed: seri.db is busy.")
            return
        for session_id in retired:
            self.host.log(
                "info",
                f"Retired the checkpoints of session {session_id}: seri keeps them for the "
                "20 most recently used sessions of a project. Its conversation is intact.",
            )
