"""MCP server configuration: `.mcp.json`'s shape, variables, the three places and their
order, and bad entries reported by name while the others are kept. Real files in a temp
workspace and profile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from seri_lsp.mcp.config import (
    HttpServer,
    Origin,
    StdioServer,
    expand,
    load_servers,
    parse_servers,
)
from seri_lsp.settings import load_settings


def write(path: Path, servers: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")


def test_variables_are_expanded_with_defaults_and_unset_ones_reported() -> None:
    missing: list[str] = []
    env = {"HOME": "/home/u", "EMPTY": ""}
    assert expand("${HOME}/x", env, missing) == "/home/u/x"
    assert expand("${NOPE:-fallback}", env, missing) == "fallback"
    assert expand("${EMPTY:-used}", env, missing) == "used"
    assert expand("a${NOPE}b", env, missing) == "ab"
    assert expand("$HOME and ${1BAD}", env, missing) == "$HOME and ${1BAD}"
    assert missing == ["NOPE"]


def test_stdio_and_http_entries_are_read_with_their_optional_parts() -> None:
    problems: list[str] = []
    servers = parse_servers(
        {
            "git": {"command": "uvx", "args": ["mcp-server-git", "--repository", "${REPO}"]},
            "db": {
                "type": "stdio",
                "command": "db-mcp",
                "env": {"TOKEN": "${TOKEN:-none}"},
                "cwd": "/srv",
            },
            "tracker": {
                "type": "http",
                "url": "https://mcp.example.com/mcp",
                "headers": {"Authorization": "Bearer ${KEY}"},
            },
        },
        Origin.PROFILE,
        "mcp.json",
        problems,
        env={"REPO": "/r", "KEY": "k"},
    )
    assert problems == []
    assert servers["git"].spec == StdioServer("uvx", ("mcp-server-git", "--repository", "/r"))
    assert servers["git"].spec.display() == "uvx mcp-server-git --repository /r"
    assert servers["db"].spec == StdioServer("db-mcp", (), {"TOKEN": "none"}, "/srv")
    assert servers["tracker"].spec == HttpServer(
        "https://mcp.example.com/mcp", {"Authorization": "Bearer k"}
    )
    assert servers["tracker"].spec.transport == "http"
    assert servers["tracker"].origin is Origin.PROFILE


def test_a_wrong_entry_is_reported_by_name_with_what_is_wrong_and_the_others_kept() -> None:
    problems: list[str] = []
    servers = parse_servers(
        {
            "good": {"command": "ok"},
            "nocommand": {"args": ["x"]},
            "badargs": {"command": "x", "args": "one two"},
            "badenv": {"command": "x", "env": {"A": 1}},
            "typo": {"command": "x", "argz": []},
            "sse": {"type": "sse", "url": "https://x"},
            "ftp": {"type": "http", "url": "ftp://x"},
            "notobject": "uvx thing",
        },
        Origin.WORKSPACE,
        "/w/.mcp.json",
        problems,
        env={},
    )
    assert list(servers) == ["good"]
    text = "\n".join(problems)
    assert "'nocommand' in /w/.mcp.json: command must be a non-empty string" in text
    assert "'badargs' in /w/.mcp.json: args must be a list of strings" in text
    assert "'badenv' in /w/.mcp.json: env must be an object of strings" in text
    assert "'typo' in /w/.mcp.json: unknown keys for a stdio server: argz" in text
    assert "'sse'" in text and "not supported" in text
    assert "'ftp'" in text and "http:// or https://" in text
    assert "'notobject' in /w/.mcp.json: must be an object, got str" in text
    assert len(problems) == 7


def test_three_places_later_ones_adding_and_winning_on_a_shared_name(tmp_path: Path) -> None:
    workspace, profile = tmp_path / "w", tmp_path / "p"
    write(workspace / ".mcp.json", {"a": {"command": "from-ws"}, "b": {"command": "ws-b"}})
    write(profile / "mcp.json", {"b": {"command": "profile-b"}, "c": {"command": "p-c"}})
    setting = {"c": {"type": "http", "url": "http://127.0.0.1:1/mcp"}, "d": {"command": "s"}}
    servers, problems = load_servers(workspace, profile, setting, env={})
    assert problems == []
    assert [(s.name, s.origin, s.spec.display()) for s in servers] == [
        ("a", Origin.WORKSPACE, "from-ws"),
        ("b", Origin.PROFILE, "profile-b"),
        ("c", Origin.SETTINGS, "http://127.0.0.1:1/mcp"),
        ("d", Origin.SETTINGS, "s"),
    ]
    assert servers[0].source == str(workspace / ".mcp.json")


def test_unreadable_or_wrong_files_are_reported_and_the_other_places_still_used(
    tmp_path: Path,
) -> None:
    workspace, profile = tmp_path / "w", tmp_path / "p"
    workspace.mkdir()
    profile.mkdir()
    (workspace / ".mcp.json").write_text("{not json", encoding="utf-8")
    write(profile / "mcp.json", ["not", "an", "object"])
    servers, problems = load_servers(workspace, profile, {"s": {"command": "x"}}, env={})
    assert [s.name for s in servers] == ["s"]
    assert len(problems) == 2
    assert str(workspace / ".mcp.json") in problems[0]
    assert "mcpServers in " + str(profile / "mcp.json") in problems[1]
    # No file at all is no problem.
    assert load_servers(tmp_path / "none", tmp_path / "none", None, env={}) == ([], [])


def test_the_settings_carry_mcp_servers_timeouts_and_permissions(tmp_path: Path) -> None:
    settings, problems = load_settings(
        tmp_path,
        {
            "mcpServers": {"t": {"command": "x"}},
            "mcp": {"startupTimeout": 3, "toolTimeout": 7.5},
            "permissions": {"mcp": "deny", "mcpTools": {"git": "allow", "git__push": "maybe"}},
        },
        env={},
    )
    assert settings.mcp_servers == {"t": {"command": "x"}}
    assert (settings.mcp_startup_timeout, settings.mcp_tool_timeout) == (3, 7.5)
    assert settings.mcp_permission == "deny"
    assert settings.mcp_tool_permissions == {"git": "allow"}
    assert problems == [
        "Setting permissions.mcpTools.git__push must be one of allow, ask, deny, "
        "got 'maybe'; ignored."
    ]
    defaults, _ = load_settings(tmp_path / "empty", {}, env={})
    assert (defaults.mcp_startup_timeout, defaults.mcp_tool_timeout) == (15.0, 120.0)
    assert defaults.mcp_permission == "ask" and defaults.mcp_servers is None


def test_the_server_and_the_config_reader_never_import_the_mcp_sdk() -> None:
    """The SDK costs about a second and 40 MB (docs/performance.md): it is imported
    only when a server is started, never by the language server's own start-up."""
    code = (
        "import sys, seri_lsp.cli, seri_lsp.lsp.server, seri_lsp.engine, seri_lsp.mcp.config; "
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
