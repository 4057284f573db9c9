"""Recordings (trajectories) end to end: the header, every kind of event, elision.

Each test drives the real server against the scripted provider and reads the recording
back with `seri.trajectory.get` (and, where the storage itself is the point, straight
from seri.db).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

import seri_lsp
from tests.agent_helpers import messages, prompt, tool_results
from tests.harness import command
from tests.scripted_provider import Calls, Error, ScriptedProvider, Text, usage
from tests.trajectory_helpers import SUMMARY, kinds, of_kind, recording, rows

KNOBS = {
    "temperature": 0.3,
    "topP": 0.9,
    "topK": 40,
    "minP": 0.05,
    "maxTokens": 2048,
    "seed": 7,
    "frequencyPenalty": 0.1,
    "presencePenalty": 0.2,
    "repetitionPenalty": 1.1,
    "stop": ["END"],
}


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_text(encoding="utf-8").encode("utf-8")).hexdigest()


async def test_the_header_holds_the_settings_in_force(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    agents = workspace / "AGENTS.md"
    agents.write_text("Answer briefly.\n")
    (workspace / ".seri" / "rules").mkdir(parents=True)
    project_rule = workspace / ".seri" / "rules" / "tests.md"
    project_rule.write_text("Run the tests.\n")
    project_memory = workspace / ".seri" / "memory.md"
    project_memory.write_text("- the project uses tabs\n")
    profile = profile_root.resolve()
    (profile / "rules").mkdir(parents=True)
    own_rule = profile / "rules" / "style.md"
    own_rule.write_text("No docstrings.\n")
    own_memory = profile / "memory.md"
    own_memory.write_text("- likes tea\n")
    pin = {"order": ["anthropic", "google-vertex"], "allow_fallbacks": False}
    host = provider.base_url.removeprefix("http://")
    client = await agent(
        provider_extra={
            **KNOBS,
            "baseUrl": f"http://alice:s3cret@{host}?api_key=sk-123&region=eu&X-Token=t",
            "reasoningEffort": "high",
            "provider": pin,
            "contextWindow": 64000,
            "keepTokens": 3000,
            "elideBytes": 4096,
        },
        init_options={"maxTurns": 77, "permissions": {"write": "allow", "run": "deny"}},
    )
    session = (await command(client, "seri.session.new", {}))["session"]

    rec = await recording(client)
    header = rec["header"]
    assert rec["sessionId"] == session["id"] and rec["recording"] is True
    assert header["seriVersion"] == seri_lsp.__version__
    assert header["sessionId"] == session["id"] and header["project"] == str(workspace)
    assert header["model"] == provider.model
    # No credentials: neither the user:password nor the key-like query parameters.
    assert header["baseUrl"] == f"http://{host}?region=eu"
    assert header["sampling"] == KNOBS
    assert header["providerPin"] == pin
    assert header["reasoningEffort"] == "high"
    assert header["contextWindow"] == 64000
    assert header["keepTokens"] == 3000 and header["elideBytes"] == 4096
    assert header["maxTurns"] == 77
    assert header["permissions"] == {"write": "allow", "run": "deny"}
    files = header["promptFiles"]
    assert "<builtin>/system.md" in files
    summarizer = Path(seri_lsp.__file__).parent / "context" / "prompts" / "summarizer.md"
    assert files["<builtin>/summarizer.md"] == sha(summarizer)
    for path in (agents, project_rule, project_memory, own_rule, own_memory):
        assert files[str(path)] == sha(path), path
    assert header["startedAt"] == rec["startedAt"]
    stored = rows(profile_root, "SELECT header FROM trajectories WHERE id = ?", (rec["id"],))
    assert "s3cret" not in stored[0][0] and "sk-123" not in stored[0][0]


async def test_unset_knobs_are_named_as_null_and_the_window_is_filled_in_when_known(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    await command(client, "seri.session.new", {})
    header = (await recording(client))["header"]
    assert header["sampling"] == {name: None for name in KNOBS}
    assert header["providerPin"] is None and header["reasoningEffort"] is None
    assert (header["keepTokens"], header["elideBytes"], header["maxTurns"]) == (20000, 8192, 500)
    # Not configured: the provider's model list says, asked before the first model call.
    assert header["contextWindow"] is None
    provider.script(Text("hi"))
    await prompt(client, "hello")
    assert (await recording(client))["header"]["contextWindow"] == provider.context_length


async def test_every_kind_of_event_is_recorded_in_order(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    provider.script(
        Error(503, {"error": {"message": "overloaded"}}),
        Calls(
            [
                ("r", "read_file", {"path": "a.txt"}),
                ("w", "write_file", {"path": "new.txt", "content": "n\n"}),
                ("e", "edit", {"path": "a.txt", "old_text": "alpha", "new_text": "beta"}),
                ("f", "edit", {"path": "a.txt", "old_text": "missing", "new_text": "x"}),
                ("o", "read_file", {"path": "../outside.txt"}),
            ],
            usage=usage(500, 20),
        ),
        Text("done", usage=usage(700, 5)),
        Error(400, {"error": {"message": "bad request: unknown field"}}),
        Text("this is not a summary"),
        Text(SUMMARY, usage=usage(300, 30)),
    )
    client = await agent(provider_extra={"keepTokens": 1})
    assert (await prompt(client, "change a.txt"))["status"] == "done"
    assert (await prompt(client, "again"))["status"] == "failed"
    await prompt(client, "/max-turns 9")
    assert (await prompt(client, "/compact"))["compacted"] is False
    assert (await prompt(client, "/compact"))["compacted"] is True

    rec = await recording(client)
    assert [event["seq"] for event in rec["events"]] == list(range(1, len(rec["events"]) + 1))
    assert kinds(rec) == [
        "opened",
        "task_started",
        "retry",
        "usage",
        "tool_call", "tool_result",
        "tool_call", "tool_result", "edit",
        "tool_call", "tool_result", "edit",
        "tool_call", "tool_result", "edit",
        "tool_call", "tool_result", "denial",
        "usage",
        "task_ended",
        "checkpoint",
        "task_started",
        "task_ended",
        "checkpoint",
        "budget",
        "compaction_failed",
        "usage",
        "compaction",
    ]  # fmt: skip
    assert of_kind(rec, "task_started") == [{"prompt": "change a.txt"}, {"prompt": "again"}]
    [retry] = of_kind(rec, "retry")
    assert (retry["attempt"], retry["status"]) == (1, 503) and retry["delay"] >= 0
    calls = of_kind(rec, "tool_call")
    assert calls[0] == {"id": "r", "name": "read_file", "arguments": {"path": "a.txt"}}
    assert calls[2]["arguments"] == {"path": "a.txt", "old_text": "alpha", "new_text": "beta"}
    results = {r["id"]: r for r in of_kind(rec, "tool_result")}
    assert results["r"] == {"id": "r", "name": "read_file", "content": "alpha\n", "isError": False}
    assert results["f"]["isError"] is True and results["o"]["isError"] is True
    created, edited, failed = of_kind(rec, "edit")
    assert created == {
        "tool": "write_file",
        "path": "new.txt",
        "outcome": "applied",
        "via": "disk",
        "created": True,
    }
    assert (edited["path"], edited["outcome"], edited["created"]) == ("a.txt", "applied", False)
    assert edited["via"] == "editor+disk"  # VS Code applies the edit, and it is saved
    assert failed["outcome"] == "failed" and failed["path"] == "a.txt"
    assert "old_text was not found" in failed["reason"]
    [denial] = of_kind(rec, "denial")
    assert denial["tool"] == "read_file" and denial["path"] == "../outside.txt"
    assert "outside the workspace" in denial["reason"]
    assert of_kind(rec, "usage") == [
        {"purpose": "turn", "inputTokens": 500, "outputTokens": 20},
        {"purpose": "turn", "inputTokens": 700, "outputTokens": 5},
        {"purpose": "summary", "inputTokens": 300, "outputTokens": 30},
    ]
    done, failed_task = of_kind(rec, "task_ended")
    assert done == {"status": "done", "turns": 2}
    assert failed_task["status"] == "failed" and failed_task["turns"] == 0
    assert "bad request: unknown field" in failed_task["error"]
    # Each prompt's checkpoint, with the files its task changed (none for the failed one).
    first_checkpoint, second_checkpoint = of_kind(rec, "checkpoint")
    assert sorted(first_checkpoint["files"]) == ["a.txt", "new.txt"]
    assert second_checkpoint["files"] == []
    assert of_kind(rec, "budget") == [{"maxTurns": 9}]
    [not_compacted] = of_kind(rec, "compaction_failed")
    assert not_compacted["trigger"] == "manual" and not_compacted["outcome"] == "failed"
    assert "unusable" in not_compacted["error"]
    [compacted] = of_kind(rec, "compaction")
    assert compacted["trigger"] == "manual" and compacted["outcome"] == "compacted"
    assert compacted["evicted"] >= 4

    # The recording stands apart from the conversation: the evicted calls are gone from
    # the session, not from the recording.
    history = await messages(client)
    assert "r" not in tool_results(history)
    assert not any(m.get("tool_calls") for m in history)
    assert [c["id"] for c in calls] == ["r", "w", "e", "f", "o"]


async def test_a_subagent_gets_a_recording_of_its_own(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(
        Calls([("t", "task", {"prompt": "count the files"})]),
        Text("there are none"),
        Text("The subagent says there are none."),
    )
    client = await agent()
    await prompt(client, "delegate")
    parent = await recording(client)
    [call] = of_kind(parent, "tool_call")
    assert call["name"] == "task" and call["arguments"] == {"prompt": "count the files"}
    [result] = of_kind(parent, "tool_result")
    assert result["content"] == "there are none"

    [(child_id,)] = rows(
        profile_root, "SELECT id FROM sessions WHERE parent_id = ?", (parent["sessionId"],)
    )
    child = await recording(client, sessionId=child_id)
    assert child["id"] != parent["id"] and child["recording"] is False  # it has ended
    assert child["header"]["reason"] == "subagent"
    assert child["header"]["parentSessionId"] == parent["sessionId"]
    assert child["header"]["maxTurns"] == 25
    assert kinds(child) == ["opened", "task_started", "task_ended"]
    assert of_kind(child, "task_started") == [{"prompt": "count the files"}]


async def test_values_over_elide_bytes_are_stored_as_their_size(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "exact.txt").write_text("x" * 200)
    (workspace / "big.txt").write_text("z" * 201)
    long_path = "p" * 80 + ".txt"
    provider.script(
        Calls(
            [
                ("a", "read_file", {"path": "exact.txt"}),
                ("b", "write_file", {"path": "wide.txt", "content": "é" * 101}),
                ("c", "read_file", {"path": "big.txt"}),
                ("d", "write_file", {"path": long_path, "content": "q" * 150}),
            ]
        ),
        Text("ok"),
    )
    client = await agent(provider_extra={"elideBytes": 200})
    await prompt(client, "write things")

    rec = await recording(client)
    calls = {c["id"]: c for c in of_kind(rec, "tool_call")}
    results = {r["id"]: r for r in of_kind(rec, "tool_result")}
    # 200 bytes is not over the limit; 201 bytes, or 101 two-byte characters, are.
    assert results["a"]["content"] == "x" * 200
    assert results["c"]["content"] == {"elided": True, "originalBytes": 201}
    # The large member goes; the small one beside it stays.
    assert calls["b"]["arguments"] == {
        "path": "wide.txt",
        "content": {"elided": True, "originalBytes": 202},
    }
    # A value that is not a string goes by its JSON: each member is small, the whole is not.
    arguments = {"path": long_path, "content": "q" * 150}
    size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8"))
    assert size > 200
    assert calls["d"]["arguments"] == {"elided": True, "originalBytes": size}
    # Only the recording elides: the files and the conversation are whole.
    assert (workspace / "wide.txt").read_text() == "é" * 101
    assert tool_results(await messages(client))["c"]["content"] == "z" * 201
    stored = " ".join(row[0] for row in rows(profile_root, "SELECT data FROM trajectory_events"))
    assert "z" * 201 not in stored and "q" * 150 not in stored


async def test_each_session_opened_gets_its_own_recording_and_reopening_in_the_process_does_not(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await agent()
    first = (await command(client, "seri.session.new", {}))["session"]
    first_rec = (await recording(client))["id"]
    await command(client, "seri.session.continue", {})  # the same session, still open
    assert (await recording(client))["id"] == first_rec
    second = (await command(client, "seri.clear", {}))["session"]
    assert (await recording(client))["header"]["reason"] == "cleared"
    await command(client, "seri.session.resume", {"sessionId": first["id"]})
    again = await recording(client)
    assert again["id"] != first_rec and again["header"]["reason"] == "resumed"
    assert [r["id"] for r in again["recordings"]][-1] == first_rec  # newest first
    assert len(again["recordings"]) == 2
    by_session = dict(
        rows(profile_root, "SELECT session_id, COUNT(*) FROM trajectories GROUP BY session_id")
    )
    assert by_session == {first["id"]: 2, second["id"]: 1}


async def test_trajectory_get_by_session_or_recording_and_its_refusals(agent) -> None:
    client = await agent()
    assert await recording(client) == {
        "id": None,
        "sessionId": None,
        "recording": False,
        "header": None,
        "events": [],
        "recordings": [],
    }  # no session is open yet
    await command(client, "seri.session.new", {})
    rec = await recording(client)
    assert (await recording(client, trajectoryId=rec["id"][:8]))["id"] == rec["id"]
    assert (await recording(client, sessionId=rec["sessionId"][:8]))["id"] == rec["id"]
    for args, field in (
        ({"sessionId": "nope"}, "sessionId"),
        ({"trajectoryId": "nope"}, "trajectoryId"),
        ({"sessionId": 5}, "sessionId"),
    ):
        with pytest.raises(JsonRpcException) as caught:
            await recording(client, **args)
        assert caught.value.code == -32602 and caught.value.data == {"field": field}


async def test_a_rewind_leaves_the_recording_whole(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    provider.script(
        Calls([("e", "edit", {"path": "a.txt", "old_text": "alpha", "new_text": "beta"})]),
        Text("edited"),
    )
    client = await agent()
    await prompt(client, "change a.txt")
    before = await recording(client)
    result = await command(client, "seri.rewind", {})
    assert result["rewound"] == 1 and (workspace / "a.txt").read_text() == "alpha\n"
    after = await recording(client)
    # The rewound prompt left the conversation, not the recording: its call, its result
    # and its edit are still there, followed by the rewind itself.
    assert after["events"][: len(before["events"])] == before["events"]
    assert [c["id"] for c in of_kind(after, "tool_call")] == ["e"]
    assert of_kind(after, "edit")[0]["path"] == "a.txt"
    assert kinds(after)[-1] == "rewind"
    assert await messages(client) == []


async def test_a_subagents_header_names_the_sessions_chosen_model(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await agent()
    await command(client, "seri.session.model", {"model": "other/model"})
    provider.script(
        Calls([("t", "task", {"prompt": "count the files"})]),
        Text("there are none"),
        Text("The subagent says there are none."),
    )
    await prompt(client, "delegate")
    parent = await recording(client)
    # (The parent's recording began before the choice, which it records as an event.)
    [(child_id,)] = rows(
        profile_root, "SELECT id FROM sessions WHERE parent_id = ?", (parent["sessionId"],)
    )
    child = await recording(client, sessionId=child_id)
    assert child["header"]["model"] == "other/model"
    # The calls really went to that model, the subagent's included.
    assert {request["model"] for request in provider.requests} == {"other/model"}
