"""Checks: commands run in the workspace after a task that changed files, gated by
`permissions.run`, their failures fed back to the model, every result recorded."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.agent_helpers import messages, prompt
from tests.harness import (
    alive,
    command,
    open_document,
    shown_messages,
    wait_until,
    without_save_documents,
)
from tests.scripted_provider import Calls, Error, ScriptedProvider, Text
from tests.trajectory_helpers import of_kind, recording


def python_check(name: str, code: str, **extra: Any) -> dict[str, Any]:
    """A check run without a shell: this Python, with a script."""
    return {"name": name, "command": [sys.executable, "-c", code], **extra}


def write(path: str, content: str, call_id: str = "w") -> Calls:
    return Calls([(call_id, "write_file", {"path": path, "content": content})])


async def start(agent, checks: list[Any], run: str = "allow", **init: Any):
    options = {"checks": checks, "permissions": {"write": "allow", "run": run}, **init}
    return await agent(init_options=options)


def check_messages(history: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in history if m.get("kind") == "check"]


async def test_a_passing_check_is_recorded_and_changes_nothing_else(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(write("a.txt", "1\n"), Text("wrote it"), Text("no files this time"))
    client = await start(agent, [{"name": "lint", "command": "echo lint clean; test -f a.txt"}])
    result = await prompt(client, "write a.txt")
    assert (result["status"], result["turns"]) == ("done", 2)
    assert len(provider.requests) == 2
    [check] = of_kind(await recording(client), "check")
    assert check["name"] == "lint" and check["command"] == "echo lint clean; test -f a.txt"
    assert (check["passed"], check["exitCode"], check["timedOut"]) == (True, 0, False)
    assert check["output"] == "lint clean\n" and check["outputBytes"] == 11
    assert check["round"] == 1 and isinstance(check["durationMs"], int)
    assert check_messages(await messages(client)) == []
    # A task that changed no file runs no check.
    assert (await prompt(client, "just answer"))["status"] == "done"
    assert len(of_kind(await recording(client), "check")) == 1


async def test_a_failing_check_goes_back_to_the_model_and_the_task_goes_on(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    lint = python_check(
        "lint",
        "import pathlib, sys\n"
        "text = pathlib.Path('a.txt').read_text()\n"
        "print('lint: a.txt says', text.strip())\n"
        "sys.exit(0 if text == 'fixed\\n' else 3)\n",
    )
    provider.script(
        write("a.txt", "broken\n"),
        Text("done?"),
        write("a.txt", "fixed\n", "w2"),
        Text("fixed now"),
    )
    client = await start(agent, [lint])
    result = await prompt(client, "write a.txt")
    assert (result["status"], result["turns"]) == ("done", 4)
    # The model's next request carries the failure, as a user message.
    carried = provider.requests[2]["messages"][-1]
    assert carried["role"] == "user"
    assert "lint: a.txt says broken" in carried["content"]
    assert "exited with 3" in carried["content"] and "round 1 of 3" in carried["content"]
    history = await messages(client)
    assert check_messages(history) == [carried["content"]]
    first, second = of_kind(await recording(client), "check")
    assert (first["round"], first["passed"], first["exitCode"]) == (1, False, 3)
    assert first["output"] == "lint: a.txt says broken\n"
    assert (second["round"], second["passed"], second["exitCode"]) == (2, True, 0)


async def test_checks_that_keep_failing_end_the_task_after_three_rounds_with_bounded_output(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    noisy = python_check(
        "tests", "import sys\nsys.stdout.write('HEAD' + 'x' * 100000 + 'TAIL')\nsys.exit(1)\n"
    )
    provider.script(
        write("a.txt", "1\n"),
        Text("done"),
        write("a.txt", "2\n"),
        Text("done again"),
        write("a.txt", "3\n"),
        Text("done a third time"),
    )
    client = await start(agent, [noisy])
    result = await prompt(client, "go")
    assert result["status"] == "failed"
    assert "still fail after 3 rounds" in result["error"]
    assert "tests (exited with 1" in result["error"]
    assert len(provider.requests) == 6
    fed_back = check_messages(await messages(client))
    assert len(fed_back) == 3 and "last round" in fed_back[-1]
    for text in fed_back:
        assert "HEAD" in text and "TAIL" in text and "bytes of output omitted" in text
        assert len(text) < 8000
    checks = of_kind(await recording(client), "check")
    assert [c["round"] for c in checks] == [1, 2, 3]
    assert all(c["outputBytes"] == 100008 for c in checks)
    assert checks[0]["output"].startswith("HEAD") and checks[0]["output"].endswith("TAIL")
    [ended] = of_kind(await recording(client), "task_ended")
    assert ended["status"] == "failed" and "3 rounds" in ended["error"]


async def test_finishing_without_a_fix_ends_the_task_with_the_failure(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(write("a.txt", "1\n"), Text("done"), Text("That failure is not mine."))
    client = await start(agent, [{"name": "lint", "command": "echo E501 >&2; exit 2"}])
    result = await prompt(client, "go")
    assert result["status"] == "failed" and "lint (exited with 2" in result["error"]
    assert len(provider.requests) == 3
    [check] = of_kind(await recording(client), "check")
    assert check["output"] == "E501\n"  # stderr is kept with stdout


async def test_a_check_over_its_time_limit_is_killed_with_its_process_group(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    slow = {
        "name": "slow",
        "command": "sleep 60 & echo $! > bg.pid; echo $$ > sh.pid; echo started; sleep 60",
        "timeout": 1,
    }
    provider.script(write("a.txt", "1\n"), Text("done"), Text("it timed out"))
    client = await start(agent, [slow])
    began = time.monotonic()
    result = await prompt(client, "go")
    assert time.monotonic() - began < 20
    assert result["status"] == "failed" and "timed out" in result["error"]
    [check] = of_kind(await recording(client), "check")
    assert (check["timedOut"], check["exitCode"], check["passed"]) == (True, None, False)
    assert check["output"] == "started\n" and 1000 <= check["durationMs"] < 10000
    assert "timed out after" in provider.requests[2]["messages"][-1]["content"]
    for name in ("sh.pid", "bg.pid"):
        pid = int((workspace / name).read_text())
        await wait_until(lambda pid=pid: not alive(pid), timeout=5)


async def test_cancel_stops_a_running_check(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(write("a.txt", "1\n"), Text("done"))
    client = await start(
        agent, [{"name": "hang", "command": "echo $$ > sh.pid; sleep 60", "timeout": 120}]
    )
    running = asyncio.ensure_future(prompt(client, "go"))
    pid_file = workspace / "sh.pid"
    await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=15)
    began = time.monotonic()
    assert (await command(client, "seri.cancel", {}))["cancelled"] is True
    result = await asyncio.wait_for(running, 15)
    assert result["status"] == "cancelled"
    assert time.monotonic() - began < 10
    await wait_until(lambda: not alive(int(pid_file.read_text())), timeout=5)


async def test_running_checks_is_asked_once_per_session(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        write("a.txt", "1\n"), Text("one"), write("b.txt", "2\n"), Text("two"),
        write("c.txt", "3\n"), Text("three"),
    )  # fmt: skip
    client = await start(agent, [{"name": "lint", "command": "touch ran-$$"}], run="ask")
    client.answers.extend(["Allow for this session", "Deny"])
    await prompt(client, "first")
    await prompt(client, "second")
    asked = [r for r in client.message_requests if "run the checks" in r.message]
    assert len(asked) == 1
    assert [a.title for a in asked[0].actions] == ["Allow for this session", "Deny"]
    assert "lint (touch ran-$$)" in asked[0].message and str(workspace) in asked[0].message
    assert len(of_kind(await recording(client), "check")) == 2
    assert len(list(workspace.glob("ran-*"))) == 2

    await command(client, "seri.clear", {})  # a new session asks again
    assert (await prompt(client, "third"))["status"] == "done"
    asked = [r for r in client.message_requests if "run the checks" in r.message]
    assert len(asked) == 2
    rec = await recording(client)
    assert of_kind(rec, "check") == []
    [denial] = of_kind(rec, "denial")
    assert denial["tool"] == "checks" and "denied" in denial["reason"]
    assert len(list(workspace.glob("ran-*"))) == 2


async def test_permissions_run_deny_never_runs_a_check(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(write("a.txt", "1\n"), Text("done"))
    client = await start(agent, [{"name": "lint", "command": "touch ran"}], run="deny")
    assert (await prompt(client, "go"))["status"] == "done"
    assert not (workspace / "ran").exists()
    assert client.message_requests == []
    rec = await recording(client)
    assert of_kind(rec, "check") == []
    [denial] = of_kind(rec, "denial")
    assert denial["reason"] == "running commands is turned off (permissions.run is 'deny')"


async def test_bad_check_settings_are_reported_and_dropped(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    checks = [
        {"name": "ok", "command": "echo ok"},
        {"command": "echo nameless"},
        "echo not an object",
        {"name": "empty", "command": ""},
        {"name": "slow", "command": ["echo", "argv"], "timeout": -1},
    ]
    provider.script(write("a.txt", "1\n"), Text("done"))
    client = await start(agent, checks)
    await wait_until(
        lambda: len([m for m in client.messages if "checks[" in m.message]) >= 4, timeout=10
    )
    shown = shown_messages(client, types.MessageType.Warning)
    assert any("checks[1].name must be a non-empty string" in m for m in shown)
    assert any("checks[2] must be an object" in m for m in shown)
    assert any("checks[3].command (empty)" in m for m in shown)
    assert any("checks[4].timeout (slow)" in m and "using 120" in m for m in shown)
    await prompt(client, "go")
    ran = of_kind(await recording(client), "check")
    assert [(c["name"], c["output"]) for c in ran] == [("ok", "ok\n"), ("slow", "argv\n")]


async def test_a_failed_subagents_changes_are_checked(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        Calls([("t", "task", {"prompt": "write a.txt"})]),  # the parent
        write("a.txt", "1\n"),  # the subagent writes, then its provider call fails
        Error(400, {"error": {"message": "bad request"}}),
        Text("the subagent failed, but a.txt is there"),
    )
    client = await start(agent, [{"name": "lint", "command": "test -f a.txt"}])
    assert (await prompt(client, "delegate")).get("status") == "done"
    assert "The subagent failed" in provider.requests[-1]["messages"][-1]["content"]
    [check] = of_kind(await recording(client), "check")
    assert check["name"] == "lint" and check["passed"] is True


def edit_to_fixed(path: str) -> Calls:
    return Calls([("e", "edit", {"path": path, "old_text": "broken", "new_text": "fixed"})])


async def test_the_editor_saves_what_the_task_changed_in_it_before_the_checks(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("broken\n")
    provider.script(edit_to_fixed("a.txt"), Text("fixed it"))
    client = await start(agent, [{"name": "lint", "command": "grep -q fixed a.txt"}])
    uri = open_document(client, workspace / "a.txt", "broken\n")
    result = await prompt(client, "fix a.txt")
    assert (result["status"], result["turns"]) == ("done", 2)
    assert len(client.applied_edits) == 1  # the edit went to the open buffer
    assert client.save_requests == [[uri]]
    assert (workspace / "a.txt").read_text() == "fixed\n"
    [check] = of_kind(await recording(client), "check")
    assert check["passed"] is True


async def test_checks_name_the_files_an_editor_could_not_save(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("broken\n")
    provider.script(edit_to_fixed("a.txt"), Text("fixed it"), Text("it is fixed in the buffer"))
    client = await start(agent, [{"name": "lint", "command": "grep -q fixed a.txt"}])
    without_save_documents(client)
    open_document(client, workspace / "a.txt", "broken\n")
    result = await prompt(client, "fix a.txt")
    # The checks ran anyway, on the disk's older text, and both the model and the user
    # hear which file that was.
    assert result["status"] == "failed"
    assert (workspace / "a.txt").read_text() == "broken\n"
    [check] = of_kind(await recording(client), "check")
    assert check["passed"] is False
    [handed_back] = check_messages(await messages(client))
    assert "open in the editor with unsaved changes" in handed_back
    assert "older text on disk: a.txt." in handed_back
    shown = shown_messages(client, types.MessageType.Warning)
    assert any("unsaved changes" in m and "a.txt" in m for m in shown), shown


async def test_a_task_out_of_turns_gets_one_round_of_checks_for_the_user(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(write("a.txt", "1\n"))
    client = await start(agent, [{"name": "lint", "command": "echo E1; exit 1"}], maxTurns=1)
    result = await prompt(client, "write a.txt")
    assert result["status"] == "max_turns"
    # Recorded and shown, but not handed back: the model was asked only once.
    assert len(provider.requests) == 1
    assert check_messages(await messages(client)) == []
    [check] = of_kind(await recording(client), "check")
    assert (check["passed"], check["output"]) == (False, "E1\n")
    [ended] = of_kind(await recording(client), "task_ended")
    assert ended["status"] == "max_turns"
    shown = await wait_until(lambda: shown_messages(client, containing="its checks fail"))
    assert "The task stopped (max_turns)" in shown[0] and "lint (exited with 1" in shown[0]


async def test_a_subagents_changes_in_the_editor_are_saved_before_the_checks(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("broken\n")
    provider.script(
        Calls([("t", "task", {"prompt": "fix a.txt"})]),  # the parent
        edit_to_fixed("a.txt"),  # the subagent
        Text("child fixed it"),
        Text("parent done"),
    )
    client = await start(agent, [{"name": "lint", "command": "grep -q fixed a.txt"}])
    uri = open_document(client, workspace / "a.txt", "broken\n")
    assert (await prompt(client, "delegate"))["status"] == "done"
    assert client.save_requests == [[uri]]
    [check] = of_kind(await recording(client), "check")
    assert check["passed"] is True
