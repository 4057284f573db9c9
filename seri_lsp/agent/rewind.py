"""Rewinding: going back n prompts in the conversation, the files, or both.

`seri.rewind {steps, restore, force}` and `/rewind [n] [both|conversation|files]` undo
the n most recent prompts of the open session:

- conversation: the n prompts and everything after them leave the session, in one
  transaction, and the session continues from before them (its title, path lists,
  delivered glob rules and billed count go back with it). The earliest removed
  prompt's text comes back as `prompt`, for the editor's input.
- files: every file those tasks changed goes back to its content before them (the
  "before" of the oldest of the n checkpoints that changed it; a file they created is
  deleted): through the editor when it writes files for the agent (ACP
  `fs/write_text_file`) or has the file open (`workspace/applyEdit`; a `DeleteFile` for a
  created one when the client can delete files, else it goes on disk and the user is
  warned of the open buffer), so its buffer and undo stay right, else atomically on disk.
  A file whose current content (the editor's text when it serves the file, else the
  disk) is not what seri last wrote was changed since by something else: it is a
  conflict, left alone and listed, unless `force`.

What remains afterwards: rewinding the conversation deletes the checkpoints of the
removed prompts (what they last wrote passes to the newest remaining checkpoint that
changed the same file, so later rewinds judge conflicts against seri's last write). A
files-only rewind keeps the checkpoints (their prompts stay) and records the restored
contents as seri's last write, so a later rewind does not take them for conflicts.

A rewind is refused, changing nothing, while a task runs, for a session another seri
process holds, when its prompts' checkpoints were retired, when any of the n prompts
was evicted by a compaction (it never steps across one) and, in a fork, when one of them
was copied from the session it was forked from (it stops at the fork point); a `both`
rewind also
when a file to put back is outside the workspace folders now. A file that cannot be put
back (the editor refuses, the disk fails) makes a `both` rewind files-only: the
conversation and the checkpoints stay (`conversationKept`), so nothing saved is lost and
the same rewind can be tried again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import stat
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seri_lsp.agent import disk
from seri_lsp.agent.checkpoints import decode, encode
from seri_lsp.agent.disk import DiskError, Stop
from seri_lsp.agent.tasks import Tasks
from seri_lsp.agent.workspace import Workspace
from seri_lsp.context.conversation import Conversation
from seri_lsp.context.session_manager import SessionManager
from seri_lsp.errors import InvalidArgument, SeriError, SessionHeld
from seri_lsp.events import SessionChanged
from seri_lsp.host import EditResult, Host
from seri_lsp.limits import MAX_REWIND_STEPS, shorten
from seri_lsp.slash import BY_NAME
from seri_lsp.store.checkpoints import (
    KEEP_SESSIONS,
    Checkpoint,
    CheckpointStore,
    SessionCheckpoints,
    sha256_of,
)
from seri_lsp.store.worker import Worker
from seri_lsp.waits import Wait

RESTORE_MODES = ("both", "conversation", "files")
RECAP_NOTE = (
    "The recap of the earlier conversation stays: a compaction after the rewound prompt "
    "summarised the history before it, and a rewind does not undo a compaction."
)
KEPT_NOTE = (
    "Only files were rewound: a file could not be put back, so the conversation and its "
    "checkpoints were kept; the same rewind can be tried again."
)
USAGE = BY_NAME["rewind"].usage
PROMPT_LENGTH = 80
# How long a rewind waits for the editor to apply one file's change.
EDITOR_ANSWER_SECONDS = Wait("EDITOR_ANSWER_SECONDS", 10.0)
# A file that cannot be read (a folder now, not UTF-8, too big) matches no content.
_UNREADABLE = "unreadable"


@dataclass(frozen=True)
class RewindPoint:
    """A prompt that can be rewound: `steps` back, what it said, when, the files it
    changed, and those changed since (a rewind of them needs `force`)."""

    steps: int
    prompt: str
    created_at: str
    files: list[str]
    conflicts: list[str]


@dataclass(frozen=True)
class Checkpoints:
    """`seri.checkpoints`'s answer, newest first; `retired`: the session's checkpoints
    were retired (seri keeps them for a project's most recently used sessions)."""

    checkpoints: list[RewindPoint]
    retired: bool


@dataclass(frozen=True)
class RewindRequest:
    """What to rewind: how many prompts, what to restore, and whether to overwrite."""

    steps: int = 1
    restore: str = "both"
    force: bool = False
    # A prompt's message id (`messages.seq`): rewind to just before it (overrides steps).
    message_id: int | None = None
    # Only say what the rewind would leave alone (`conflicts`), changing nothing: the
    # editor asks whether to overwrite those before it rewinds.
    check: bool = False


def parse_rewind(argument: str) -> RewindRequest:
    """The words after `/rewind`: a number, a restore mode and `force`, in any order."""
    steps: int | None = None
    restore: str | None = None
    force = False
    for word in argument.split():
        lowered = word.lower()
        if word.isascii() and word.isdigit():
            number = int(word) if len(word) <= len(str(MAX_REWIND_STEPS)) else 0
            if steps is not None or not 1 <= number <= MAX_REWIND_STEPS:
                raise _bad_slash(
                    word,
                    f"give the number of prompts once, a whole number from 1 to "
                    f"{MAX_REWIND_STEPS:,}",
                )
            steps = number
        elif lowered in RESTORE_MODES:
            if restore is not None:
                raise _bad_slash(word, "give one of both, conversation or files")
            restore = lowered
        elif lowered in ("force", "--force"):
            force = True
        else:
            raise _bad_slash(word, "expected a number, both, conversation, files or force")
    return RewindRequest(steps or 1, restore or "both", force)


def _bad_slash(word: str, why: str) -> InvalidArgument:
    return InvalidArgument(
        "text", f"/rewind does not understand {shorten(word)!r}: {why}. Usage: {USAGE}"
    )


def plural(n: int) -> str:
    return f"{n} prompt" if n == 1 else f"{n} prompts"


def reachable(data: SessionCheckpoints) -> list[Checkpoint]:
    """The checkpoints a rewind can reach, newest first: one per prompt still in the
    conversation (so none across a compaction), up to the first prompt without one."""
    found = []
    for prompt in data.prompts:
        checkpoint = data.checkpoints.get(prompt.seq)
        if checkpoint is None:
            break
        found.append(checkpoint)
    return found


def steps_to(data: SessionCheckpoints, message_id: int | None, seq: int | None, steps: int) -> int:
    """How many prompts back the prompt `message_id` (at `seq` in its session, None: not
    in it) is; `steps` without one."""
    if message_id is None:
        return steps
    for back, prompt in enumerate(data.prompts, start=1):
        if seq is not None and prompt.seq == seq:
            return back
    raise InvalidArgument(
        "messageId",
        f"message {message_id} is not one of this session's prompts (it may have been "
        "rewound or compacted away)",
    )


def refusal(data: SessionCheckpoints, steps: int, session_id: str) -> str | None:
    """Why `steps` prompts cannot be rewound (None: they can)."""
    can = len(reachable(data))
    if steps <= can:
        return None
    what = f"Cannot rewind {plural(steps)}"
    if can == len(data.prompts):  # the conversation holds no earlier prompt
        if data.compacted and can:
            return f"{what}: only {can} since the last compaction."
        if data.compacted:
            return f"{what}: none since the last compaction."
        if can == 0:
            return f"{what}: session {session_id} has no prompt to rewind."
        return f"{what}: session {session_id} has only {can}."
    if data.forked is not None and data.prompts[can].seq <= data.forked[1]:
        # The prompts before the fork point were copied without their checkpoints.
        since = f"only {plural(can)}" if can else "none"
        if data.forked[0] is None:
            return f"{what}: {since} since this session was forked from a session since deleted."
        return (
            f"{what}: {since} since this session was forked from session {data.forked[0]}; "
            "the earlier prompts are rewound there (or fork that session from an earlier "
            "message)."
        )
    if data.retired is not None:
        text = (
            f"{what}: session {session_id}'s checkpoints were retired (seri keeps them for the "
            f"{KEEP_SESSIONS} most recently used sessions of a project); its conversation "
            "is intact."
        )
        if can:
            text += f" Only the last {plural(can)} can be rewound."
        return text
    return (
        f"{what}: only {can} of session {session_id}'s prompts have checkpoints; the earlier "
        "ones were made before seri kept checkpoints for them."
    )


def first_line(text: str) -> str:
    """A prompt as a picker shows it: its first non-blank line, shortened."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= PROMPT_LENGTH else line[: PROMPT_LENGTH - 1] + "…"


@dataclass
class FilePlan:
    """One file a rewind puts back."""

    path: str
    display: str
    target: str | None  # the content key to restore; None: the file is to be absent
    expected: str | None  # what seri last wrote; anything else there is a conflict


def file_plans(checkpoints: list[Checkpoint]) -> list[FilePlan]:
    """What each file the checkpoints' tasks changed goes back to (`checkpoints` newest
    first): the before of the oldest that changed it, checked against the newest's after."""
    plans: dict[str, FilePlan] = {}
    for checkpoint in checkpoints:  # newest first
        for change in checkpoint.files:
            plan = plans.get(change.path)
            if plan is None:
                plans[change.path] = FilePlan(
                    change.path, change.display, change.before, change.after
                )
            else:
                plan.target = change.before
    return sorted(plans.values(), key=lambda plan: plan.display)


