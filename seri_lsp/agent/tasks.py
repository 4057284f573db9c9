"""Tasks: running one user prompt (or a manual compaction) at a time, and subagents.

A task owns a cancel scope that every long wait inside it (model calls, tools, the
user's answers, subagents) runs in, so one cancel stops the whole tree. Write
permissions are granted per session, so a session's "allow for this session" answer
holds for every later task and for its subagents.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from seri_lsp.agent.cancel import CancelScope, TaskCancelled
from seri_lsp.agent.loop import AgentLoop, Notices, TaskOutcome, model_summariser
from seri_lsp.agent.provider import Provider
from seri_lsp.agent.tools import Toolbox, ToolOutcome, WriteGate
from seri_lsp.agent.workspace import Workspace
from seri_lsp.context.compaction import NOT_ENOUGH, CompactionFailed, CompactionResult, Compactor
from seri_lsp.context.conversation import Conversation
from seri_lsp.context.prompt_files import freeze
from seri_lsp.errors import Busy
from seri_lsp.host import Host
from seri_lsp.settings import SUBAGENT_MAX_TURNS, WritePermission
from seri_lsp.store.sessions import SessionStore
from seri_lsp.store.worker import Worker


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
    ) -> None:
        self.provider = provider
        self.compactor = compactor
        self.host = host
        self.workspace = workspace
        self.store = store
        self.io = io
        self.profile_root = profile_root
        self.write_permission = write_permission
        self._running: CancelScope | None = None
        # What the user was shown during the running task, its subagents included.
        self._notices = Notices()
        self._gates: dict[str, WriteGate] = {}

    @property
    def running(self) -> bool:
        """Whether a task (or a manual compaction) is running now."""
        return self._running is not None

    def ensure_idle(self) -> None:
        """Raise Busy if a task is running."""
        if self._running is not None:
            raise Busy("A task is running; wait for it to end or cancel it (seri.cancel) first.")

    def cancel(self) -> bool:
        """Stop the running task (or manual compaction); False if nothing was running."""
        if self._running is None:
            return False
        self._running.cancel()
        return True

    async def run_prompt(
        self, conversation: Conversation, text: str, max_turns: Callable[[], int]
    ) -> TaskOutcome:
        """Run one user prompt in `conversation` to its end."""
        self.ensure_idle()
        scope = self._begin()
        self._notices = Notices()
        try:
            gate = self._gate(conversation)
            loop = self._loop(conversation, self._toolbox(conversation, gate, scope), scope)
            return await loop.run(text, max_turns)
        finally:
            self._end(scope)

    async def compact(
        self, conversation: Conversation | None, focus: str | None
    ) -> CompactionResult:
        """Compact `conversation` now, without waiting for the 50% trigger."""
        self.ensure_idle()
        plan = self.compactor.plan(conversation) if conversation is not None else None
        if conversation is None or plan is None:
            self.host.show("info", NOT_ENOUGH)
            return CompactionResult(False, 0, NOT_ENOUGH)
        scope = self._begin()
        summarise = model_summariser(self.provider, conversation, scope, self.host)
        try:
            window = await self.provider.context_window()
            return await self.compactor.compact(
                conversation, plan, summarise, trigger="manual", window=window, focus=focus
            )
        except CompactionFailed as exc:
            message = f"Compaction failed: {exc}."
            await conversation.record_event(
                "compaction_failed", {"trigger": "manual", "error": str(exc)}
            )
            self.host.show("error", message)
            return CompactionResult(False, 0, message)
        except TaskCancelled:
            return CompactionResult(False, 0, "Compaction cancelled; nothing changed.")
        finally:
            self._end(scope)

    async def close(self) -> None:
        """Stop any running task."""
        if self._running is not None:
            self._running.cancel()

    def _begin(self) -> CancelScope:
        scope = CancelScope()
        self._running = scope
        return scope

    def _end(self, scope: CancelScope) -> None:
        if self._running is scope:
            self._running = None

    def _loop(self, conversation: Conversation, toolbox: Toolbox, scope: CancelScope) -> AgentLoop:
        return AgentLoop(
            conversation,
            toolbox,
            provider=self.provider,
            compactor=self.compactor,
            host=self.host,
            scope=scope,
            notices=self._notices,
        )

    def _gate(self, conversation: Conversation) -> WriteGate:
        gate = self._gates.get(conversation.id)
        if gate is None:
            gate = WriteGate(self.write_permission, self.host)
            self._gates[conversation.id] = gate
        return gate

    def _toolbox(
        self,
        conversation: Conversation,
        gate: WriteGate,
        scope: CancelScope,
        *,
        subagents: bool = True,
    ) -> Toolbox:
        async def run_subagent(prompt: str) -> ToolOutcome:
            return await self._run_subagent(conversation, gate, scope, prompt)

        async def propose_memory(text: str) -> ToolOutcome:
            return await self._propose_memory(conversation, text)

        return Toolbox(
            self.workspace,
            self.host,
            gate,
            subagent=run_subagent if subagents else None,
            remember=propose_memory,
        )

    async def _run_subagent(
        self, parent: Conversation, gate: WriteGate, scope: CancelScope, prompt: str
    ) -> ToolOutcome:
        info = await self.io(self.store.create, parent.info.project, parent_id=parent.id)
        frozen = await self.io(freeze, self.workspace.root, self.profile_root, "subagent")
        child = Conversation(
            info, [], frozen, set(), store=self.store, io=self.io, emit=self.host.emit
        )
        await child.record_event("opened", {"reason": "subagent", "parentId": parent.id})
        # The child shares the parent's scope: one cancel stops the whole tree.
        loop = self._loop(child, self._toolbox(child, gate, scope, subagents=False), scope)
        outcome = await loop.run(prompt, lambda: SUBAGENT_MAX_TURNS)
        read, modified = await child.paths()
        if outcome.status == "done":
            content = outcome.final_text or "(the subagent finished without a final answer)"
        elif outcome.status == "max_turns":
            last = next((m.content for m in reversed(child.messages) if m.role == "assistant"), "")
            content = (
                f"The subagent used its whole budget of {SUBAGENT_MAX_TURNS} turns without a "
                f"final answer (session {child.id}). Its last message: {last or '(none)'}"
            )
        else:
            content = f"The subagent {outcome.status}: {outcome.error} (session {child.id})"
        return ToolOutcome(content, is_error=outcome.status != "done", read=read, modified=modified)

    async def _propose_memory(self, conversation: Conversation, text: str) -> ToolOutcome:
        target = conversation.frozen.memory_path or self.profile_root / "memory.md"
        line = " ".join(text.split())
        answer = await self.host.ask(
            f"seri wants to remember for this project: “{line}” (saved to {target})",
            ["Remember", "Don't remember"],
        )
        approved = answer == "Remember"
        await conversation.record_event("memory", {"text": line, "approved": approved})
        if not approved:
            return ToolOutcome("The user did not approve this memory; nothing was saved.")
        await self.io(_append_memory, target, line)
        return ToolOutcome(
            f"Saved to {target}. It reaches the prompt from the next session open, not now."
        )


def _append_memory(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{prefix}- {line}\n")
