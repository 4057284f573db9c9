"""Compaction: a prefix summariser that keeps the newest messages by token budget.

The rules (SPEC section 4), each in one place here:

- where to cut: only immediately before a `user` or `assistant` message, never before a
  `tool` result, so a call and its result are never separated; the earliest such point
  whose suffix fits the keep budget in force, else the last one (`choose_cut`); the
  budget in force is `keepTokens`, at most a quarter of the window (`keep_budget`);
- whether to cut: at least four evictable messages, an existing recap not counted
  (`plan_compaction`);
- what the summariser sees: the turns' own request up to the cut (their system message
  and the conversation in the shape the turns sent it, so a provider's cached prefix is
  read again) with every oversized tool argument or result replaced by
  `{"elided": true, "originalBytes": N}`, then one user message with the instructions:
  the four fields, the earlier recap to update, the focus words (`summary_request`);
- that every summariser request fits the model's window with room for the reply: a
  message too large for one request has its largest texts elided the same way, and a
  prefix too long for one request is summarised in chunks, each chunk updating the
  recap of the chunks before it (`SummaryPlanner`);
- which paths the recap lists: taken from the evicted tool calls, not the model
  (`evicted_paths`).

The `Compactor` runs those steps against a live conversation: the summariser call, the
shrink check, and the single transaction that writes the recap and deletes the prefix.
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from seri_lsp import faults
from seri_lsp.context.conversation import Conversation
from seri_lsp.context.pairing import PairedHistory
from seri_lsp.context.prompt_files import builtin_prompt
from seri_lsp.context.recap import Recap, UnusableSummary, merge_paths, parse_summary
from seri_lsp.events import Compacted
from seri_lsp.host import Host
from seri_lsp.settings import ProviderSettings
from seri_lsp.store.database import STORE_ERRORS
from seri_lsp.store.messages import (
    FIELDS,
    MODIFY_TOOLS,
    READ_TOOLS,
    Message,
    ToolCall,
    command_changed_paths,
    tokens_for_chars,
)

logger = logging.getLogger(__name__)

MIN_EVICTABLE = 4
NOT_ENOUGH = "Not enough history to compact"


class CompactionFailed(Exception):
    """A compaction was attempted and did not happen; the message says why."""


# What stops a compaction without stopping the turn that asked for it.
COMPACTION_ERRORS: tuple[type[Exception], ...] = (CompactionFailed, *STORE_ERRORS)


def compaction_threshold(window: int) -> int:
    """The estimate (tokens) at which automatic compaction starts: half the window."""
    return (window + 1) // 2


def failure_reason(exc: Exception) -> str:
    """Why a compaction did not happen, in words for "Compaction failed: ...": a
    CompactionFailed's message, or the store error that stopped it."""
    if isinstance(exc, CompactionFailed):
        return str(exc)
    return f"the store failed ({str(exc).rstrip('.')})"


