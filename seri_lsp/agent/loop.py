"""The agent loop: one user prompt (a task) and the model calls (turns) it takes.

A task ends when the model answers without tool calls (`done`), the turn budget runs
out (`max_turns`), the user cancels (`cancelled`) or the provider fails (`failed`).
Whatever way it ends, every tool call the model made gets exactly one stored result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
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
from seri_lsp.context.compaction import (
    COMPACTION_ERRORS,
    CompactionFailed,
    Compactor,
    Summariser,
    compaction_threshold,
    failure_reason,
    keep_budget,
    not_enough,
)
from seri_lsp.context.conversation import Conversation, Step
from seri_lsp.errors import StoreBusy, store_failure_message
from seri_lsp.events import (
    Activity,
    Delta,
    FileChanged,
    ThinkingDelta,
    ToolStarted,
    TurnEnded,
)
from seri_lsp.host import Host, ProgressReporter
from seri_lsp.store.messages import INTERRUPTED_BY_STOP, Message, ToolCall, TurnStatus
from seri_lsp.store.spend import Spend

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


async def record_compaction_failed(
    conversation: Conversation, trigger: str, error: str, attempted: int
) -> None:
    """Record a compaction that did not happen (`attempted`: the messages it would evict).
    Best effort: the store that failed the compaction may fail this record too."""
    await conversation.record_event_softly(
        "compaction_failed",
        {
            "trigger": trigger,
            "outcome": "failed",
            "evicted": 0,
            "attempted": attempted,
            "error": error,
        },
    )


def usage_event(purpose: str, usage: Usage) -> dict[str, Any]:
    """The recording event of the tokens a reply was billed for (the prompt cache's reads
    and writes when the provider reported them)."""
    event: dict[str, Any] = {
        "purpose": purpose,
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
    }
    if usage.cached_input_tokens is not None:
        event["cachedInputTokens"] = usage.cached_input_tokens
    if usage.cache_write_tokens is not None:
        event["cacheWriteTokens"] = usage.cache_write_tokens
    return event


def spend_of(conversation: Conversation, kind: str, usage: Usage | None) -> Spend:
    """A model call's spend, labelled `kind` (`turn`, `compaction`), or `subagent` for
    every call of a subagent's session."""
    if conversation.info.parent_id is not None:
        kind = "subagent"
    if usage is None:
        return Spend(kind)
    return Spend(
        kind,
        input_tokens=usage.input_tokens,
        cached_input_tokens=usage.cached_input_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        cost=usage.cost,
        cache_write_tokens=usage.cache_write_tokens,
    )


async def record_summary_usage(conversation: Conversation, usage: Usage | None) -> None:
    """Store a summariser call's spend (and record its tokens, when the provider said),
    in one transaction. (A turn's reply stores its spend with its step.)"""
    step = Step(spend=spend_of(conversation, "compaction", usage), label="summary")
    if usage is not None:
        step.record("usage", usage_event("summary", usage))
    await conversation.commit(step)


