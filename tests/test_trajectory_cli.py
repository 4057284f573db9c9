"""Reading recordings from the terminal: `seri-lsp trajectory list|show|diff`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.agent_helpers import prompt
from tests.harness import command, seri, stop_server
from tests.scripted_provider import Calls, Error, ScriptedProvider, Text, usage
from tests.session_helpers import older_database
from tests.trajectory_helpers import SUMMARY, json_lines, recording


async def test_list_and_show_read_the_recordings(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    provider.script(
        Calls([("r", "read_file", {"path": "a.txt"})], usage=usage(100, 10)),
        Text("read it", usage=usage(150, 15)),
        Text("second session"),
    )
    client = await agent()
    await prompt(client, "read a.txt")
    first = await recording(client)
    await command(client, "seri.clear", {})
    await prompt(client, "hello")
    second = await recording(client)
    root = ["--profile-root", str(profile_root)]

    listed = seri("trajectory", "list", "--json", *root, cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)
    assert [e["id"] for e in entries] == [second["id"], first["id"]]  # newest first
    assert entries[1]["sessionId"] == first["sessionId"]
    assert entries[1]["startedAt"] == first["startedAt"]
    assert entries[1]["model"] == provider.model
    assert entries[1]["events"] == len(first["events"])
    text = seri("trajectory", "list", *root, cwd=workspace).stdout
    assert first["id"] in text and second["id"] in text and provider.model in text

    # JSON lines: the header, then the events in order. A unique prefix will do.
    shown = seri("trajectory", "show", first["id"][:8], "--json", *root, cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    header, *events = json_lines(shown.stdout)
    assert header == first["header"] and header["trajectoryId"] == first["id"]
    assert events == first["events"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    # A session id stands for its latest recording.
    by_session = seri("trajectory", "show", second["sessionId"], "--json", *root, cwd=workspace)
    assert json_lines(by_session.stdout)[0]["trajectoryId"] == second["id"]

    human = seri("trajectory", "show", first["id"], *root, cwd=workspace)
    assert f"Recording {first['id']} of session {first['sessionId']}" in human.stdout
    assert f"model {provider.model} at {provider.base_url}" in human.stdout
    assert "tool_call" in human.stdout and '"path": "a.txt"' in human.stdout
    assert "<builtin>/system.md" in human.stdout

    missing = seri("trajectory", "show", "nope", *root, cwd=workspace)
    assert missing.returncode == 1 and "No recording matches 'nope'" in missing.stderr
    only = seri(
        "trajectory", "list", "--json", "--session", first["sessionId"], *root, cwd=workspace
    )
    assert [e["id"] for e in json.loads(only.stdout)] == [first["id"]]


async def test_diff_compares_two_runs_with_different_knobs(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    agents = workspace / "AGENTS.md"
    agents.write_text("Version one.\n")
    (workspace / "a.txt").write_text("alpha\n" * 400)  # enough history to compact
    provider.script(
        Calls([("r", "read_file", {"path": "a.txt"})], usage=usage(100, 10)),
        Text("read it", usage=usage(200, 20)),
        Text("again", usage=usage(300, 30)),
        Text(SUMMARY, usage=usage(40, 4)),
    )
    one = await agent(
        provider_extra={
            "temperature": 0.2,
            "reasoningEffort": "low",
            "provider": {"order": ["anthropic"]},
            "keepTokens": 1,
        }
    )
    await prompt(one, "read a.txt")
    await prompt(one, "again")
    assert (await prompt(one, "/compact"))["compacted"] is True
    a = (await recording(one))["id"]
    await stop_server(one)

    agents.write_text("Version two.\n")
    provider.script(
        Error(503, {"error": {"message": "busy"}}),
        Calls(
            [
                ("o", "read_file", {"path": "../outside.txt"}),
                ("w", "write_file", {"path": "b.txt", "content": "b\n"}),
            ],
            usage=usage(50, 5),
        ),
        Text("done", usage=usage(60, 6)),
        Text("the lint failure is not mine", usage=usage(70, 7)),
    )
    two = await agent(
        provider_extra={"temperature": 0.8, "topK": 20, "reasoningEffort": "high", "keepTokens": 1},
        init_options={
            "resumeOnOpen": False,
            "maxTurns": 50,
            "checks": [{"name": "lint", "command": "exit 1"}],
            "permissions": {"write": "allow", "run": "allow"},
        },
    )
    assert (await prompt(two, "write b.txt"))["status"] == "failed"
    b = (await recording(two))["id"]
    await stop_server(two)

    result = seri(
        "trajectory", "diff", a, b, "--json", "--profile-root", str(profile_root), cwd=workspace
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["a"]["id"], report["b"]["id"]) == (a, b)
    differ = {d["field"]: (d["a"], d["b"]) for d in report["differences"]}
    assert differ["sampling.temperature"] == (0.2, 0.8)
    assert differ["sampling.topK"] == (None, 20)
    assert differ["reasoningEffort"] == ("low", "high")
    assert differ["providerPin"] == ({"order": ["anthropic"]}, None)
    assert differ["maxTurns"] == (500, 50)
    assert differ["permissions.run"] == ("ask", "allow")
    assert differ["checks"][0] == [] and differ["checks"][1][0]["name"] == "lint"
    old_hash, new_hash = differ[f"promptFiles.{agents}"]
    assert old_hash != new_hash and None not in (old_hash, new_hash)
    for same in ("model", "baseUrl", "keepTokens", "elideBytes", "sampling.topP"):
        assert same not in differ
    assert report["totals"]["a"] == {
        "tasks": 2,
        "turns": 3,
        "toolCalls": 1,
        "tokensIn": 640,
        "tokensOut": 64,
        "retries": 0,
        "denials": 0,
        "compactions": 1,
        "compactionFailures": 0,
        "checks": 0,
        "checkFailures": 0,
    }
    assert report["totals"]["b"] == {
        "tasks": 1,
        "turns": 3,
        "toolCalls": 2,
        "tokensIn": 180,
        "tokensOut": 18,
        "retries": 1,
        "denials": 1,
        "compactions": 0,
        "compactionFailures": 0,
        "checks": 1,
        "checkFailures": 1,
    }

    text = seri("trajectory", "diff", a, b, "--profile-root", str(profile_root), cwd=workspace)
    lines = text.stdout.splitlines()
    assert any(line.split() == ["temperature", "0.2", "0.8"] for line in lines), text.stdout
    assert any(line.split() == ["reasoningEffort", "low", "high"] for line in lines)
    assert any(line.split() == ["check", "failures", "0", "1", "*"] for line in lines)
    assert any(line.split() == ["retries", "0", "1", "*"] for line in lines)
    assert not any(line.split()[:1] == ["model"] for line in lines)
    assert "Totals:" in text.stdout and "Settings in force that differ:" in text.stdout
    [changed] = [line for line in lines if line.split()[:1] == ["AGENTS.md"]]
    assert changed.split()[1:] == [old_hash[:12], new_hash[:12]]


def test_session_events_of_an_earlier_release_become_legacy_recordings(
    profile_root: Path, workspace: Path
) -> None:
    # A seri.db as the release before recordings left it: migrations 1 to 4.
    conn = older_database(profile_root, 4)
    for session in ("s1", "s2"):
        conn.execute(
            "INSERT INTO sessions (id, project, title, created_at, updated_at)"
            " VALUES (?, ?, 'old', '2025-01-01T00:00:00.000000Z', '2025-01-01T00:00:00.000000Z')",
            (session, str(workspace)),
        )
    old_events = [
        ("s1", "opened", {"reason": "new"}, "2025-01-01T00:00:01.000000Z"),
        ("s2", "retry", {"attempt": 1, "status": 503}, "2025-01-02T00:00:00.000000Z"),
        ("s1", "usage", {"purpose": "turn", "inputTokens": 9}, "2025-01-01T00:00:02.000000Z"),
    ]
    for session, kind, data, at in old_events:
        conn.execute(
            "INSERT INTO session_events (session_id, kind, data, created_at) VALUES (?, ?, ?, ?)",
            (session, kind, json.dumps(data), at),
        )
    conn.commit()
    conn.close()

    root = ["--profile-root", str(profile_root)]
    listed = seri("trajectory", "list", "--json", *root, cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    assert sorted((e["sessionId"], e["events"]) for e in json.loads(listed.stdout)) == [
        ("s1", 2),
        ("s2", 1),
    ]
    shown = seri("trajectory", "show", "s1", "--json", *root, cwd=workspace)
    header, *events = json_lines(shown.stdout)
    assert header["legacy"] == "session_events" and header["sessionId"] == "s1"
    assert header["startedAt"] == "2025-01-01T00:00:01.000000Z"
    assert [(e["seq"], e["kind"], e["data"], e["createdAt"]) for e in events] == [
        (1, "opened", {"reason": "new"}, "2025-01-01T00:00:01.000000Z"),
        (2, "usage", {"purpose": "turn", "inputTokens": 9}, "2025-01-01T00:00:02.000000Z"),
    ]
    conn = sqlite3.connect(profile_root / "seri.db")
    try:  # moved, not copied; the emptied table stays for a seri still running
        assert conn.execute("SELECT COUNT(*) FROM session_events").fetchone() == (0,)
        newest = conn.execute("SELECT updated_at FROM trajectories WHERE session_id = 's1'")
        assert newest.fetchone() == ("2025-01-01T00:00:02.000000Z",)
    finally:
        conn.close()
