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
from seri_lsp.events import Activity
from seri_lsp.host import Host, Question, ask_user, refusal
from seri_lsp.mcp.manager import McpManager, McpTool
from seri_lsp.settings import Permission

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


MCP_CHOICES = ("Allow", "Allow this tool for the session", "Deny")


class McpGate:
    """`permissions.mcp` with its `permissions.mcpTools` overrides (a tool's entry,
    `server__tool`, wins over its server's): allow, deny, or ask the user (the approval
    card with the tool and its arguments), remembering "for the session" per tool."""

    def __init__(
        self,
        host: Host,
        default: Permission = "ask",
        overrides: Mapping[str, Permission] | None = None,
    ) -> None:
        self.host = host
        self.default = default
        self.overrides = dict(overrides or {})
        self._allowed: set[tuple[str, str]] = set()  # (session, model-facing tool name)

    def policy(self, tool: McpTool) -> Permission:
        for key in (f"{tool.server}__{tool.name}", tool.server):
            if key in self.overrides:
                return self.overrides[key]
        return self.default

    async def check(
        self, name: str, tool: McpTool, args: Mapping[str, Any], session_id: str | None
    ) -> str | None:
        """None when the call may go, else why not (in words, for the model)."""
        policy = self.policy(tool)
        if policy == "allow" or (session_id or "", name) in self._allowed:
            return None
        if policy == "deny":
            return f"calls to {name} are denied by permissions.mcp"
        question = Question(
            kind="mcp",
            message=f"seri wants to call the MCP tool {tool.name} of server {tool.server}",
            choices=MCP_CHOICES,
            session_id=session_id,
            details={"server": tool.server, "tool": tool.name, "arguments": dict(args)},
        )
        resume = Activity(session_id, "tool", name) if session_id is not None else None
        answer = await ask_user(self.host, question, resume)
        if answer.choice == MCP_CHOICES[1]:
            self._allowed.add((session_id or "", name))
            return None
        if answer.choice == MCP_CHOICES[0]:
            return None
        return refusal(answer, "call")


@dataclass(frozen=True)
class McpAgentTool:
    """One MCP tool as the Toolbox offers it (an external tool: name, schema, run)."""

    name: str
    tool: McpTool
    manager: McpManager
    gate: McpGate | None = None
    session_id: str | None = None

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
        if self.gate is not None:
            refused = await self.gate.check(self.name, self.tool, args, self.session_id)
            if refused is not None:
                return ToolOutcome(
                    f"Denied: {refused}.", is_error=True, denial=refused, server=self.server
                )
        outcome = await self.manager.call(self.server, self.tool.name, args)
        return ToolOutcome(cut_middle(outcome.text), is_error=outcome.is_error, server=self.server)


def agent_tools(
    manager: McpManager, gate: McpGate | None = None, session_id: str | None = None
) -> list[McpAgentTool]:
    """The tools of every ready server, as the agent is offered them (sorted)."""
    tools = [
        tool for state in manager.states.values() if state.status == "ready" for tool in state.tools
    ]
    return [
        McpAgentTool(name, tool, manager, gate, session_id)
        for name, tool in tool_names(tools).items()
    ]
