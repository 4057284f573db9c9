"""The MCP servers an ACP client passes in `session/new` and `session/load`
(`mcpServers`): stdio `{name, command, args, env: [{name, value}]}` and http
`{type: "http", name, url, headers: [{name, value}]}`, as seri's server configurations.

They are started for that session as the configured servers are (the same naming,
timeouts, approvals, isolation), without asking for consent: the user configured them
in the client. An entry that cannot be used (`sse`, an empty name or command, a URL that
is not http) is reported as a problem and left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio, SseMcpServer

from seri_lsp.mcp.config import HttpServer, Origin, ServerConfig, StdioServer

SOURCE = "the ACP client"


def client_servers(raw: Sequence[Any] | None) -> tuple[list[ServerConfig], list[str]]:
    """The servers of `mcpServers` (a later one replacing a same-named earlier one),
    sorted by name, and what was wrong with those left out."""
    servers: dict[str, ServerConfig] = {}
    problems: list[str] = []
    for entry in raw or ():
        name = str(getattr(entry, "name", "") or "").strip()
        spec: StdioServer | HttpServer | str
        if isinstance(entry, McpServerStdio):
            if not entry.command.strip():
                spec = "its command is empty"
            else:
                spec = StdioServer(
                    command=entry.command,
                    args=tuple(entry.args),
                    env={v.name: v.value for v in entry.env} or None,
                )
        elif isinstance(entry, HttpMcpServer):
            if not entry.url.lower().startswith(("http://", "https://")):
                spec = f"its url must be an http:// or https:// URL, got {entry.url!r}"
            else:
                spec = HttpServer(
                    url=entry.url, headers={h.name: h.value for h in entry.headers} or None
                )
        elif isinstance(entry, SseMcpServer):
            spec = 'type "sse" is not supported (use "http": streamable HTTP)'
        else:
            spec = f"an entry of an unknown kind ({type(entry).__name__})"
        if isinstance(spec, str) or not name:
            why = spec if isinstance(spec, str) else "its name is empty"
            problems.append(f"MCP server {name!r} from {SOURCE}: {why}; it is not started.")
            continue
        servers[name] = ServerConfig(name, Origin.CLIENT, SOURCE, spec)
    return [servers[name] for name in sorted(servers)], problems
