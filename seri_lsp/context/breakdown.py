"""What fills the context window: the local token estimate split by what it is made of.

The compaction trigger counts `ceil(chars / 4)` over the frozen system message and the
stored history (SPEC 4); here the same characters are split into parts: the built-in
system prompt, AGENTS.md, each always-on rule file and each memory file (as frozen at
open), then the recap, the glob-rule messages, the check results fed back, the user's
text, the assistant's text (thinking included), its tool calls (their arguments), and
the tool results by tool name. Each part's tokens are its share of that one count
(rounded where the running total crosses a token), so the parts add up to it exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from seri_lsp.context.prompt_files import PromptPart
from seri_lsp.store.messages import Message, tokens_for_chars

# How the conversation's parts are named, by kind (tool results are named by their tool).
_NAMES = {
    "recap": "recap",
    "globRules": "glob-rule messages",
    "checks": "check results",
    "user": "user text",
    "assistant": "assistant text",
    "toolCalls": "tool calls",
}
# Messages whose kind marks them as seri's, not the user's.
_USER_KINDS = {"recap": "recap", "rule": "globRules", "check": "checks"}


def history_parts(messages: Iterable[Message]) -> list[PromptPart]:
    """The history's parts: seri's messages, the user's text, the assistant's text and
    tool calls, then the tool results by tool name (alphabetically). Empty parts are left
    out. A result is named by the call it answers among the calls of the assistant
    message before it (`unknown` for one that answers none)."""
    sums = dict.fromkeys(_NAMES, 0)
    results: dict[str, int] = {}
    names: dict[str, str] = {}  # call id -> tool name, of the last assistant message
    for message in messages:
        if message.role == "tool":
            tool = names.get(message.tool_call_id or "", "unknown")
            results[tool] = results.get(tool, 0) + message.chars
        elif message.role == "assistant":
            text = len(message.content) + len(message.thinking or "")
            sums["assistant"] += text
            sums["toolCalls"] += message.chars - text
            names = {call.id: call.name for call in message.tool_calls}
        else:
            sums[_USER_KINDS.get(message.kind or "", "user")] += message.chars
    parts = [PromptPart(kind, _NAMES[kind], chars) for kind, chars in sums.items() if chars]
    parts += [PromptPart("toolResult", tool, results[tool]) for tool in sorted(results)]
    return parts


def apportion(parts: Sequence[PromptPart]) -> list[dict[str, Any]]:
    """The parts on the wire, `{kind, name, tokens}`, their tokens adding up to
    `tokens_for_chars` of their characters: each part gets the tokens its characters
    carry the running total across."""
    wire = []
    chars = 0
    for part in parts:
        before = tokens_for_chars(chars)
        chars += part.chars
        wire.append(
            {"kind": part.kind, "name": part.name, "tokens": tokens_for_chars(chars) - before}
        )
    return wire
