"""Compaction: a prefix summariser that keeps the newest messages by token budget.

The rules (SPEC section 4), each in one place here:

- where to cut: only immediately before a `user` or `assistant` message, never before a
  `tool` result, so a call and its result are never separated; the earliest such point
  whose suffix fits `keepTokens`, else the last one (`choose_cut`);
- whether to cut: at least four evictable messages, an existing recap not counted
  (`plan_compaction`);
- what the summariser sees: the evicted messages with every oversized tool argument or
  result replaced by `{"elided": true, "originalBytes": N}`, the earlier recap to
  update, and the focus words (`summary_request`);
- which paths the recap lists: taken from the evicted tool calls, not the model
  (`evicted_paths`).

The `Compactor` runs those steps against a live conversation: the summariser call, the
shrink check, and the single transaction that writes the recap and deletes the prefix.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from seri_lsp import faults
from seri_lsp.context.conversation import Conversation
from seri_lsp.context.prompt_files import builtin_prompt
from seri_lsp.context.recap import Recap, UnusableSummary, merge_paths, parse_summary
from seri_lsp.events import Compacted
from seri_lsp.host import Host
from seri_lsp.settings import ProviderSettings
from seri_lsp.store.messages import Message, tokens_for_chars

MIN_EVICTABLE = 4
NOT_ENOUGH = "Not enough history to compact"
READ_TOOLS = frozenset({"read_file"})
MODIFY_TOOLS = frozenset({"write_file", "edit"})


class CompactionFailed(Exception):
    """A compaction was attempted and did not happen; the message says why."""


@dataclass(frozen=True)
class CompactionPlan:
    """Where to cut, and what goes."""

    cut: int
    evicted: tuple[Message, ...]
    previous: Message | None

    @property
    def replaced(self) -> tuple[Message, ...]:
        """Everything the recap replaces: the earlier recap (if any) and the evicted."""
        return ((self.previous,) if self.previous else ()) + self.evicted


@dataclass(frozen=True)
class CompactionResult:
    """What a compaction did, as `seri.compact` answers it."""

    compacted: bool
    evicted: int = 0
    message: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"compacted": self.compacted, "evicted": self.evicted}
        if self.message:
            wire["message"] = self.message
        return wire


def legal_cut_points(messages: Sequence[Message]) -> list[int]:
    """Indices a cut may sit before: a user or assistant message, never a tool result.

    Index 0 is never a cut (nothing would go) and neither is the recap's own place.
    """
    return [
        index
        for index in range(1, len(messages))
        if messages[index].role in ("user", "assistant") and not messages[index].is_recap
    ]


def choose_cut(messages: Sequence[Message], keep_tokens: int) -> int | None:
    """The earliest legal cut whose suffix fits `keep_tokens`, else the last legal cut."""
    points = legal_cut_points(messages)
    if not points:
        return None
    suffix_chars = [0] * (len(messages) + 1)
    for index in range(len(messages) - 1, -1, -1):
        suffix_chars[index] = suffix_chars[index + 1] + messages[index].chars
    for point in points:
        if tokens_for_chars(suffix_chars[point]) <= keep_tokens:
            return point
    return points[-1]


def plan_compaction(messages: Sequence[Message], keep_tokens: int) -> CompactionPlan | None:
    """The compaction to run now, or None when fewer than four messages could go."""
    cut = choose_cut(messages, keep_tokens)
    if cut is None:
        return None
    previous = next((m for m in messages[:cut] if m.is_recap), None)
    evicted = tuple(m for m in messages[:cut] if not m.is_recap)
    if len(evicted) < MIN_EVICTABLE:
        return None
    return CompactionPlan(cut=cut, evicted=evicted, previous=previous)


def normalize_path(path: str) -> str:
    """A lexical normal form for paths from tool arguments (`./a/../b` -> `b`)."""
    normal = posixpath.normpath(path.replace("\\", "/"))
    return normal[2:] if normal.startswith("./") else normal


def evicted_paths(
    evicted: Sequence[Message],
    normalize: Callable[[str], str | None] = normalize_path,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Paths read and modified by the evicted tool calls that succeeded.

    A call counts when its result is among the evicted messages and is not an error
    (a denied or failed write modified nothing). Modified wins over read.
    """
    results = {m.tool_call_id: m for m in evicted if m.role == "tool"}
    read: list[str] = []
    modified: list[str] = []
    for message in evicted:
        for call in message.tool_calls:
            if call.name not in READ_TOOLS | MODIFY_TOOLS:
                continue
            result = results.get(call.id)
            if result is None or result.is_error:
                continue
            raw = (call.parsed_arguments() or {}).get("path")
            path = normalize(raw) if isinstance(raw, str) and raw else None
            if path is None:
                continue
            (modified if call.name in MODIFY_TOOLS else read).append(path)
    return merge_paths((), (), read, modified)


def elide(value: str, limit: int) -> str | dict[str, Any]:
    """The value itself, or an elision marker when it is over `limit` UTF-8 bytes."""
    size = len(value.encode("utf-8"))
    return {"elided": True, "originalBytes": size} if size > limit else value


