"""The agent loop: one user prompt (a task) and the model calls (turns) it takes.

A task ends when the model answers without tool calls (`done`), the turn budget runs
out (`max_turns`), the user cancels (`cancelled`) or the provider fails (`failed`).
Whatever way it ends, every tool call the model made gets exactly one stored result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seri_lsp.agent.cancel import CancelScope, TaskCancelled
from seri_lsp.agent.checks import TaskChecks
from seri_lsp.agent.provider import (
    ContextTooLong,
    Provider,
    ProviderError,
    Reply,
    RetryCallback,
    RetryNotice,
    Usage,
)
from seri_lsp.agent.tools import WRITE_TOOLS, Toolbox, ToolOutcome
from seri_lsp.context.compaction import NOT_ENOUGH, CompactionFailed, Compactor, Summariser
from seri_lsp.context.conversation import Conversation
from seri_lsp.context.pairing import repair_tool_pairs
from seri_lsp.errors import StoreBusy
from seri_lsp.events import Delta, FileChanged, ThinkingDelta, ToolStarted, TurnEnded
from seri_lsp.host import Host
from seri_lsp.store.messages import Message, ToolCall

logger = logging.getLogger(__name__)


class Notices:
    """What the user was already shown during one task (its subagents included).

    Some troubles are worth telling the user about once, not at every turn: the first
    time `first(key)` answers True, after that False.
    """

    def __init__(self) -> None:
        self._shown: set[str] = set()

    def first(self, key: str) -> bool:
        if key in self._shown:
            return False
        self._shown.add(key)
        return True


def retry_recorder(conversation: Conversation, host: Host) -> RetryCallback:
    """A provider retry callback that logs the retry and records it with the session."""

    async def record(notice: RetryNotice) -> None:
        host.log(
            "warning",
            f"Provider error ({notice.error}); retry {notice.attempt} in {notice.delay:.1f}s.",
        )
        await conversation.record_event("retry", notice.to_json())

    return record


async def record_call(conversation: Conversation, call: ToolCall) -> None:
    """Record a tool call as the model made it, before it runs."""
    arguments = call.parsed_arguments()
    await conversation.record_event(
        "tool_call",
        {
            "id": call.id,
            "name": call.name,
            "arguments": arguments if arguments is not None else call.arguments,
        },
    )


async def record_compaction_failed(
    conversation: Conversation, trigger: str, error: str, attempted: int
) -> None:
    """Record a compaction that did not happen (`attempted`: the messages it would evict)."""
    await conversation.record_event(
        "compaction_failed",
        {
            "trigger": trigger,
            "outcome": "failed",
            "evicted": 0,
            "attempted": attempted,
            "error": error,
        },
    )


async def record_usage(conversation: Conversation, usage: Usage | None, purpose: str) -> None:
    """Record the tokens a reply was billed for, if the provider said."""
    if usage is not None:
        await conversation.record_usage(purpose, usage.input_tokens, usage.output_tokens)


def model_summariser(
    provider: Provider, conversation: Conversation, scope: CancelScope, host: Host
) -> Summariser:
    """The compaction summariser: the same model as the turn, no tools, cancellable."""

    async def summarise(request: list[dict[str, Any]]) -> str:
        try:
            reply = await scope.run(
                provider.complete(request, None, on_retry=retry_recorder(conversation, host))
            )
        except ProviderError as exc:
            raise CompactionFailed(f"the summariser call failed: {exc}") from exc
        await record_usage(conversation, reply.usage, "summary")
        return reply.content

    return summarise


class TaskFailed(Exception):
    """The task cannot go on; the message says why."""


@dataclass(frozen=True)
class TaskOutcome:
    """How a task ended."""

    status: str
    turns: int
    error: str | None = None
    final_text: str = ""

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"status": self.status, "turns": self.turns}
        if self.error:
            wire["error"] = self.error
        return wire


class AgentLoop:
    """Runs tasks in one conversation."""

    def __init__(
        self,
        conversation: Conversation,
        toolbox: Toolbox,
        *,
        provider: Provider,
        compactor: Compactor,
        host: Host,
        scope: CancelScope,
        notices: Notices | None = None,
        checks: TaskChecks | None = None,
    ) -> None:
        self.conversation = conversation
        self.toolbox = toolbox
        self.provider = provider
        self.compactor = compactor
        self.host = host
        self.scope = scope
        self.summarise = model_summariser(provider, conversation, scope, host)
        self.notices = notices if notices is not None else Notices()
        # The checks run when the model finishes a task that changed files (top level only).
        self.checks = checks
        self._reply: Reply | None = None
        self._streamed = False  # whether the model call in flight streamed any text

    async def run(self, prompt: str, max_turns: Callable[[], int]) -> TaskOutcome:
        """Run one task to its end; never raises for provider or tool trouble.

        `max_turns` is asked before every model call, so `/max-turns` takes effect at once.
        """
        conversation = self.conversation
        turns = 0
        status, error, final_text = "done", None, ""
        await conversation.append(Message(role="user", content=prompt))
        await conversation.record_event("task_started", {"prompt": prompt})
        async with self.host.progress("seri: working") as progress:
            try:
                while True:
                    if turns >= max_turns():
                        status = "max_turns"
                        error = (
                            f"Stopped after {turns} turns (the turn budget). Send another "
                            "prompt to go on, or raise the budget with /max-turns N."
                        )
                        break
                    await self._auto_compact()
                    progress.report(f"turn {turns + 1}")
                    reply = await self._call_model()
                    turns += 1
                    assistant = await self._store_reply(reply)
                    if not assistant.tool_calls:
                        final_text = assistant.content
                        if self.checks is not None:
                            verdict = await self.checks.after_final_reply(conversation, progress)
                            if verdict.again:
                                continue  # the failures went back to the model
                            if verdict.error:
                                status, error = "failed", verdict.error
                        break
                    await self._run_tools(assistant)
            except TaskCancelled:
                status, error = "cancelled", "Cancelled by the user."
                await self._store_partial_reply()
            except (TaskFailed, ProviderError, StoreBusy) as exc:
                status, error = "failed", str(exc)
            except Exception as exc:  # a bug must end the task, not the server
                logger.exception("The task failed unexpectedly")
                status, error = "failed", f"Internal error: {type(exc).__name__}: {exc}"
            await self._answer_open_calls(status)
        outcome = TaskOutcome(status=status, turns=turns, error=error, final_text=final_text)
        await conversation.record_event("task_ended", outcome.to_wire())
        self.host.emit(TurnEnded(conversation.id, status, turns))
        return outcome

    # --- model calls -------------------------------------------------------------------

    async def _request_messages(self) -> list[dict[str, Any]]:
        conversation = self.conversation
        messages, repairs = repair_tool_pairs(conversation.messages)
        for repair in repairs:
            self.host.log("warning", f"Repaired the request history: {repair}.")
        if repairs:
            await conversation.record_event("repair", {"repairs": repairs})
        return [conversation.system_message()] + [m.to_provider() for m in messages]

    async def _send(self) -> Reply:
        conversation = self.conversation
        messages = await self._request_messages()
        self._reply = Reply()
        self._streamed = False
        record_retry = retry_recorder(conversation, self.host)

        def on_delta(text: str) -> None:
            self._streamed = True
            self.host.emit(Delta(conversation.id, text))

        def on_thinking(text: str) -> None:
            self.host.emit(ThinkingDelta(conversation.id, text))

        async def on_retry(notice: RetryNotice) -> None:
            self._drop_streamed()
            await record_retry(notice)

        return await self.scope.run(
            self.provider.complete(
                messages,
                self.toolbox.schemas(),
                reply=self._reply,
                on_delta=on_delta,
                on_retry=on_retry,
                on_thinking=on_thinking,
            )
        )

    def _drop_streamed(self) -> None:
        """Tell the faces to drop the text a failed attempt streamed; it is sent again."""
        if self._streamed:
            self._streamed = False
            self.host.emit(Delta(self.conversation.id, "", reset=True))

    async def _call_model(self) -> Reply:
        try:
            return await self._send()
        except ContextTooLong as first:
            self._drop_streamed()
            await self._overflow_compact(first)
            try:
                return await self._send()
            except ContextTooLong as second:
                raise TaskFailed(
                    f"The request was still too long for the model after compacting: {second}"
                ) from second

    async def _overflow_compact(self, rejection: ContextTooLong) -> None:
        conversation = self.conversation
        window = await self.provider.context_window()
        if conversation.appended_since_compaction == 0:
            # Compacting again now would summarise the same history again: fail instead.
            await record_compaction_failed(
                conversation, "overflow", "compacted just before; nothing added since", 0
            )
            raise TaskFailed(
                f"{rejection} The history was compacted just before this call and nothing "
                "has been added since, so compacting again cannot make room. Lower "
                f"provider.keepTokens (now {self.compactor.settings.keep_tokens}), set "
                f"provider.contextWindow to the model's real window (now {window}), or "
                "start a new session (/clear)."
            )
        plan = self.compactor.plan(conversation)
        if plan is None:
            await record_compaction_failed(conversation, "overflow", NOT_ENOUGH, 0)
            raise TaskFailed(f"{rejection} Compaction cannot make room: {NOT_ENOUGH.lower()}.")
        try:
            await self.compactor.compact(
                conversation, plan, self.summarise, trigger="overflow", window=window
            )
        except CompactionFailed as exc:
            await record_compaction_failed(conversation, "overflow", str(exc), len(plan.evicted))
            raise TaskFailed(f"{rejection} Compacting to make room failed: {exc}.") from exc

    async def _auto_compact(self) -> None:
        """Compact before the call when the estimate reaches half the window (fail-soft).

        A compaction needs messages added since the last one (so it can never repeat
        itself on an unchanged history) and must shrink the history (the Compactor
        refuses a recap that does not), so no cap on the number per task is needed.
        """
        conversation = self.conversation
        if conversation.appended_since_compaction == 0:
            return
        window = await self.provider.context_window()
        await conversation.note_context_window(window)
        estimate = conversation.estimate_tokens()
        if estimate * 2 < window:
            return
        plan = self.compactor.plan(conversation)
        if plan is None:
            self.host.log(
                "info",
                f"The history is at {estimate} of {window} tokens, but too little of it "
                "can be compacted; going on uncompacted.",
            )
            return
        try:
            await self.compactor.compact(
                conversation, plan, self.summarise, trigger="auto", window=window
            )
        except CompactionFailed as exc:
            message = f"Automatic compaction failed: {exc}. The turn goes on uncompacted."
            if self.notices.first("compaction_failed"):
                # Shown once per task; logged too, at a level a terminal does not echo.
                self.host.show("warning", message)
                self.host.log("info", message)
            else:
                self.host.log("warning", message)
            await record_compaction_failed(conversation, "auto", str(exc), len(plan.evicted))

    async def _store_reply(self, reply: Reply) -> Message:
        conversation = self.conversation
        await record_usage(conversation, reply.usage, "turn")
        self._reply = None
        return await conversation.append(
            Message(
                role="assistant",
                content=reply.content,
                thinking=reply.thinking or None,
                tool_calls=tuple(reply.tool_calls),
            )
        )

    async def _store_partial_reply(self) -> None:
        """After a cancel mid-stream, keep what the model had said (its calls were incomplete)."""
        reply, self._reply = self._reply, None
        if reply is not None and (reply.content or reply.thinking):
            await self.conversation.append(
                Message(role="assistant", content=reply.content, thinking=reply.thinking or None)
            )

    # --- tools -------------------------------------------------------------------------

    async def _run_tools(self, assistant: Message) -> None:
        conversation = self.conversation
        calls = list(assistant.tool_calls)
        rules: list[Message] = []
        index = 0
        while index < len(calls):
            self.scope.check()
            if calls[index].name == "task":
                # Subagents share this task's cancel scope and run side by side.
                end = index
                while end < len(calls) and calls[end].name == "task":
                    end += 1
                batch = calls[index:end]
                for call in batch:
                    self.host.emit(ToolStarted(conversation.id, call))
                    await record_call(conversation, call)
                outcomes = await asyncio.gather(*(self.toolbox.run(call) for call in batch))
                for call, outcome in zip(batch, outcomes, strict=True):
                    rules += await self._store_result(call, outcome)
                index = end
            else:
                self.host.emit(ToolStarted(conversation.id, calls[index]))
                await record_call(conversation, calls[index])
                outcome = await self.scope.run(self.toolbox.run(calls[index]))
                rules += await self._store_result(calls[index], outcome)
                index += 1
        for rule in rules:
            await conversation.append(rule)
        self.scope.check()

    async def _store_result(self, call: ToolCall, outcome: ToolOutcome) -> list[Message]:
        conversation = self.conversation
        if outcome.change is not None:
            self.host.emit(FileChanged(conversation.id, call.id, outcome.change))
        await conversation.append(
            Message(
                role="tool",
                content=outcome.content,
                tool_call_id=call.id,
                is_error=outcome.is_error,
            )
        )
        await conversation.record_event(
            "tool_result",
            {
                "id": call.id,
                "name": call.name,
                "content": outcome.content,
                "isError": outcome.is_error,
            },
        )
        if outcome.read or outcome.modified:
            await conversation.add_paths(outcome.read, outcome.modified)
        if outcome.modified and not outcome.is_error and self.checks is not None:
            self.checks.note_modified()
        path = (call.parsed_arguments() or {}).get("path")
        if outcome.denial is not None:
            await conversation.record_event(
                "denial", {"tool": call.name, "path": path, "reason": outcome.denial}
            )
            self.host.log("info", f"Denied {call.name} of {path!r}: {outcome.denial}.")
        if outcome.edit_via is not None:
            await conversation.record_event(
                "edit",
                {
                    "tool": call.name,
                    "path": outcome.modified[0],
                    "outcome": "applied",
                    "via": outcome.edit_via,
                    "created": outcome.created,
                },
            )
        elif call.name in WRITE_TOOLS and outcome.is_error and outcome.denial is None:
            await conversation.record_event(
                "edit",
                {
                    "tool": call.name,
                    "path": path if isinstance(path, str) else None,
                    "outcome": "failed",
                    "via": None,
                    "created": False,
                    "reason": outcome.content,
                },
            )
        return await self._rules_for(outcome.read + outcome.modified)

    async def _rules_for(self, paths: tuple[str, ...]) -> list[Message]:
        """Glob rules that the touched paths fire for the first time in this session."""
        conversation = self.conversation
        messages = []
        for rule in conversation.frozen.glob_rules:
            if rule.path in conversation.fired_rules:
                continue
            path = next((p for p in paths if rule.matches(p)), None)
            if path is None:
                continue
            await conversation.mark_rule_fired(rule.path)
            messages.append(Message(role="user", content=rule.as_message(path), kind="rule"))
        return messages

    async def _answer_open_calls(self, status: str) -> None:
        """Give every unanswered call of the last assistant message an explicit result."""
        messages = self.conversation.messages
        last = next((m for m in reversed(messages) if m.role == "assistant"), None)
        if last is None or not last.tool_calls:
            return
        position = messages.index(last)
        answered = {m.tool_call_id for m in messages[position + 1 :] if m.role == "tool"}
        reason = {
            "cancelled": "Cancelled: the user stopped the task before this call finished.",
        }.get(status, f"Not run: the task ended ({status}) before this call ran.")
        for call in last.tool_calls:
            if call.id not in answered:
                await self.conversation.append(
                    Message(role="tool", content=reason, tool_call_id=call.id, is_error=True)
                )
                await self.conversation.record_event(
                    "tool_result",
                    {"id": call.id, "name": call.name, "content": reason, "isError": True},
                )