def keep_budget(keep_tokens: int, window: int) -> int:
    """The keep budget in force: `keepTokens`, at most a quarter of the window, so that
    what a compaction keeps (with the recap) is under the trigger at any window size."""
    return max(1, min(keep_tokens, window // 4))


def keep_note(keep_tokens: int, window: int) -> str | None:
    """What to tell the user when the window cuts the configured `keepTokens` (None:
    it does not)."""
    budget = keep_budget(keep_tokens, window)
    if budget >= keep_tokens:
        return None
    return (
        f"provider.keepTokens ({keep_tokens}) is more than a quarter of the "
        f"{window}-token context window: compaction keeps {budget} tokens"
    )


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
    """What a compaction did, as `seri.compact` answers it (a compaction that happened
    with the numbers of its `seri/compacted` notice)."""

    compacted: bool
    evicted: int = 0
    message: str | None = None
    notice: Compacted | None = None


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


def not_enough(messages: Sequence[Message], keep_tokens: int, window: int) -> str:
    """Why no compaction can run now: NOT_ENOUGH, naming `keepTokens` and the budget in
    force when they are the reason (a smaller budget would let it compact)."""
    if plan_compaction(messages, 0) is None:
        return NOT_ENOUGH
    budget = keep_budget(keep_tokens, window)
    limit = (
        f"provider.keepTokens, {keep_tokens:,}"
        if budget >= keep_tokens
        else f"provider.keepTokens ({keep_tokens:,}) cut to a quarter of the "
        f"{window:,}-token window"
    )
    return (
        f"{NOT_ENOUGH}: the newest {budget:,} tokens are kept as they are ({limit}), and too "
        "little comes before them; lower provider.keepTokens to compact more"
    )


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

    Results are paired with calls by position, as requests pair them: the tool results
    after an assistant message answer that message's calls (by id within it, in order),
    so an id seen again in a later turn (older versions named the calls a provider sent
    without an id `call_0`, `call_1`, ... in every turn) cannot lend one call's result
    to another.
    """
    read: list[str] = []
    modified: list[str] = []
    calls: tuple[ToolCall, ...] = ()  # the calls of the assistant message just before
    succeeded: list[bool] = []
    answered: list[bool] = []

    def close_group() -> None:
        for call, ok in zip(calls, succeeded, strict=True):
            if not ok or call.name not in READ_TOOLS | MODIFY_TOOLS:
                continue
            raw = (call.parsed_arguments() or {}).get("path")
            path = normalize(raw) if isinstance(raw, str) and raw else None
            if path is not None:
                (modified if call.name in MODIFY_TOOLS else read).append(path)

    for message in evicted:
        if message.role == "tool":
            # The first call of the group with this id that has no result yet.
            index = next(
                (
                    i
                    for i, call in enumerate(calls)
                    if call.id == message.tool_call_id and not answered[i]
                ),
                None,
            )
            if index is not None:
                answered[index] = True
                succeeded[index] = not message.is_error
                if calls[index].name == "run":  # (a failed command may have changed files)
                    modified.extend(command_changed_paths(message.content or ""))
            continue
        close_group()
        calls = message.tool_calls if message.role == "assistant" else ()
        succeeded = [False] * len(calls)
        answered = [False] * len(calls)
    close_group()
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


def json_text(value: Any) -> str:
    """An elision marker (or arguments holding some) as the JSON text a request carries
    where the turn's request carried text."""
    return json.dumps(value, ensure_ascii=False)


def provider_entry(message: Message, elide_bytes: int) -> dict[str, Any]:
    """A message as the turns' requests carry it (`Message.to_provider`), with every tool
    result and tool argument over `elide_bytes` replaced by its elision marker (as the
    transcript elides them); a message with nothing elided is exactly the turns' own."""
    out = message.to_provider()
    [entry] = transcript([message], elide_bytes)
    if message.role == "tool" and _is_marker(entry["content"]):
        out["content"] = json_text(entry["content"])
    for call, sent in zip(out.get("tool_calls", []), entry.get("tool_calls", []), strict=True):
        arguments = sent["arguments"]
        if _is_marker(arguments) or (
            isinstance(arguments, dict) and any(_is_marker(v) for v in arguments.values())
        ):
            call["function"]["arguments"] = json_text(arguments)
    return out


_UPDATE = (
    "The conversation above starts with a recap of its earlier part (the message that "
    'begins "This is a recap"). Update that recap with the messages after it rather than '
    "writing a new one: move work that is now finished into Progress, drop blockers that "
    "these messages resolved, and keep everything else that still holds."
)
_ANSWER = "Answer with the four sections Goal:, Progress:, Blockers: and Next steps:."


def _recap_fields(recap: Recap) -> dict[str, str]:
    return {name: getattr(recap, name) for name in FIELDS}


def shorten(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    marker = " [{} more characters cut]"
    keep = max(0, limit - len(marker.format(len(text))))
    return (text[:keep] + marker.format(len(text) - keep))[:limit]


def recap_entry(fields: dict[str, str], limit: int | None = None) -> dict[str, Any]:
    """A recap as the turns carry it (its fields, no path lines); with `limit`, its text
    at most that many characters, each field shortened alike."""

    def render(values: dict[str, str]) -> str:
        return Recap(
            goal=values["goal"],
            progress=values["progress"],
            blockers=values["blockers"],
            next_steps=values["next_steps"],
        ).render()

    text = render(fields)
    if limit is not None and len(text) > limit:
        fixed = len(render(dict.fromkeys(FIELDS, "")))
        allowance = max(0, (limit - fixed) // len(FIELDS))
        text = render({name: shorten(fields[name], allowance) for name in FIELDS})
    return {"role": "user", "content": text}


def instructions(earlier: bool, focus: str | None) -> dict[str, Any]:
    """The one user message after the conversation that asks for the recap."""
    parts = [builtin_prompt("summarizer").strip()]
    if earlier:
        parts.append(_UPDATE)
    if focus:
        parts.append(f"Focus instructions from the user for this recap: {focus}")
    parts.append(_ANSWER)
    return {"role": "user", "content": "\n\n".join(parts)}


def entry_chars(entry: dict[str, Any]) -> int:
    """Characters of a request message, the measure of the ceil(chars / 4) estimate: its
    text, its reasoning and its tool calls' arguments (as `count_chars` counts them)."""
    calls = entry.get("tool_calls") or []
    return (
        len(entry.get("content") or "")
        + len(entry.get("reasoning") or "")
        + sum(len(call["function"]["arguments"] or "") for call in calls)
    )


def request_chars(request: Sequence[dict[str, Any]]) -> int:
    """Characters of a request's messages, the measure of the ceil(chars / 4) estimate."""
    return sum(entry_chars(m) for m in request)


def summary_request(
    plan: CompactionPlan,
    focus: str | None,
    elide_bytes: int,
    system: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The messages of a single summariser request for the whole plan: the system
    message (when given), the conversation up to the cut as the turns sent it (oversized
    tool payloads elided), and the instructions.

    With no window to fit, every evicted message goes in one request; the Compactor
    uses `SummaryPlanner` with a budget, which elides and splits to fit the window.
    """
    return SummaryPlanner(plan, focus, elide_bytes, None, system).next_request()


# A summariser request leaves room in the window for the reply: a quarter of it, at most
# REPLY_ROOM_CAP tokens, or the `maxTokens` setting when one is set (at most half).
REPLY_ROOM_CAP = 8192
# Below this many characters per message the window is too small to honour; the
# request is sent anyway (best effort) rather than failing.
MIN_ITEM_CHARS = 512
# How much of a message elided for size is kept as `contentStart`.
CONTENT_START_CHARS = 2000


def reply_room(window: int, max_tokens: Any = None) -> int:
    """Tokens of the window a summariser request leaves free for the reply."""
    room = min(window // 4, REPLY_ROOM_CAP)
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0:
        room = min(max_tokens, window // 2)
    return room


def summary_budget(window: int, max_tokens: Any = None) -> int:
    """Characters a summariser request may hold: ceil(chars / 4) <= window - reply room."""
    return max(0, window - reply_room(window, max_tokens)) * 4


def _marker(text: str) -> dict[str, Any]:
    return {"elided": True, "originalBytes": len(text.encode("utf-8", "surrogatepass"))}


def _is_marker(value: Any) -> bool:
    return isinstance(value, dict) and value.get("elided") is True


def _is_marker_text(value: Any) -> bool:
    if not isinstance(value, str) or not value.startswith('{"elided": true'):
        return False
    try:
        return _is_marker(json.loads(value))
    except json.JSONDecodeError:
        return False


def shrink_entry(entry: dict[str, Any], limit: int) -> tuple[dict[str, Any], int]:
    """`entry` with its largest texts elided until it fits `limit` characters
    (`entry_chars`).

    Its texts (message text, reasoning, each tool argument, a tool result) are elided
    largest first, each as the JSON text of its marker; an elided user or assistant
    text keeps its first characters as the marker's `contentStart`. If even that does
    not fit, every text left becomes one marker. Returns the entry and how many texts
    were elided.
    """
    if entry_chars(entry) <= limit:
        return entry, 0
    entry = json.loads(json.dumps(entry))  # a private copy to change
    # (size, setter) for every text still in the entry.
    fields: list[tuple[int, Callable[[], None]]] = []

    def add(container: dict[str, Any], key: str, keep_start: bool = False) -> None:
        text = container.get(key)
        if not isinstance(text, str) or not text or _is_marker_text(text):
            return

        def elide_it() -> None:
            marker = _marker(text)
            if keep_start:
                marker["contentStart"] = text[: min(CONTENT_START_CHARS, limit // 4)]
            container[key] = json_text(marker)

        fields.append((len(text), elide_it))

    add(entry, "content", keep_start=entry["role"] != "tool")
    add(entry, "reasoning")
    arguments: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for call in entry.get("tool_calls") or []:
        function = call["function"]
        try:
            parsed = json.loads(function["arguments"] or "{}")
        except json.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            add(function, "arguments")
            continue
        arguments.append((function, parsed))
        for key, value in parsed.items():
            if _is_marker(value):
                continue
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

            def elide_argument(
                function: dict[str, Any] = function,
                parsed: dict[str, Any] = parsed,
                key: str = key,
                text: str = text,
            ) -> None:
                parsed[key] = _marker(text)
                function["arguments"] = json_text(parsed)

            fields.append((len(text), elide_argument))
    elided = 0
    for _, elide_it in sorted(fields, key=lambda field: field[0], reverse=True):
        elide_it()
        elided += 1
        if entry_chars(entry) <= limit:
            return entry, elided
    if entry_chars(entry) <= limit:
        return entry, elided
    # Even the markers are too many: one marker for the text, one per call's arguments
    # (the calls stay, for their results to answer).
    content = entry.get("content")
    if content:
        entry["content"] = json_text(_marker(content))
    entry.pop("reasoning", None)
    for call in entry.get("tool_calls") or []:
        call["function"]["arguments"] = json_text(_marker(call["function"]["arguments"] or ""))
    return entry, elided + 1


# What `_closed` writes: before a result whose call went in the part before, and as the
# result of a call whose result comes in the next part.
_EARLIER_RESULT = "(The result of tool call {}, from the part before:)\n"
_LATER_RESULT = "(Its result comes in the next part.)"


def _closure_chars(entry: dict[str, Any]) -> int:
    """The most characters `_closed` may add for `entry`."""
    if entry.get("role") == "tool":
        return len(_EARLIER_RESULT.format(entry.get("tool_call_id")))
    return len(_LATER_RESULT) * len(entry.get("tool_calls") or [])


def _closed(chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A chunk that splits a call from its results (a group too large for one request)
    made valid on its own: results whose call went in the chunk before become user text,
    and calls whose results come in the next chunk get a result that says so."""
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(chunk) and chunk[index]["role"] == "tool":
        result = chunk[index]
        out.append(
            {
                "role": "user",
                "content": _EARLIER_RESULT.format(result.get("tool_call_id"))
                + (result.get("content") or ""),
            }
        )
        index += 1
    out.extend(chunk[index:])
    last = max((i for i, e in enumerate(out) if e["role"] != "tool"), default=None)
    if last is not None and out[last].get("tool_calls"):
        answered = {e.get("tool_call_id") for e in out[last + 1 :]}
        out.extend(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": _LATER_RESULT,
            }
            for call in out[last]["tool_calls"]
            if call["id"] not in answered
        )
    return out


class SummaryPlanner:
    """The summariser requests for a plan, each fitting `budget` characters.

    A request is the turns' own prefix: the system message (`system`), then the
    conversation up to the cut as the turns sent it (the earlier recap first, calls and
    results paired as the turns paired them, oversized tool payloads elided), then one
    user message with the instructions. The first request shares its prefix with the
    turns up to the first elided payload; when the prefix is too long for one request it
    goes in chunks, oldest first, each later chunk starting with the recap of the chunks
    before it. A chunk ends before a user or assistant message where it can, so a call
    and its results reach the summariser together. A message that could not fit any
    request on its own is shrunk first (`shrink_entry`), so every request holds at
    least one message and fits. With no budget, everything goes in one request.
    """

    def __init__(
        self,
        plan: CompactionPlan,
        focus: str | None,
        elide_bytes: int,
        budget: int | None,
        system: dict[str, Any] | None = None,
    ) -> None:
        self.budget = budget
        self.focus = shorten(focus, budget // 16) if focus and budget is not None else focus
        self.recap_limit = budget // 4 if budget is not None else None
        self.system = [system] if system is not None else []
        self.earlier = (
            _recap_fields(plan.previous.recap)
            if plan.previous is not None and plan.previous.recap is not None
            else None
        )
        paired, _ = PairedHistory(plan.replaced).request()
        entries = [provider_entry(m, elide_bytes) for m in paired]
        self.elided = 0
        if budget is not None:
            if paired and paired[0].is_recap and entry_chars(entries[0]) > budget // 4:
                # An earlier recap too large for its share is sent shortened.
                assert self.earlier is not None
                entries[0] = recap_entry(self.earlier, self.recap_limit)
            # The most a request can hold besides its messages: the system message, the
            # recap at its limit and the instructions.
            overhead = request_chars([*self.system, instructions(True, self.focus)])
            item_limit = max(MIN_ITEM_CHARS, budget - overhead - budget // 4)
            fitted = []
            for index, entry in enumerate(entries):
                if not (index == 0 and paired[0].is_recap):
                    # (room for what `_closed` adds when its chunk splits a call from
                    # its results, so that such a chunk still fits)
                    limit = max(MIN_ITEM_CHARS, item_limit - _closure_chars(entry))
                    entry, elided = shrink_entry(entry, limit)
                    self.elided += elided
                fitted.append(entry)
            entries = fitted
        # The first request starts with the earlier recap (when there is one) in place.
        self.leading_recap = bool(paired) and paired[0].is_recap
        self.entries = entries
        self.requests = 0

    @property
    def done(self) -> bool:
        return not self.entries or (self.leading_recap and len(self.entries) == 1)

    def next_request(self) -> list[dict[str, Any]]:
        """The request for the next chunk of messages (call `update` with its answer)."""
        head = list(self.system)
        if self.requests and self.earlier is not None:
            head.append(recap_entry(self.earlier, self.recap_limit))
        tail = instructions(self.earlier is not None, self.focus)
        entries = self.entries
        count = len(entries)
        if self.budget is not None:
            room = self.budget - request_chars([*head, tail])
            least = 2 if self.leading_recap and not self.requests else 1
            count, used = 0, 0
            while count < len(entries):
                used += entry_chars(entries[count])
                if count >= least and used > room:
                    break
                count += 1
            if count < len(entries) and entries[count]["role"] == "tool":
                # Do not end between a call and its results unless the group alone is
                # too large for one request.
                start = max(
                    (i for i in range(least, count) if entries[i]["role"] != "tool"),
                    default=count,
                )
                count = start
            # What `_closed` adds to a chunk that splits a call from its results counts
            # too: fewer messages while the closed chunk is over the budget.
            while count > least and (
                request_chars([*head, *self._chunk(count), tail]) > self.budget
            ):
                count -= 1
        chunk = self._chunk(count)
        self.entries = entries[count:]
        self.leading_recap = self.leading_recap and self.requests > 0
        self.requests += 1
        return [*head, *chunk, tail]

    def _chunk(self, count: int) -> list[dict[str, Any]]:
        """The next request's first `count` messages, closed when the request is one of
        several (see `_closed`)."""
        chunk = self.entries[:count]
        return _closed(chunk) if self.requests > 0 or count < len(self.entries) else chunk

    def update(self, fields: dict[str, str]) -> None:
        """The summary of the chunk just sent: the recap the next chunk updates."""
        self.earlier = fields


Summariser = Callable[[list[dict[str, Any]]], Awaitable[str]]
"""Sends a summariser request's messages to the model (with the turns' tools, not
callable) and returns the reply's text.

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

    def plan(self, conversation: Conversation, window: int) -> CompactionPlan | None:
        """The compaction that would run now (None: not enough history), keeping the
        budget in force for `window`."""
        return plan_compaction(
            conversation.messages, keep_budget(self.settings.keep_tokens, window)
        )

    async def compact(
        self,
        conversation: Conversation,
        plan: CompactionPlan,
        summarise: Summariser,
        *,
        trigger: str,
        window: int,
        focus: str | None = None,
    ) -> CompactionResult:
        """Summarise `plan.evicted` into a recap and commit it; CompactionFailed if not.

        `window` is the model's context window: no summariser request exceeds it (less
        the room left for the reply); a prefix too long for one request is summarised
        in chunks.
        """
        budget = summary_budget(window, self.settings.sampling.get("max_tokens"))
        planner = SummaryPlanner(
            plan, focus, self.settings.elide_bytes, budget, conversation.system_message()
        )
        async with self.host.progress("seri: compacting the conversation") as progress:
            progress.report(f"summarising {len(plan.evicted)} messages")
            while True:
                request = planner.next_request()
                if planner.requests > 1 or not planner.done:
                    progress.report(f"summarising in parts: part {planner.requests}")
                try:
                    fields = parse_summary(await summarise(request))
                except UnusableSummary as exc:
                    raise CompactionFailed(f"the summary was unusable: {exc}") from exc
                planner.update(fields)
                if planner.done:
                    break

            earlier = plan.previous.recap if plan.previous else None
            read, modified = evicted_paths(plan.evicted, self.normalize_path)
            read, modified = merge_paths(
                earlier.read if earlier else (),
                earlier.modified if earlier else (),
                read,
                modified,
            )
            recap = replace(
                Recap(
                    goal=fields["goal"],
                    progress=fields["progress"],
                    blockers=fields["blockers"],
                    next_steps=fields["next_steps"],
                    read=read,
                    modified=modified,
                ),
                evicted=len(plan.evicted) + (earlier.evicted if earlier else 0),
                tool_calls=sum(len(m.tool_calls) for m in plan.evicted)
                + (earlier.tool_calls if earlier else 0),
            )
            recap_message = Message(role="user", content=recap.render(), kind="recap", recap=recap)
            replaced_chars = sum(m.chars for m in plan.replaced)
            if recap_message.chars >= replaced_chars:
                raise CompactionFailed(
                    "the recap would not make the history smaller "
                    f"({recap_message.chars} characters for {replaced_chars})"
                )
            faults.crash_point("compaction.before_commit")
            messages_before = len(conversation.messages)
            tokens_before = conversation.estimate_tokens()
            # The numbers the notice gives, kept with the recap for the chat's divider
            # (after: the local count, as the billed one no longer applies).
            chars_after = conversation.frozen.chars + conversation.chars - replaced_chars
            recap = replace(
                recap,
                tokens_before=tokens_before,
                tokens_after=tokens_for_chars(chars_after + recap_message.chars),
            )
            recap_message = replace(recap_message, recap=recap)
            try:
                stored = await conversation.replace_prefix(plan.replaced, recap_message)
            except STORE_ERRORS as exc:
                # Rolled back: the history is as it was, in the store and in memory.
                raise CompactionFailed(
                    f"the recap could not be stored ({str(exc).rstrip('.')})"
                ) from exc
            progress.report("done", 100)
        try:
            await conversation.record_event(
                "compaction",
                {
                    "trigger": trigger,
                    "outcome": "compacted",
                    "evicted": len(plan.evicted),
                    "focus": focus,
                    "charsBefore": replaced_chars,
                    "recapChars": recap_message.chars,
                    "summaryRequests": planner.requests,
                    "elidedTexts": planner.elided,
                    # The prompts the conversation kept: where the record of what the
                    # recap replaced ends (`TrajectoryStore.before_compaction`).
                    "keptPrompts": sum(
                        1 for m in conversation.messages if m.role == "user" and m.kind is None
                    ),
                },
            )
        except Exception as exc:
            # The compaction is committed: failing to record it does not undo it.
            logger.warning("Recording a compaction failed", exc_info=True)
            self.host.log(
                "warning",
                f"The conversation was compacted, but recording the compaction failed: {exc}",
            )
        notice = Compacted(
            conversation.session_id,
            trigger,
            len(plan.evicted),
            messages_before=messages_before,
            messages_after=len(conversation.messages),
            tokens_before=tokens_before,
            tokens_after=conversation.estimate_tokens(),
            read=recap.read,
            modified=recap.modified,
            recap_id=stored.id,
        )
        self.host.emit(notice)
        return CompactionResult(True, len(plan.evicted), notice=notice)
