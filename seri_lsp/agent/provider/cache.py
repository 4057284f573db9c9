"""Prompt-cache breakpoints: which models need them, and where a request carries them.

OpenAI, DeepSeek, Gemini and most others cache a request's prefix by themselves; for
them nothing is marked and the request's prefix stays byte-for-byte the prefix of the
one before. Anthropic's `claude` models (under any gateway's name) cache only up to a
`cache_control` breakpoint the request marks, so for them each request carries, in the
shape OpenAI-compatible gateways pass through (content as a list of text parts, the
marker on the last part):

- one on the last tool and one on the system message: the frozen prefix, the same on
  every call of the session (and the tools the same across sessions);
- one on the newest message, which writes the whole request. The next call's newest
  marker sits a few blocks after it, and Anthropic reads the longest prefix written
  earlier at a block boundary up to 20 blocks before a breakpoint: so each call reads
  what the call before it wrote.

Only that one marker moves from call to call; every earlier message is sent as it was
(a string content and the same text as one text part are the same prompt to the cache).
At most 3 markers go out; the provider refuses a 5th.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from seri_lsp.agent.provider.errors import ProviderHTTPError
from seri_lsp.settings import ProviderSettings

# The most breakpoints a provider accepts in one request.
MAX_BREAKPOINTS = 4
# A model id whose provider caches only what is marked: Anthropic's Claude, under any
# gateway's prefix (`anthropic/claude-…`, `claude-…`, `bedrock/us.anthropic.claude-…`,
# `vertex_ai/claude-…@…`, `openrouter/anthropic/claude-…`).
_MARKED_MODELS = re.compile(r"(?:^|[/.:])claude", re.IGNORECASE)


def needs_breakpoints(model: str) -> bool:
    """Whether the provider behind `model` caches only up to marked breakpoints."""
    return _MARKED_MODELS.search(model) is not None


def marks_wanted(settings: ProviderSettings) -> bool:
    """Whether requests carry breakpoints: `provider.promptCache` `on`, or `auto` and a
    model that needs them."""
    if settings.prompt_cache == "off":
        return False
    return settings.prompt_cache == "on" or needs_breakpoints(settings.model)


def marker(settings: ProviderSettings) -> dict[str, Any]:
    """The `cache_control` of every breakpoint, with the configured time to live."""
    return {"type": "ephemeral", "ttl": settings.cache_ttl}


def marked_tools(tools: Sequence[dict[str, Any]], mark: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools with the breakpoint on the last one."""
    *rest, last = tools
    return [*rest, {**last, "cache_control": mark}]


def marked_message(message: dict[str, Any], mark: dict[str, Any]) -> dict[str, Any] | None:
    """The message with its content as text parts and the breakpoint on the last part
    (its keys in the same order); None when it has no text to carry one (an assistant
    message that only calls tools)."""
    content = message.get("content")
    if isinstance(content, str) and content:
        parts: list[Any] = [{"type": "text", "text": content}]
    elif (
        isinstance(content, list)
        and content
        and isinstance(content[-1], dict)
        and content[-1].get("type") == "text"
    ):
        parts = [*content[:-1], dict(content[-1])]
    else:
        return None
    parts[-1]["cache_control"] = mark
    return {**message, "content": parts}


def refuses_markers(error: ProviderHTTPError) -> bool:
    """Whether a refusal is the provider's (or gateway's) objection to `cache_control`."""
    return error.status == 400 and "cache_control" in error.body