@dataclass(frozen=True)
class Current:
    """A file as it is now: the editor's buffer when open, else the disk."""

    sha: str | None  # None: absent
    text: str | None = None  # the buffer's text, when the editor has the file open


class Rewinder:
    """Lists checkpoints and rewinds the open session."""

    def __init__(
        self,
        *,
        store: CheckpointStore,
        sessions: SessionManager,
        tasks: Tasks,
        workspace: Workspace,
        host: Host,
        io: Worker,
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.tasks = tasks
        self.workspace = workspace
        self.host = host
        self.io = io

    # --- listing --------------------------------------------------------------------

    async def checkpoints(self, session_id: str | None) -> Checkpoints:
        """What can be rewound, newest first (`seri.checkpoints`)."""
        if session_id is not None:
            info = await self.io(self.sessions.store.resolve, session_id)
            target: str | None = info.id
        elif self.sessions.conversation is not None:
            target = self.sessions.conversation.session_id
        else:
            latest = await self.io(self.sessions.store.latest, self.sessions.project)
            target = latest.id if latest is not None else None
        if target is None:
            return Checkpoints([], retired=False)
        data = await self.io(self.store.session, target)
        checkpoints = reachable(data)
        plans = file_plans(checkpoints)
        current = {plan.path: await self._current(plan.path) for plan in plans}
        expected = {plan.path: plan.expected for plan in plans}
        entries: list[RewindPoint] = []
        # What a rewind of `steps` puts each file back to: the before of the oldest of
        # those checkpoints that changed it (so far, walking from the newest).
        targets: dict[str, str | None] = {}
        for steps, checkpoint in enumerate(checkpoints, start=1):
            for change in checkpoint.files:
                targets[change.path] = change.before
            conflicts = sorted(
                {
                    change.display
                    for rewound in checkpoints[:steps]
                    for change in rewound.files
                    if current[change.path].sha not in (expected[change.path], targets[change.path])
                }
            )
            entries.append(
                RewindPoint(
                    steps=steps,
                    prompt=first_line(checkpoint.prompt),
                    created_at=checkpoint.created_at,
                    files=[change.display for change in checkpoint.files],
                    conflicts=conflicts,
                )
            )
        return Checkpoints(entries, retired=data.retired is not None)

    # --- rewinding ------------------------------------------------------------------

    async def rewind(self, request: RewindRequest) -> dict[str, Any]:
        """Go back `request.steps` prompts (`seri.rewind`, `/rewind`).

        Once started, a rewind runs to its end even if the request is cancelled, so the
        files and the store never disagree halfway.
        """
        return await asyncio.shield(self._rewind(request))

    async def _rewind(self, request: RewindRequest) -> dict[str, Any]:
        if request.restore not in RESTORE_MODES:
            raise InvalidArgument(
                "restore",
                f"restore must be one of both, conversation, files; got "
                f"{shorten(request.restore)!r}",
            )
        if not 1 <= request.steps <= MAX_REWIND_STEPS:
            raise InvalidArgument(
                "steps",
                f"steps must be a whole number from 1 to {MAX_REWIND_STEPS:,}, got {request.steps}",
            )
        with self.tasks.exclusive():
            conversation = await self._target(request)
            data = await self.io(self.store.session, conversation.session_id)
            steps = steps_to(
                data,
                request.message_id,
                await self._seq(conversation.session_id, request.message_id),
                request.steps,
            )
            if steps != request.steps:
                request = dataclasses.replace(request, steps=steps)
            reason = refusal(data, request.steps, conversation.session_id)
            if reason is not None:
                raise SeriError(reason)
            if request.check:
                return await self._check(conversation.session_id, request)
            chosen = reachable(data)[: request.steps]
            restored: list[str] = []
            conflicts: list[str] = []
            failed: list[dict[str, str]] = []
            written: dict[str, str | None] = {}
            if request.restore in ("both", "files"):
                plans = file_plans(chosen)
                paths = [Path(plan.path) for plan in plans]
                # Links are followed (the disk is read) on a tool thread.
                inside = await self.tasks.threads.run(_inside, self.workspace, paths)
                if request.restore == "both":
                    _refuse_outside(request.steps, plans, inside)
                await self._restore_files(
                    plans, inside, request.force, restored, conflicts, failed, written
                )
            cut = chosen[-1]
            # A file that could not be put back keeps its checkpoint: the conversation
            # stays (the rewind became files-only), so the same rewind can be tried again.
            kept = request.restore == "both" and bool(failed)
            recap_kept = False
            if request.restore == "files" or kept:
                await self.io(self.store.files_restored, [c.id for c in chosen], written)
                conversation.info = await self.io(self.sessions.store.get, conversation.session_id)
            else:
                state, recap_kept = await self.io(
                    self.store.truncate, conversation.session_id, cut.prompt_seq, written
                )
                conversation.forget_from(
                    cut.prompt_seq,
                    info=await self.io(self.sessions.store.get, conversation.session_id),
                    last_billed=state.get("lastInputTokens"),
                    fired_rules=await self.io(
                        self.sessions.store.fired_rules, conversation.session_id
                    ),
                )
            session = self.sessions.session(conversation.info)
        result: dict[str, Any] = {"session": session, "rewound": request.steps}
        if kept:
            result["conversationKept"] = True
        elif request.restore != "files":
            result["prompt"] = cut.prompt
        if recap_kept:
            result["recapKept"] = True
        result["restoredFiles"] = restored
        result["conflicts"] = conflicts
        if failed:
            result["failed"] = failed
        self._tell(request, result)
        self.host.emit(SessionChanged(session, "rewound"))
        # Done: a store that fails to take the record does not undo the answer.
        await conversation.record_event_softly(
            "rewind",
            {
                "steps": request.steps,
                "restore": request.restore,
                "force": request.force,
                "promptSeq": cut.prompt_seq,
                "restoredFiles": restored,
                "conflicts": conflicts,
                "failed": failed,
                "conversationKept": kept,
            },
        )
        return result

    async def _check(self, session_id: str, request: RewindRequest) -> dict[str, Any]:
        """`check: true`: the files the rewind would leave alone unless forced."""
        conflicts: list[str] = []
        if request.restore != "conversation":
            points = (await self.checkpoints(session_id)).checkpoints
            conflicts = next((p.conflicts for p in points if p.steps == request.steps), [])
        return {"rewound": request.steps, "conflicts": conflicts, "checked": True}

    async def _seq(self, session_id: str, message_id: int | None) -> int | None:
        """The place in its session of the message with store id `message_id`."""
        if message_id is None:
            return None
        return await self.io(self.sessions.store.message_seq, session_id, message_id)

    async def _target(self, request: RewindRequest) -> Conversation:
        """The open session; with none open, the project's latest, if no one holds it."""
        conversation = self.sessions.conversation
        if conversation is not None:
            return conversation
        latest = await self.io(self.sessions.store.latest, self.sessions.project)
        if latest is None:
            raise SeriError("There is nothing to rewind: this project has no session yet.")
        locks = self.sessions.locks
        holder = await self.io(locks.acquire, latest.id)
        if holder is not None:
            raise SessionHeld(latest.id, holder.describe())
        try:
            # Refused before it is opened, so a refusal changes nothing at all.
            data = await self.io(self.store.session, latest.id)
            seq = await self._seq(latest.id, request.message_id)
            steps = steps_to(data, request.message_id, seq, request.steps)
            reason = refusal(data, steps, latest.id)
            if reason is not None:
                raise SeriError(reason)
            await self.sessions.resume(latest.id)
        except BaseException:
            if (
                self.sessions.conversation is None
                or self.sessions.conversation.session_id != latest.id
            ):
                locks.release(latest.id)
            raise
        assert self.sessions.conversation is not None
        return self.sessions.conversation

    async def _restore_files(
        self,
        plans: list[FilePlan],
        inside: list[bool],
        force: bool,
        restored: list[str],
        conflicts: list[str],
        failed: list[dict[str, str]],
        written: dict[str, str | None],
    ) -> None:
        contents = await self.io(self.store.blobs, [p.target for p in plans if p.target])
        for plan, within in zip(plans, inside, strict=True):
            path = Path(plan.path)
            if not within:
                failed.append(
                    {"path": plan.display, "reason": "it is outside the workspace folders now"}
                )
                continue
            current = await self._current(plan.path)
            if current.sha == plan.target:
                restored.append(plan.display)
                written[plan.path] = plan.target
                continue
            if current.sha != plan.expected and not force:
                conflicts.append(plan.display)
                continue
            if plan.target is not None and plan.target not in contents:
                failed.append({"path": plan.display, "reason": "its stored content is missing"})
                continue
            content = contents.get(plan.target) if plan.target is not None else None
            reason = await self._put_back(path, plan.display, current, content)
            if reason is None:
                restored.append(plan.display)
                written[plan.path] = plan.target
            else:
                failed.append({"path": plan.display, "reason": reason})

    async def _put_back(
        self, path: Path, display: str, current: Current, content: bytes | None
    ) -> str | None:
        """Give `path` its old content (None: remove it); the reason when that fails."""
        try:
            if content is None:
                return await self._delete(path, display)
            text = _as_text(content)  # None: binary (a command's change), disk only
            if text is not None and self.host.writes_files:
                return await _editor_change(self.host.write_file(path, text))
            if text is not None and current.text is not None and self.host.can_apply_edits:
                end = len(current.text)
                return await _editor_change(self.host.apply_edit(path, current.text, 0, end, text))
            await self.tasks.threads.run(disk.write_file, path, content)
        except (DiskError, OSError) as exc:
            return str(exc) if isinstance(exc, DiskError) else (exc.strerror or str(exc))
        return None

    async def _delete(self, path: Path, display: str) -> str | None:
        """Remove a file the task created: through the editor when it has it open and can
        delete files (it closes the buffer and removes the file), else on disk."""
        is_open = self.host.document_text(path) is not None
        if is_open and self.host.can_delete_files:
            refused = "the editor refused to delete it"
            return await _editor_change(self.host.delete_file(path), refused)
        await self.tasks.threads.run(_remove, path)
        if is_open:
            self.host.show(
                "warning",
                f"Deleted {display} (the rewind undid its creation), but the editor still has "
                "it open: close that buffer without saving, or saving it creates the file again.",
            )
        return None

    async def _current(self, path: str) -> Current:
        text = await self.host.read_file(Path(path))
        if text is not None:
            return Current(sha256_of(encode(text)), text)
        try:
            data = await self.tasks.threads.run(disk.read_current_bytes, Path(path), path)
        except (DiskError, OSError):
            return Current(_UNREADABLE)
        return Current(None if data is None else sha256_of(data))

    def _tell(self, request: RewindRequest, result: dict[str, Any]) -> None:
        what = {"both": "the conversation and files", "files": "files"}.get(
            request.restore, "the conversation"
        )
        self.host.log("info", f"Rewound {plural(request.steps)} ({what}).")
        if result["conflicts"]:
            message = (
                "Left alone, changed since by something else (rewind with force to overwrite): "
                + ", ".join(result["conflicts"])
                + "."
            )
            if request.restore != "files" and not result.get("conversationKept"):
                # Their checkpoints went with the prompts, so no later rewind can reach them.
                message += (
                    " Their earlier content is no longer kept after this rewind: to put them "
                    "back, force has to be used in the same rewind that goes back in the "
                    "conversation."
                )
            self.host.log("warning", message)
        for failure in result.get("failed", []):
            self.host.log("warning", f"Could not restore {failure['path']}: {failure['reason']}.")
        if result.get("conversationKept"):
            names = ", ".join(failure["path"] for failure in result["failed"])
            self.host.show("warning", f"seri: {KEPT_NOTE} (Not put back: {names}.)")
        if result.get("recapKept"):
            self.host.show("info", f"seri: {RECAP_NOTE}")


async def _editor_change(
    request: Awaitable[EditResult], refused: str = "the editor refused the change"
) -> str | None:
    """Why the editor did not make a change (None: it did). An editor that does not answer
    within EDITOR_ANSWER_SECONDS counts as not having made it: a rewind cannot be
    cancelled, so it must not wait for ever (a late answer that did make it is seen as
    restored by the next rewind)."""
    seconds = EDITOR_ANSWER_SECONDS.seconds()
    try:
        edit = await asyncio.wait_for(request, seconds)
    except TimeoutError:
        return f"the editor did not answer within {seconds:g} s"
    return None if edit.applied else f"{refused}: {edit.reason}"


def _refuse_outside(steps: int, plans: list[FilePlan], inside: list[bool]) -> None:
    """A conversation rewind that could not put a file back would lose its only saved
    content with the prompt's checkpoint: refused, nothing changed, when a file is now
    outside the workspace."""
    outside = [plan.display for plan, within in zip(plans, inside, strict=True) if not within]
    if outside:
        raise SeriError(
            f"Cannot rewind {plural(steps)}: {', '.join(outside)} "
            f"{'is' if len(outside) == 1 else 'are'} outside the workspace folders now, so "
            f"{'its' if len(outside) == 1 else 'their'} earlier content could not be put back; "
            "nothing was changed. Open the folder again, or rewind the conversation alone "
            f"(/rewind {steps} conversation)."
        )


def _as_text(content: bytes) -> str | None:
    """Stored content as text, or None when it is not UTF-8 (a command wrote bytes)."""
    try:
        return decode(content)
    except UnicodeDecodeError:
        return None


def _remove(path: Path, *, stop: Stop) -> None:
    """Delete a file seri created (gone already is fine; a folder is refused)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        raise DiskError(f"{path.name} is a folder now; it was left alone")
    path.unlink()


def _inside(workspace: Workspace, paths: list[Path], *, stop: Stop) -> list[bool]:
    """Whether each path, links followed, is inside the workspace (on a tool thread)."""
    return [workspace.contains(path) for path in paths]
