"""Where MCP servers are configured and what each entry is.

The shape is Claude Code's `.mcp.json`: `{"mcpServers": {name: entry}}`, an entry being
`{"command", "args"?, "env"?, "cwd"?}` (stdio; `"type": "stdio"` may be said) or
`{"type": "http", "url", "headers"?}` (streamable HTTP). Strings in an entry may name
environment variables as `${VAR}` or `${VAR:-default}`.

Three places are read, in this order, a later one adding servers and replacing a
same-named server of an earlier one: the workspace's `.mcp.json`, the profile's
`mcp.json`, the editor's `mcpServers` setting. An entry of the wrong shape is reported by
name with what is wrong, and the others are still used. Only the workspace's servers need
the user's consent before they start (`Origin.WORKSPACE`).
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seri_lsp.settings import read_config_file

WORKSPACE_FILE = ".mcp.json"
PROFILE_FILE = "mcp.json"

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class Origin(enum.Enum):
    """Where a server was configured, lowest place first."""

    WORKSPACE = "workspace"
    PROFILE = "profile"
    SETTINGS = "settings"
    CLIENT = "client"  # passed by an ACP client in session/new or session/load


@dataclass(frozen=True)
class StdioServer:
    """A server run as a child process, spoken to over its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    @property
    def transport(self) -> str:
        return "stdio"

    def display(self) -> str:
        """Its command line, for the consent question and `seri.info`."""
        return " ".join([self.command, *self.args])


@dataclass(frozen=True)
class HttpServer:
    """A server reached over streamable HTTP."""

    url: str
    headers: Mapping[str, str] | None = None

    @property
    def transport(self) -> str:
        return "http"

    def display(self) -> str:
        return self.url


@dataclass(frozen=True)
class ServerConfig:
    """One configured server: its name, where it was configured (`source`: the file,
    or the setting, in words) and how to reach it."""

    name: str
    origin: Origin
    source: str
    spec: StdioServer | HttpServer


def expand(text: str, env: Mapping[str, str], missing: list[str]) -> str:
    """`text` with `${VAR}` and `${VAR:-default}` replaced from `env`; a variable that
    is unset (and has no default) becomes "" and is added to `missing`."""

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = env.get(name)
        if value is not None and (value or default is None):
            return value
        if default is not None:
            return default
        missing.append(name)
        return ""

    return _VARIABLE.sub(replace, text)


def parse_servers(
    raw: Any,
    origin: Origin,
    source: str,
    problems: list[str],
    env: Mapping[str, str] = os.environ,
) -> dict[str, ServerConfig]:
    """The valid entries of an `mcpServers` object, by name; each bad one is reported
    (with its name and what is wrong) and left out."""
    if not isinstance(raw, dict):
        problems.append(
            f"mcpServers in {source} must be an object of servers by name, got "
            f"{type(raw).__name__}; its servers are not started."
        )
        return {}
    servers: dict[str, ServerConfig] = {}
    for name, entry in raw.items():
        missing: list[str] = []
        spec = _parse_entry(entry, env, missing)
        if isinstance(spec, str):
            problems.append(f"MCP server {name!r} in {source}: {spec}; it is not started.")
            continue
        if not name.strip():
            problems.append(f"An MCP server in {source} has an empty name; it is not started.")
            continue
        if missing:
            problems.append(
                f"MCP server {name!r} in {source} names unset environment variables "
                f"({', '.join(dict.fromkeys(missing))}); they were left empty."
            )
        servers[name] = ServerConfig(name, origin, source, spec)
    return servers


def _parse_entry(
    entry: Any, env: Mapping[str, str], missing: list[str]
) -> StdioServer | HttpServer | str:
    """The server an entry describes, or what is wrong with it (a phrase)."""
    if not isinstance(entry, dict):
        return f"must be an object, got {type(entry).__name__}"
    kind = entry.get("type", "http" if "url" in entry and "command" not in entry else "stdio")
    if kind in ("http", "streamable-http", "streamableHttp"):
        return _parse_http(entry, env, missing)
    if kind != "stdio":
        if kind == "sse":
            return 'type "sse" is not supported (use "http": streamable HTTP)'
        return f'type must be "stdio" or "http", got {kind!r}'
    unknown = sorted(set(entry) - {"type", "command", "args", "env", "cwd"})
    if unknown:
        return f"unknown keys for a stdio server: {', '.join(unknown)}"
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        return "command must be a non-empty string"
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        return "args must be a list of strings"
    variables = entry.get("env")
    if variables is not None and not _string_map(variables):
        return "env must be an object of strings"
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        return "cwd must be a string"
    return StdioServer(
        command=expand(command, env, missing),
        args=tuple(expand(arg, env, missing) for arg in args),
        env={k: expand(v, env, missing) for k, v in variables.items()} if variables else None,
        cwd=expand(cwd, env, missing) if cwd else None,
    )


def _parse_http(
    entry: dict[str, Any], env: Mapping[str, str], missing: list[str]
) -> HttpServer | str:
    unknown = sorted(set(entry) - {"type", "url", "headers"})
    if unknown:
        return f"unknown keys for an http server: {', '.join(unknown)}"
    url = entry.get("url")
    if not isinstance(url, str):
        return "url must be a string"
    url = expand(url, env, missing)
    if not url.lower().startswith(("http://", "https://")):
        return f"url must be an http:// or https:// URL, got {url!r}"
    headers = entry.get("headers")
    if headers is not None and not _string_map(headers):
        return "headers must be an object of strings"
    return HttpServer(
        url=url,
        headers={k: expand(v, env, missing) for k, v in headers.items()} if headers else None,
    )


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def read_file(
    path: Path, origin: Origin, problems: list[str], env: Mapping[str, str]
) -> dict[str, ServerConfig]:
    """The servers of one `.mcp.json`-shaped file ({} when there is none). It is read
    like `config.json`: only a regular file, of bounded size, a JSON object."""
    document, problem = read_config_file(path)
    if problem is not None:
        problems.append(f"{path} {problem.what}; its MCP servers are not started.")
        return {}
    if not document or "mcpServers" not in document:
        return {}
    return parse_servers(document["mcpServers"], origin, str(path), problems, env)


def load_servers(
    workspace: Path | None,
    profile_root: Path,
    setting: Mapping[str, Any] | None,
    env: Mapping[str, str] = os.environ,
    workspace_setting: Mapping[str, Any] | None = None,
) -> tuple[list[ServerConfig], list[str]]:
    """Every configured server, sorted by name, and the problems found on the way: the
    workspace's `.mcp.json`, then the workspace's own editor settings
    (`workspace_setting`, which come with the project as `.mcp.json` does), then the
    profile's `mcp.json`, then the user's `mcpServers` setting, a later place winning on
    a shared name."""
    problems: list[str] = []
    servers: dict[str, ServerConfig] = {}
    if workspace is not None:
        servers.update(read_file(workspace / WORKSPACE_FILE, Origin.WORKSPACE, problems, env))
    if workspace_setting is not None:
        servers.update(
            parse_servers(
                workspace_setting,
                Origin.WORKSPACE,
                "the workspace's mcpServers setting",
                problems,
                env,
            )
        )
    servers.update(read_file(profile_root / PROFILE_FILE, Origin.PROFILE, problems, env))
    if setting is not None:
        servers.update(
            parse_servers(setting, Origin.SETTINGS, "the mcpServers setting", problems, env)
        )
    return [servers[name] for name in sorted(servers)], problems
