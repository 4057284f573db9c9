"""Tasks: running one user prompt (or a manual compaction) at a time, and subagents.

A task owns a cancel scope that every long wait inside it (model calls, tools, the
user's answers, subagents) runs in, so one cancel stops the whole tree. Write
permissions are granted per session, so a session's "allow for this session" answer
holds for every later task and for its subagents. At most three subagents of a task run
at once; the others wait their turn (and a cancel stops the waiting ones too).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from seri_lsp.agent.cancel import CancelScope, TaskCancelled
from seri_lsp.agent.checkpoints import CheckpointKeeper
from seri_lsp.agent.checks import RunGate, TaskChecks
from seri_lsp.agent.command_gate import CommandGate, WorkspaceAgreements
from seri_lsp.agent.commands import CommandRunner, RunningCommands
from seri_lsp.agent.disk import DiskError, Stop, ToolThreads, read_current
from seri_lsp.agent.loop import (
    AgentLoop,
    Notices,
    TaskOutcome,
    model_summariser,
    record_compaction_failed,
)
from seri_lsp.agent.provider import Provider
from seri_lsp.agent.snapshots import SNAPSHOTS_NAME, Snapshots
from seri_lsp.agent.tools import (
    Denied,
    ExternalTool,
    ExternalTools,
    Toolbox,
    ToolError,
    ToolOutcome,
    WriteGate,
)
from seri_lsp.agent.workspace import FileChanges, Workspace
from seri_lsp.command_rules import CommandRules
from seri_lsp.context.compaction import (
    COMPACTION_ERRORS,
    NOT_ENOUGH,
    CompactionResult,
    Compactor,
    failure_reason,
    not_enough,
)
from seri_lsp.context.conversation import Conversation
from seri_lsp.context.prompt_files import freeze, leads_outside
from seri_lsp.errors import Busy
from seri_lsp.events import Activity
from seri_lsp.files import atomic_write_text
from seri_lsp.host import Host, Question, ask_user
from seri_lsp.settings import (
    SUBAGENT_MAX_TURNS,
    CheckSetting,
    Permission,
    RunShell,
    WritePermission,
)
from seri_lsp.store.locks import SessionLocks
from seri_lsp.store.sessions import SessionStore
from seri_lsp.store.worker import Worker
from seri_lsp.trajectory.recording import Recordings

# Subagents (`task` calls) of one task that run at the same time; more wait their turn.
MAX_PARALLEL_SUBAGENTS = 3


class Tasks:
    """Runs the tasks of one engine, one at a time."""

    def __init__(
        self,
        *,
        provider: Provider,
        compactor: Compactor,
        host: Host,
        workspace: Workspace,
        store: SessionStore,
        io: Worker,
        profile_root: Path,
        write_permission: WritePermission,
        recordings: Recordings,
        checkpoints: CheckpointKeeper | None = None,
        checks: tuple[CheckSetting, ...] = (),
        run_permission: Permission = "ask",
        run_shell: RunShell = "cmd",
        command_rules: CommandRules | None = None,
        locks: SessionLocks,
        external: ExternalTools | None = None,
    ) -> None:
        self.external = external
        self.provider = provider
        self.compactor = compactor
        self.host = host
        self.workspace = workspace
        self.store = store
        self.io = io
        self.profile_root = profile_root
        self.write_permission = write_permission
        self.checkpoints = checkpoints
        self.recordings = recordings
        self.checks = checks
        self.run_permission = run_permission
        self.run_shell = run_shell
        self.command_rules = command_rules or CommandRules()
        self.snapshots = Snapshots(profile_root / SNAPSHOTS_NAME)
        self.locks = locks
        self._running: CancelScope | None = None
        self._exclusive = False  # the running work is a rewind, which cannot be cancelled
        # What the user was shown during the running task, its subagents included.
        self._notices = Notices()
        self._gates: dict[str, WriteGate] = {}
        self._run_gates: dict[str, RunGate] = {}
        self._command_gates: dict[str | None, CommandGate] = {}
        self.commands = RunningCommands()
        self.threads = ToolThreads()

    @property
    def running(self) -> bool:
        """Whether a task (or a manual compaction) is running now."""
        return self._running is not None

    def ensure_idle(self) -> None:
        """Raise Busy if a task is running."""
        if self._running is not None:
            raise Busy("A task is running; wait for it to end or cancel it (seri.cancel) first.")

    def cancel(self, *, stopping: bool = False) -> bool:
        """Stop the running task (or manual compaction); False if nothing was running.
        `stopping`: seri stops, so the task ends `interrupted`.

        A rewind is not a task: once started it runs to its end, so it is not cancelled.
        """
        if self._running is None or self._exclusive:
            return False
        self._running.cancel(stopping=stopping)
        return True

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Work that no task may run beside (a rewind): Busy if one runs, and while the
        block runs, prompts and compactions are refused as if a task ran."""
        self.ensure_idle()
        scope = self._begin()
        self._exclusive = True
        try:
            yield
        finally:
            self._exclusive = False
            self._end(scope)

    async def run_prompt(
        self, conversation: Conversation, text: str, max_turns: Callable[[], int]
    ) -> TaskOutcome:
        """Run one user prompt in `conversation` to its end."""
        self.ensure_idle()
        scope = self._begin()
        self._notices = Notices()
        loop: AgentLoop | None = None
        try:
            # Taken before the task starts; its tools, subagents' included, fill it in.
            checkpoint = (
                await self.checkpoints.take(conversation, text)
                if self.checkpoints is not None
                else None
            )
            if self.external is not None:
                await scope.run(self.external.prepare(conversation.session_id))
            gate = self._gate(conversation)
            slots = asyncio.Semaphore(MAX_PARALLEL_SUBAGENTS)  # shared by the task's tree
            toolbox = self._toolbox(conversation, gate, scope, slots, checkpoint)
            checks = TaskChecks(
                self.checks, self._run_gate(conversation), self.host, scope, self.workspace.root
            )
            loop = self._loop(conversation, toolbox, scope, checks)
            try:
                return await loop.run(text, max_turns)
            finally:
                if checkpoint is not None:
                    await checkpoint.finish(conversation)
        finally:
            self._end(scope)
            # Told only now: an editor that acts on it (a resume, the next prompt) finds
            # no task running any more.
            if loop is not None and loop.ended is not None:
                self.host.emit(loop.ended)

    async def compact(
        self, conversation: Conversation | None, focus: str | None
    ) -> CompactionResult:
        """Compact `conversation` now, without waiting for the 50% trigger.

        The one-task slot is taken before the first wait (reading the history of a
        resumed session), so a prompt sent meanwhile is refused as busy and a cancel
        reaches this compaction. A store that fails while the recap is written (or while
        the summariser's usage is recorded) makes it answer `compacted: false`.
        """
        self.ensure_idle()
        scope = self._begin()
        try:
            if conversation is not None:
                await conversation.load()
            if conversation is None:
                self.host.show("info", NOT_ENOUGH)
                return CompactionResult(False, 0, NOT_ENOUGH)
            window = await self.provider.context_window()
            plan = self.compactor.plan(conversation, window)
            if plan is None:
                keep = self.compactor.settings.keep_tokens
                reason = not_enough(conversation.messages, keep, window)
                self.host.show("info", reason)
                return CompactionResult(False, 0, reason)
            # The tools the conversation's turns offer, so the summariser's request
            # starts with the turns' own prefix.
            tools = self._toolbox(
                conversation, self._gate(conversation), scope, asyncio.Semaphore(1)
            ).schemas()
            summarise = model_summariser(self.provider, conversation, scope, self.host, tools)
            try:
                scope.check()  # a cancel that came while the history was read
                return await self.compactor.compact(
                    conversation, plan, summarise, trigger="manual", window=window, focus=focus
                )
            except COMPACTION_ERRORS as exc:
                reason = failure_reason(exc)
                message = f"Compaction failed: {reason}."
                await record_compaction_failed(conversation, "manual", reason, len(plan.evicted))
                self.host.show("error", message)
                return CompactionResult(False, 0, message)
            except TaskCancelled:
                return CompactionResult(False, 0, "Compaction cancelled; nothing changed.")
        finally:
            self._end(scope)

    async def close(self) -> None:
        """Stop any running task and the tools' threads."""
        if self._running is not None:
            self._running.cancel(stopping=True)
        self.threads.shutdown()

    def _begin(self) -> CancelScope:
        scope = CancelScope()
        self._running = scope
        return scope

    def _end(self, scope: CancelScope) -> None:
        if self._running is scope:
            self._running = None

    def _loop(
        self,
        conversation: Conversation,
        toolbox: Toolbox,
        scope: CancelScope,
        checks: TaskChecks | None = None,
    ) -> AgentLoop:
        return AgentLoop(
            conversation,
            toolbox,
            provider=self.provider,
            compactor=self.compactor,
            host=self.host,
            scope=scope,
            notices=self._notices,
            checks=checks,
        )

    def _run_gate(self, conversation: Conversation) -> RunGate:
        """`permissions.run` for the session: its answer holds for the session."""
        gate = self._run_gates.get(conversation.session_id)
        if gate is None:
            gate = RunGate(self.run_permission, self.host, conversation.session_id)
            self._run_gates[conversation.session_id] = gate
        return gate

    def _command_gate(self, session_id: str | None) -> CommandGate:
        """The `run` tool's gate of a session's task tree (a subagent's commands ask in
        its parent's session, as its writes do)."""
        gate = self._command_gates.get(session_id)
        if gate is None:
            root = self.workspace.root
            gate = CommandGate(
                self.run_permission,
                self.host,
                session_id,
                self.command_rules,
                WorkspaceAgreements(self.profile_root),
                project=str(root) if root is not None else "",
            )
            self._command_gates[session_id] = gate
        return gate

    def _gate(self, conversation: Conversation) -> WriteGate:
        gate = self._gates.get(conversation.session_id)
        if gate is None:
            gate = WriteGate(self.write_permission, self.host, conversation.session_id)
            self._gates[conversation.session_id] = gate
        return gate

    def _external_for(self, conversation: Conversation) -> Sequence[ExternalTool]:
        if self.external is None:
            return ()
        own = self.external.for_session(conversation.session_id)
        parent = conversation.info.parent_id
        if not own and parent is not None:
            return self.external.for_session(parent)
        return own

    def _toolbox(
        self,
        conversation: Conversation,
        gate: WriteGate,
        scope: CancelScope,
        slots: asyncio.Semaphore | None = None,
        changes: FileChanges | None = None,
    ) -> Toolbox:
        async def run_subagent(prompt: str) -> ToolOutcome:
            assert slots is not None
            try:
                await scope.run(slots.acquire())
            except TaskCancelled:
                return ToolOutcome(
                    "Cancelled: the user stopped the task before this subagent started.",
                    is_error=True,
                )
            try:
                return await self._run_subagent(conversation, gate, scope, prompt, changes)
            finally:
                slots.release()

        async def propose_memory(text: str) -> ToolOutcome:
            return await self._propose_memory(conversation, text, toolbox)

        toolbox = Toolbox(
            self.workspace,
            self.host,
            gate,
            self.threads,
            subagent=run_subagent if slots is not None else None,
            remember=propose_memory,
            changes=changes,
            run_command=CommandRunner(
                self.workspace,
                self._command_gate(gate.session_id),
                self.threads,
                session_id=conversation.session_id,
                emit=self.host.emit,
                running=self.commands,
                shell=self.run_shell,
                snapshots=self.snapshots,
                window=self.provider.context_window,
            ).run,
            # (a subagent is offered its parent's list: its own session has none yet)
            external=self._external_for(conversation),
        )
        return toolbox

    async def _run_subagent(
        self,
        parent: Conversation,
        gate: WriteGate,
        scope: CancelScope,
        prompt: str,
        changes: FileChanges | None,
    ) -> ToolOutcome:
        info = await self.io(self.store.create, parent.info.project, parent_id=parent.session_id)
        if parent.info.model:
            # The child calls the parent's model (`seri.session.model`): kept with it, its
            # recording's header names it.
            info = await self.io(self.store.set_model, info.id, parent.info.model)
        # Held while it runs, as any open session: no other window may open it meanwhile.
        async with self._held(info.id):
            frozen = await self.io(freeze, self.workspace.root, self.profile_root, "subagent")
            child = Conversation(
                info, frozen, set(), store=self.store, io=self.io, emit=self.host.emit, messages=[]
            )
            await self.recordings.start(
                child, reason="subagent", max_turns=SUBAGENT_MAX_TURNS, parent_id=parent.session_id
            )
            loop: AgentLoop | None = None
            try:
                await child.record_event(
                    "opened", {"reason": "subagent", "parentId": parent.session_id}
                )
                # The child shares the parent's scope: one cancel stops the whole tree, and the
                # parent task's checkpoint: a rewind of the prompt undoes the child's changes too.
                loop = self._loop(child, self._toolbox(child, gate, scope, changes=changes), scope)
                outcome = await loop.run(prompt, lambda: SUBAGENT_MAX_TURNS)
            finally:
                if loop is not None and loop.ended is not None:
                    self.host.emit(loop.ended)
                self.recordings.finish(child)
        read, modified = await child.paths()
        if outcome.status == "done":
            content = outcome.final_text or "(the subagent finished without a final answer)"
        elif outcome.status == "max_turns":
            last = next((m.content for m in reversed(child.messages) if m.role == "assistant"), "")
            content = (
                f"The subagent used its whole budget of {SUBAGENT_MAX_TURNS} turns without a "
                f"final answer (session {child.session_id}). Its last message: {last or '(none)'}"
            )
        else:
            content = f"The subagent {outcome.status}: {outcome.error} (session {child.session_id})"
        return ToolOutcome(
            content,
            is_error=outcome.status != "done",
            read=read,
            modified=modified,
            subagent_editor_paths=tuple(loop.editor_paths),
        )

    @asynccontextmanager
    async def _held(self, session_id: str) -> AsyncIterator[None]:
        await self.io(self.locks.acquire, session_id)
        try:
            yield
        finally:
            self.locks.release(session_id)

    async def _propose_memory(
        self, conversation: Conversation, text: str, toolbox: Toolbox
    ) -> ToolOutcome:
        line = " ".join(text.split())
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            return ToolOutcome(
                "Not saved: the text holds a lone surrogate (half of a character that needs "
                "two), which cannot be written as UTF-8; send it again with whole characters.",
                is_error=True,
            )
        project_memory = conversation.frozen.memory_path
        target = project_memory or self.profile_root / "memory.md"
        # Name the file that would really be written: a link is followed (on a tool thread:
        # it reads the disk), and one that leads out of the workspace is refused.
        guard = self.workspace.root if project_memory is not None else None
        real, outside = await self.threads.run(_memory_target, target, guard)
        if outside is not None:
            return await self._memory_refused(conversation, line, _outside_reason(target, outside))
        question = Question(
            kind="memory",
            message=f"seri wants to remember for this project: “{line}” (saved to {real})",
            choices=("Remember", "Don't remember"),
            session_id=conversation.session_id,
            details={"text": line, "path": str(real)},
        )
        answer = await ask_user(
            self.host, question, Activity(conversation.session_id, "tool", "remember")
        )
        approved = answer.choice == "Remember"
        await conversation.record_event("memory", {"text": line, "approved": approved})
        if not approved:
            return ToolOutcome("The user did not approve this memory; nothing was saved.")
        try:
            if project_memory is not None:
                # A workspace file: written as the write tools write (through the editor
                # when it has it open, into the prompt's checkpoint, so /rewind takes the
                # line out again).
                await toolbox.append_line(target, f"- {line}")
            else:
                # The profile's memory lies outside every workspace (and a rewind's reach).
                await self.threads.run(_append_memory, target, line)
        except Denied as exc:  # it leads outside now (a link made since the question)
            return await self._memory_refused(conversation, line, str(exc))
        except (ToolError, DiskError, OSError) as exc:
            return ToolOutcome(f"Not saved: {exc}", is_error=True)
        return ToolOutcome(
            f"Saved to {real}. It reaches the prompt from the next session open, not now."
        )

    async def _memory_refused(
        self, conversation: Conversation, line: str, reason: str
    ) -> ToolOutcome:
        self.host.log("warning", f"Refused to remember “{line}”: {reason}.")
        await conversation.record_event(
            "memory", {"text": line, "approved": False, "refused": reason}
        )
        return ToolOutcome(f"Not saved: {reason}. Nothing was written.", is_error=True)


def _outside_reason(target: Path, real: Path) -> str:
    return (
        f"{target} leads outside the workspace through a symbolic link (to {real}); "
        "memory is written only inside the workspace"
    )


def _memory_target(
    path: Path, workspace_root: Path | None, *, stop: Stop
) -> tuple[Path, Path | None]:
    """Where a memory file really is, and (with `workspace_root`) where it leads if that
    is outside the workspace. On a tool thread: links are followed."""
    outside = leads_outside(path, workspace_root) if workspace_root is not None else None
    return Path(os.path.realpath(path)), outside


def _append_memory(path: Path, line: str, *, stop: Stop) -> None:
    """Add a line to the profile's memory file, atomically."""
    real = Path(os.path.realpath(path))
    real.parent.mkdir(parents=True, exist_ok=True)
    existing = read_current(real, str(real), stop=stop) or ""
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    atomic_write_text(real, f"{existing}{prefix}- {line}\n")