def model_summariser(
    provider: Provider,
    conversation: Conversation,
    scope: CancelScope,
    host: Host,
    tools: Sequence[dict[str, Any]] = (),
) -> Summariser:
    """The compaction summariser: the same model as the turn, cancellable, offered the
    turns' own `tools` (so the request's prefix is theirs) with `tool_choice: "none"`."""

    async def summarise(request: list[dict[str, Any]]) -> str:
        try:
            reply = await scope.run(
                provider.complete(
                    request,
                    tools or None,
                    tool_choice="none" if tools else None,
                    on_retry=retry_recorder(conversation, host),
                    session=conversation.session_id,
                )
            )
        except ProviderError as exc:
            raise CompactionFailed(f"the summariser call failed: {exc}") from exc
        await record_summary_usage(conversation, reply.usage)
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
        # The calls of the reply being run that have started (ids repeat across replies).
        self._started: set[str] = set()
        self.provider = provider
        self.compactor = compactor
        self.host = host
        self.scope = scope
        self.summarise = model_summariser(provider, conversation, scope, host, toolbox.schemas())
        self.notices = notices if notices is not None else Notices()
        # The checks run when the model finishes a task that changed files (top level only).
        self.checks = checks
        # The files this task (its subagents included) changed through the editor, in the
        # order first changed: the editor may hold them unsaved when the checks run.
        self.editor_paths: dict[str, None] = {}
        self._reply: Reply | None = None
        self._streamed = False  # whether the model call in flight streamed any text
        # How the task ended, for the faces: the caller tells them once everything around
        # the task is done too (its checkpoint, its recording).
        self.ended: TurnEnded | None = None

    async def run(self, prompt: str, max_turns: Callable[[], int]) -> TaskOutcome:
        """Run one task to its end; never raises for provider or tool trouble.

        `max_turns` is asked before every model call, so `/max-turns` takes effect at once.
        """
        conversation = self.conversation
        turns = 0
        status: TurnStatus = "done"
        error: str | None = None
        final_text = ""
        await conversation.load()  # the history, read at the first task after the open
        step = Step([Message(role="user", content=prompt)], label="prompt", turn_starts=True)
        step.record("task_started", {"prompt": prompt})
        await conversation.commit(step)
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
                            verdict = await self.checks.after_final_reply(
                                conversation, progress, list(self.editor_paths)
                            )
                            if verdict.again:
                                continue  # the failures went back to the model
                            if verdict.error:
                                status, error = "failed", verdict.error
                        break
                    await self._run_tools(assistant)
            except TaskCancelled:
                if self.scope.stopping:  # seri stops (the editor quit, a signal)
                    status, error = "interrupted", INTERRUPTED_BY_STOP
                else:
                    status, error = "cancelled", "Cancelled by the user."
                await self._store_partial_reply()
            except (TaskFailed, ProviderError, StoreBusy) as exc:
                status, error = "failed", str(exc)
            except Exception as exc:  # a bug must end the task, not the server
                words = store_failure_message(exc)
                if words is not None:  # a full or failing disk: no bug, no traceback
                    logger.warning("The task failed: %s", words)
                    status, error = "failed", words
                else:
                    logger.exception("The task failed unexpectedly")
                    status, error = "failed", f"Internal error: {type(exc).__name__}: {exc}"
            try:
                await self._answer_open_calls(status)
            except StoreBusy as exc:
                status, error = "failed", str(exc)
            if status in ("max_turns", "failed"):
                await self._checks_after_stop(status, progress)
        outcome = TaskOutcome(status=status, turns=turns, error=error, final_text=final_text)
        try:
            if status == "done":
                # The task's work is stored: a store that fails to take this record does
                # not turn a done task into a failed one.
                await conversation.record_event_softly("task_ended", outcome.to_wire())
            else:
                # A task that failed (the store's busy refusal included) says so as before.
                await conversation.record_event("task_ended", outcome.to_wire())
        finally:
            await conversation.end_turn(status, error)
            # The faces learn that the task ended even when its last record could not
            # be written (they drop streamed text that was not stored).
            self.ended = TurnEnded(conversation.session_id, status, turns, error)
        return outcome

    async def _checks_after_stop(self, status: str, progress: ProgressReporter) -> None:
        """The checks of a task that stopped without a final answer after changing files:
        for the user to see; the task has ended, so nothing here changes its status."""
        if self.checks is None:
            return
        try:
            await self.checks.after_stop(
                self.conversation, progress, status, list(self.editor_paths)
            )
        except TaskCancelled:
            self.host.log("info", "The checks after the task were cancelled.")
        except Exception:
            logger.exception("The checks after the task failed")

    # --- model calls -------------------------------------------------------------------

    async def _request_messages(self) -> list[bytes]:
        """The request's messages, encoded (kept as the history grows, not rebuilt)."""
        conversation = self.conversation
        messages, repairs = conversation.request()
        for repair in repairs:
            self.host.log("warning", f"Repaired the request history: {repair}.")
        if repairs:
            await conversation.record_event("repair", {"repairs": repairs})
        return messages

    async def _send(self) -> Reply:
        conversation = self.conversation
        messages = await self._request_messages()
        self._reply = Reply()
        self._streamed = False
        record_retry = retry_recorder(conversation, self.host)

        def on_delta(text: str) -> None:
            self._streamed = True
            self.host.emit(Delta(conversation.session_id, text))

        def on_thinking(text: str) -> None:
            self.host.emit(ThinkingDelta(conversation.session_id, text))

        async def on_retry(notice: RetryNotice) -> None:
            self._drop_streamed()
            self.host.emit(
                Activity(
                    conversation.session_id,
                    "retrying",
                    notice.error,
                    attempt=notice.attempt,
                    max_attempts=self.provider.settings.max_retries,
                    delay=notice.delay,
                )
            )
            await record_retry(notice)

        self.host.emit(Activity(conversation.session_id, "model"))
        return await self.scope.run(
            self.provider.complete(
                messages,
                self.toolbox.schemas(),
                reply=self._reply,
                on_delta=on_delta,
                on_retry=on_retry,
                on_thinking=on_thinking,
                session=conversation.session_id,
            )
        )

    def _drop_streamed(self) -> None:
        """Tell the faces to drop the text a failed attempt streamed; it is sent again."""
        if self._streamed:
            self._streamed = False
            self.host.emit(Delta(self.conversation.session_id, "", reset=True))

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
                f"{sentence(rejection)} The history was compacted just before this call and "
                "nothing has been added since, so compacting again cannot make room. Lower "
                f"provider.keepTokens (now {self.compactor.settings.keep_tokens}), set "
                f"provider.contextWindow to the model's real window (now {window}), or "
                "start a new session (/clear)."
            )
        plan = self.compactor.plan(conversation, window)
        if plan is None:
            reason = not_enough(conversation.messages, self.compactor.settings.keep_tokens, window)
            await record_compaction_failed(conversation, "overflow", reason, 0)
            raise TaskFailed(
                f"{sentence(rejection)} Compaction cannot make room: "
                f"{reason[0].lower()}{reason[1:]}."
            )
        self.host.emit(Activity(conversation.session_id, "compacting"))
        try:
            await self.compactor.compact(
                conversation, plan, self.summarise, trigger="overflow", window=window
            )
        except CompactionFailed as exc:
            await record_compaction_failed(conversation, "overflow", str(exc), len(plan.evicted))
            raise TaskFailed(
                f"{sentence(rejection)} Compacting to make room failed: {exc}."
            ) from exc

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
        if estimate < compaction_threshold(window):
            return
        plan = self.compactor.plan(conversation, window)
        if plan is None:
            keep = keep_budget(self.compactor.settings.keep_tokens, window)
            self.host.log(
                "info",
                f"The history is at {estimate} of {window} tokens, but too little of it "
                f"can be compacted (the newest {keep} tokens are kept: provider.keepTokens, "
                "at most a quarter of the window); going on uncompacted.",
            )
            return
        self.host.emit(Activity(conversation.session_id, "compacting"))
        try:
            await self.compactor.compact(
                conversation, plan, self.summarise, trigger="auto", window=window
            )
        except COMPACTION_ERRORS as exc:
            # Fail-soft, a store error too (StoreBusy, a full disk): the turn goes on.
            # TaskCancelled and asyncio.CancelledError are not caught: a cancel stops it.
            reason = failure_reason(exc)
            message = f"Automatic compaction failed: {reason}. The turn goes on uncompacted."
            if self.notices.first("compaction_failed"):
                # Shown once per task; logged too, at a level a terminal does not echo.
                self.host.show("warning", message)
                self.host.log("info", message)
            else:
                self.host.log("warning", message)
            await record_compaction_failed(conversation, "auto", reason, len(plan.evicted))

    async def _store_reply(self, reply: Reply) -> Message:
        """The reply's step: the message with its spend, usage, billed count and the call
        events of its first tools (recorded before they run), in one transaction."""
        assistant = Message(
            role="assistant",
            content=reply.content,
            thinking=reply.thinking or None,
            tool_calls=tuple(reply.tool_calls),
        )
        spend = spend_of(self.conversation, "turn", reply.usage)
        step = Step([assistant], spend=spend, label="reply")
        if reply.usage is not None:
            step.billed = reply.usage.input_tokens
            step.record("usage", usage_event("turn", reply.usage))
        units = tool_units(assistant.tool_calls)
        if units:
            record_calls(step, units[0], self.toolbox)
        self._reply = None
        [stored] = await self.conversation.commit(step)
        return stored

    async def _store_partial_reply(self) -> None:
        """After a cancel mid-stream, keep what the model had said (its calls were incomplete)."""
        reply, self._reply = self._reply, None
        if reply is not None and (reply.content or reply.thinking):
            await self.conversation.append(
                Message(role="assistant", content=reply.content, thinking=reply.thinking or None)
            )

    # --- tools -------------------------------------------------------------------------

    async def _run_tools(self, assistant: Message) -> None:
        """Run the reply's tool calls in order (a run of `task` calls side by side).

        Each result is one step: the tool message with its recording events and the
        paths it touched, and the call events of the next tools (recorded before they
        run); the last step also delivers the glob rules the results fired.
        """
        conversation = self.conversation
        units = tool_units(assistant.tool_calls)
        self._started = set()
        rules: list[tuple[str, Message]] = []
        for number, unit in enumerate(units):
            self.scope.check()
            for call in unit:
                self._started.add(call.id)
                self.host.emit(ToolStarted(conversation.session_id, call))
            self.host.emit(Activity(conversation.session_id, "tool", describe_calls(unit)))
            if unit[0].name == "task":
                # Subagents share this task's cancel scope and run side by side.
                outcomes = list(await asyncio.gather(*(self.toolbox.run(c) for c in unit)))
            else:
                outcomes = [await self.scope.run(self.toolbox.run(unit[0]))]
            following = units[number + 1] if number + 1 < len(units) else None
            for position, (call, outcome) in enumerate(zip(unit, outcomes, strict=True)):
                step = self._result_step(call, outcome)
                rules += self._rules_for(
                    outcome.read + outcome.modified, [rule for rule, _ in rules]
                )
                if position == len(unit) - 1 and following is not None:
                    record_calls(step, following, self.toolbox)
                elif position == len(unit) - 1:
                    for rule, message in rules:
                        step.deliver(rule, message)
                await conversation.commit(step)
        self.scope.check()

    def _result_step(self, call: ToolCall, outcome: ToolOutcome) -> Step:
        """A tool result's step: its message, recording events and paths."""
        conversation = self.conversation
        if outcome.change is not None:
            self.host.emit(FileChanged(conversation.session_id, call.id, outcome.change))
        step = Step(
            [
                Message(
                    role="tool",
                    content=outcome.content,
                    tool_call_id=call.id,
                    is_error=outcome.is_error,
                )
            ],
            read=list(outcome.read),
            modified=list(outcome.modified),
            label="result",
        )
        step.record(
            "tool_result",
            {
                "id": call.id,
                "name": call.name,
                "content": outcome.content,
                "isError": outcome.is_error,
                **({"server": outcome.server} if outcome.server else {}),
            },
        )
        # Not `is_error`: a failed write reports no path, but a subagent that failed or ran
        # out of turns may have changed files before it stopped.
        if outcome.modified:
            self.editor_paths.update(dict.fromkeys(outcome.editor_paths))
            if self.checks is not None:
                self.checks.note_modified()
        path = (call.parsed_arguments() or {}).get("path")
        if outcome.command is not None:
            step.record("command", {"id": call.id, **outcome.command})
        if outcome.denial is not None:
            step.record("denial", {"tool": call.name, "path": path, "reason": outcome.denial})
            self.host.log("info", f"Denied {call.name} of {path!r}: {outcome.denial}.")
        if outcome.edit_via is not None:
            step.record(
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
            step.record(
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
        return step

    def _rules_for(self, paths: tuple[str, ...], fired: list[str]) -> list[tuple[str, Message]]:
        """Glob rules that the touched paths fire for the first time in this session
        (`fired`: those this turn's earlier results fired, not stored yet)."""
        conversation = self.conversation
        found = []
        for rule in conversation.frozen.glob_rules:
            if rule.path in conversation.fired_rules or rule.path in fired:
                continue
            path = next((p for p in paths if rule.matches(p)), None)
            if path is None:
                continue
            message = Message(role="user", content=rule.as_message(path), kind="rule")
            found.append((rule.path, message))
        return found

    async def _answer_open_calls(self, status: str) -> None:
        """Give every unanswered call of the last assistant message an explicit result."""
        messages = self.conversation.messages
        position = next(
            (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), None
        )
        if position is None or not messages[position].tool_calls:
            return
        last = messages[position]
        answered = {m.tool_call_id for m in messages[position + 1 :] if m.role == "tool"}
        not_run = f"Not run: the task ended ({status}) before this call ran."
        step = Step(label="result")
        for call in last.tool_calls:
            if call.id not in answered:
                reason = not_run
                if status == "cancelled":
                    reason = "Cancelled: the user stopped the task before this call finished."
                elif status == "interrupted" and call.id in self._started:
                    reason = (
                        "Interrupted: seri stopped (the editor closed or the server "
                        "restarted) while this call ran; it may have done part of its work."
                    )
                step.messages.append(
                    Message(role="tool", content=reason, tool_call_id=call.id, is_error=True)
                )
                step.record(
                    "tool_result",
                    {"id": call.id, "name": call.name, "content": reason, "isError": True},
                )
        if step.messages:
            await self.conversation.commit(step)


def tool_units(calls: Sequence[ToolCall]) -> list[list[ToolCall]]:
    """The calls of a reply as they run: one at a time, but a run of `task` calls
    (subagents) together."""
    units: list[list[ToolCall]] = []
    for call in calls:
        if call.name == "task" and units and units[-1][0].name == "task":
            units[-1].append(call)
        else:
            units.append([call])
    return units


def sentence(error: Exception) -> str:
    """An error's words as a sentence, so that another can follow it."""
    text = str(error).rstrip()
    return text if text.endswith((".", "!", "?", ":")) else f"{text}."


def describe_calls(calls: Sequence[ToolCall]) -> str:
    """What running tool calls do, in a few words: `edit src/app.py`, `grep TODO`,
    `2 subagents`."""
    if len(calls) > 1:
        return f"{len(calls)} subagents"
    call = calls[0]
    arguments = call.parsed_arguments() or {}
    target = next(
        (
            arguments[key]
            for key in ("path", "pattern", "command")
            if isinstance(arguments.get(key), str)
        ),
        "",
    )
    return f"{call.name} {target[:120]}".strip()


def record_calls(step: Step, calls: Sequence[ToolCall], toolbox: Toolbox) -> None:
    """Record tool calls as the model made them, in the step that precedes their run
    (an MCP tool's with its server)."""
    for call in calls:
        arguments = call.parsed_arguments()
        server = toolbox.server_of(call.name)
        step.record(
            "tool_call",
            {
                "id": call.id,
                "name": call.name,
                "arguments": arguments if arguments is not None else call.arguments,
                **({"server": server} if server else {}),
            },
        )
