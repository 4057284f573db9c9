"""MCP servers' tools as the agent's tools: `mcp__<server>__<tool>`.

Names are made to fit the providers' `^[a-zA-Z0-9_-]{1,64}$`: any other character
becomes `_`, and a name too long is cut and given a short hash of the full name, so it
stays the same from one session to the next. Two tools whose names come out the same
are told apart by a suffix, in the order of their original names (deterministic).

The list is sorted by name; the Toolbox offers it after the built-in tools, and a
session keeps the list it was given for its first turn (the cached prompt prefix never
changes under it).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from seri_lsp.agent.disk import MAX_READ_CHARS
from seri_lsp.agent.tools import ToolOutcome
from seri_lsp.mcp.manager import McpManager, McpTool

PREFIX = "mcp__"
MAX_NAME = 64
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_-]")


def _fit(name: str) -> str:
    clean = _NOT_ALLOWED.sub("_", name) or "_"
    if len(clean) <= MAX_NAME:
        return clean
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{clean[: MAX_NAME - 9]}_{digest}"


def tool_names(tools: Iterable[McpTool]) -> dict[str, McpTool]:
    """Each tool by the name the model sees, sorted by that name."""
    named: dict[str, McpTool] = {}
    ordered = sorted(tools, key=lambda tool: (tool.server, tool.name))
    for tool in ordered:
        name = _fit(f"{PREFIX}{tool.server}__{tool.name}")
        number = 2
        while name in named:
            suffix = f"_{number}"
            name = _fit(f"{PREFIX}{tool.server}__{tool.name}")[: MAX_NAME - len(suffix)] + suffix
            number += 1
        named[name] = tool
    return {name: named[name] for name in sorted(named)}


def cut_middle(text: str, limit: int = MAX_READ_CHARS) -> str:
    """`text` whole when it is within `limit` characters, else its head and tail with
    what was left out said between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    left_out = len(text) - 2 * half
    return (
        f"{text[:half]}\n[... {left_out:,} characters cut from the middle: "
        f"the result was {len(text):,} characters ...]\n{text[-half:]}"
    )


@dataclass(frozen=True)
class McpAgentTool:
    """One MCP tool as the Toolbox offers it (an external tool: name, schema, run)."""

    name: str
    tool: McpTool
    manager: McpManager

    @property
    def server(self) -> str:
        return self.tool.server

    @property
    def schema(self) -> dict[str, Any]:
        description = self.tool.description or f"The {self.tool.name} tool of {self.server}."
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": f"[MCP server {self.server}] {description}",
                "parameters": dict(self.tool.input_schema),
            },
        }

    async def run(self, args: Mapping[str, Any]) -> ToolOutcome:
        outcome = await self.manager.call(self.server, self.tool.name, args)
        return ToolOutcome(cut_middle(outcome.text), is_error=outcome.is_error)


def agent_tools(manager: McpManager) -> list[McpAgentTool]:
    """The tools of every ready server, as the agent is offered them (sorted)."""
    tools = [
        tool for state in manager.states.values() if state.status == "ready" for tool in state.tools
    ]
    return [McpAgentTool(name, tool, manager) for name, tool in tool_names(tools).items()]