def _elided_arguments(arguments: str, limit: int) -> Any:
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return elide(arguments, limit)
    if not isinstance(parsed, dict):
        return elide(arguments, limit)
    out: dict[str, Any] = {}
    for key, value in parsed.items():
        # A non-string value is measured as its JSON text, with non-ASCII characters kept
        # as themselves: `\uXXXX` escapes would overstate its UTF-8 size up to threefold.
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        marker = elide(text, limit)
        out[key] = value if marker == text else marker
    return out


def transcript(messages: Sequence[Message], elide_bytes: int) -> list[dict[str, Any]]:
    """The evicted messages as the summariser sees them, oversized payloads elided."""
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role}
        if message.role == "tool":
            item["tool_call_id"] = message.tool_call_id
            item["content"] = elide(message.content, elide_bytes)
            if message.is_error:
                item["is_error"] = True
        else:
            item["content"] = message.content
            if message.thinking:
                item["thinking"] = message.thinking
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "name": call.name,
                        "arguments": _elided_arguments(call.arguments, elide_bytes),
                    }
                    for call in message.tool_calls
                ]
        out.append(item)
    return out


def summary_request(
    plan: CompactionPlan, focus: str | None, elide_bytes: int
) -> list[dict[str, Any]]:
    """The messages of the summariser request (sent without tools)."""
    parts = []
    if plan.previous is not None and plan.previous.recap is not None:
        earlier = plan.previous.recap
        parts.append(
            "An earlier recap already covers the start of this session. Update it with "
            "the messages below rather than writing a new one: move work that is now "
            "finished into Progress, drop blockers that these messages resolved, and keep "
            "everything else that still holds.\n\nEarlier recap:\n\n"
            + "\n\n".join(
                f"{title}:\n{getattr(earlier, name)}"
                for name, title in (
                    ("goal", "Goal"),
                    ("progress", "Progress"),
                    ("blockers", "Blockers"),
                    ("next_steps", "Next steps"),
                )
            )
        )
    parts.append(
        "Messages to compact, oldest first, as JSON:\n\n"
        + json.dumps(transcript(plan.evicted, elide_bytes), ensure_ascii=False, indent=1)
    )
    if focus:
        parts.append(f"Focus instructions from the user for this recap: {focus}")
    parts.append("Answer with the four sections Goal:, Progress:, Blockers: and Next steps:.")
    return [
        {"role": "system", "content": builtin_prompt("summarizer")},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


Summariser = Callable[[list[dict[str, Any]]], Awaitable[str]]
"""Sends a summariser request (no tools) to the model and returns the reply's text.

Raises CompactionFailed when the model cannot be asked; the caller that supplies it owns
cancellation, retries and the usage record.
"""


class Compactor:
    """Runs compactions: the summariser call, the recap, the atomic commit, the event."""

    def __init__(
        self,
        settings: ProviderSettings,
        host: Host,
        normalize_path: Callable[[str], str | None],
    ) -> None:
        self.settings = settings
        self.host = host
        self.normalize_path = normalize_path

    def plan(self, conversation: Conversation) -> CompactionPlan | None:
        """The compaction that would run now (None: not enough history)."""
        return plan_compaction(conversation.messages, self.settings.keep_tokens)

    async def compact(
        self,
        conversation: Conversation,
        plan: CompactionPlan,
        summarise: Summariser,
        *,
        trigger: str,
        focus: str | None = None,
    ) -> CompactionResult:
        """Summarise `plan.evicted` into a recap and commit it; CompactionFailed if not."""
        request = summary_request(plan, focus, self.settings.elide_bytes)
        async with self.host.progress("seri: compacting the conversation") as progress:
            progress.report(f"summarising {len(plan.evicted)} messages")
            try:
                fields = parse_summary(await summarise(request))
            except UnusableSummary as exc:
                raise CompactionFailed(f"the summary was unusable: {exc}") from exc

            earlier = plan.previous.recap if plan.previous else None
            read, modified = evicted_paths(plan.evicted, self.normalize_path)
            read, modified = merge_paths(
                earlier.read if earlier else (),
                earlier.modified if earlier else (),
                read,
                modified,
            )
            recap = Recap(
                read=read,
                modified=modified,
                evicted=len(plan.evicted) + (earlier.evicted if earlier else 0),
                **fields,
            )
            recap_message = Message(role="user", content=recap.render(), kind="recap", recap=recap)
            replaced_chars = sum(m.chars for m in plan.replaced)
            if recap_message.chars >= replaced_chars:
                raise CompactionFailed(
                    "the recap would not make the history smaller "
                    f"({recap_message.chars} characters for {replaced_chars})"
                )
            faults.crash_point("compaction.before_commit")
            await conversation.replace_prefix(plan.replaced, recap_message)
            progress.report("done", 100)
        await conversation.record_event(
            "compaction",
            {
                "trigger": trigger,
                "evicted": len(plan.evicted),
                "focus": focus,
                "charsBefore": replaced_chars,
                "recapChars": recap_message.chars,
            },
        )
        self.host.emit(Compacted(conversation.id, trigger, len(plan.evicted)))
        return CompactionResult(True, len(plan.evicted))
