"""The `run` tool: real commands through the real server, its results, bounds, time
limit, cancel, cwd boundary and `permissions.run`."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from seri_lsp.agent import process
from seri_lsp.agent.commands import (
    STREAM_BATCH_CHARS,
    model_output_bound,
    omitted_line,
    parse_args,
)
from tests.agent_helpers import prompt
from tests.harness import alive, command, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text
from tests.trajectory_helpers import of_kind, recording


def run(cmd: str, call_id: str = "r", **args: Any) -> Calls:
    return Calls([(call_id, "run", {"command": cmd, **args})])


async def start(agent, run_permission: str = "allow"):
    return await agent(init_options={"permissions": {"write": "allow", "run": run_permission}})


def result_of(provider: ScriptedProvider, request: int = 1) -> str:
    return provider.requests[request]["messages"][-1]["content"]


async def test_exit_codes_output_and_the_record(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        run("echo out; echo err >&2; exit 3"), Text("saw it"), run("true", "r2"), Text("ok")
    )
    client = await start(agent)
    assert (await prompt(client, "go"))["status"] == "done"
    assert result_of(provider) == "exit code 3\nout\nerr\n"
    assert (await prompt(client, "again"))["status"] == "done"
    assert result_of(provider, 3) == "exit code 0\n(no output)"
    first, second = of_kind(await recording(client), "command")
    assert (first["command"], first["cwd"], first["timeout"]) == (
        "echo out; echo err >&2; exit 3",
        ".",
        120,
    )
    assert (first["ended"], first["exitCode"], first["output"]) == ("exited", 3, "out\nerr\n")
    assert first["changed"] == [] and isinstance(first["durationMs"], int)
    assert second["exitCode"] == 0
    tools = provider.requests[0]["tools"]
    [schema] = [t for t in tools if t["function"]["name"] == "run"]
    assert "stdin is empty" in schema["function"]["description"]


async def test_stdin_is_at_end_and_the_env_is_not_interactive(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    script = (
        "cat; echo CI=$CI PAGER=$PAGER GIT_PAGER=$GIT_PAGER GTP=$GIT_TERMINAL_PROMPT "
        'NO_COLOR=$NO_COLOR TERM=$TERM; test -n "$PATH" && echo path'
    )
    provider.script(run(script, timeout=10), Text("ok"))
    client = await start(agent)
    began = time.monotonic()
    assert (await prompt(client, "go"))["status"] == "done"
    assert time.monotonic() - began < 8
    assert result_of(provider) == (
        "exit code 0\nCI=1 PAGER=cat GIT_PAGER=cat GTP=0 NO_COLOR=1 TERM=dumb\npath\n"
    )


async def test_a_timeout_kills_the_group_with_its_background_child_and_keeps_output(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        run("sleep 100 & echo $! > bg.pid; echo $$ > sh.pid; echo started; sleep 100", timeout=1),
        Text("it timed out"),
    )
    client = await start(agent)
    began = time.monotonic()
    assert (await prompt(client, "go"))["status"] == "done"
    assert time.monotonic() - began < 15
    assert result_of(provider) == (
        "timed out after 1 s\nstarted\n\n"
        "Files changed by the command (2):\n  created: bg.pid\n  created: sh.pid"
    )
    for name in ("sh.pid", "bg.pid"):
        pid = int((workspace / name).read_text())
        await wait_until(lambda pid=pid: not alive(pid), timeout=5)
    [record] = of_kind(await recording(client), "command")
    assert (record["ended"], record["exitCode"]) == ("timed out", None)


async def test_cancel_kills_the_command_and_its_background_child(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(run("sleep 100 & echo $! > bg.pid; sleep 100"), Text("never"))
    client = await start(agent)
    running = asyncio.ensure_future(prompt(client, "go"))
    pid_file = workspace / "bg.pid"
    await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=30)
    began = time.monotonic()
    assert (await command(client, "seri.cancel", {}))["cancelled"] is True
    assert (await asyncio.wait_for(running, 15))["status"] == "cancelled"
    assert time.monotonic() - began < 10
    await wait_until(lambda: not alive(int(pid_file.read_text())), timeout=5)


async def test_a_huge_output_is_bounded_for_the_model_and_recorded_with_its_size(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(run("seq 1 300000"), Text("long"))
    client = await start(agent)
    assert (await prompt(client, "go"))["status"] == "done"
    content = result_of(provider)
    assert content.startswith("exit code 0\n1\n2\n3\n") and content.endswith("\n300000\n")
    assert len(content) < 31_000
    assert " lines (" in content and "MB) omitted ...]" in content
    [record] = of_kind(await recording(client), "command")
    assert record["outputBytes"] == len("".join(f"{n}\n" for n in range(1, 300001)))


def test_the_omitted_line_and_the_clamped_timeout() -> None:
    assert omitted_line(2_000_000, 287_412) == "[... 287,412 lines (1.9 MB) omitted ...]"
    parsed = parse_args({"command": "x", "timeout": 5000})
    assert (parsed.timeout, parsed.clamped) == (600, True)
    assert parse_args({"command": "x"}).timeout == 120


async def test_a_clamped_timeout_is_said(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(run("echo hi", timeout=9999), Text("ok"))
    client = await start(agent)
    await prompt(client, "go")
    assert result_of(provider) == "exit code 0 (the timeout was clamped to 600 s)\nhi\n"


async def test_a_cwd_outside_the_workspace_is_refused_and_nothing_runs(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "sub").mkdir()
    provider.script(
        run("touch ran", cwd=".."), Text("refused"), run("pwd", "r2", cwd="sub"), Text("ok")
    )
    client = await start(agent)
    await prompt(client, "go")
    assert result_of(provider).startswith("not run (refused): the cwd is refused")
    assert not (workspace.parent / "ran").exists()
    await prompt(client, "again")
    assert result_of(provider, 3) == f"exit code 0\n{workspace / 'sub'}\n"


async def test_permissions_run_ask_allow_and_deny(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(run("touch one"), Text("a"), run("touch two", "r2"), Text("b"))
    client = await start(agent, "ask")
    client.answers.extend(["Allow once", "Deny"])
    await prompt(client, "first")
    assert (workspace / "one").exists()
    await prompt(client, "second")
    assert not (workspace / "two").exists()
    assert result_of(provider, 3).startswith("not run (denied): the user denied this command")
    asked = [r for r in client.message_requests if "touch" in r.message]
    assert len(asked) == 2 and "`touch one`" in asked[0].message
    rec = await recording(client)
    [denial] = of_kind(rec, "denial")
    assert denial["tool"] == "run" and "denied" in denial["reason"]
    assert [c["ended"] for c in of_kind(rec, "command")] == ["exited", "denied"]


async def test_permissions_run_deny_runs_nothing(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(run("touch ran"), Text("a"))
    client = await start(agent, "deny")
    await prompt(client, "go")
    assert not (workspace / "ran").exists() and client.message_requests == []
    assert "permissions.run is 'deny'" in result_of(provider)


def test_windows_argv_and_tree_kill(monkeypatch) -> None:
    monkeypatch.setattr(process, "is_windows", lambda: True)
    monkeypatch.setenv("COMSPEC", r"C:\Windows\system32\cmd.exe")
    assert process.shell_argv("dir") == [r"C:\Windows\system32\cmd.exe", "/d", "/s", "/c", "dir"]
    assert process.shell_argv("ls", "powershell")[0] == "powershell.exe"
    assert process.shell_argv("ls", "powershell")[-1] == "ls"
    assert process.kill_tree_argv(42) == ["taskkill", "/T", "/F", "/PID", "42"]
    monkeypatch.setattr(process, "is_windows", lambda: False)
    assert process.shell_argv("ls") == ["/bin/sh", "-c", "ls"]


async def test_output_streams_batched_while_it_runs(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    # 60 lines over about 1.5 s: far more writes than notifications.
    script = "i=0; while [ $i -lt 60 ]; do echo line $i; i=$((i+1)); sleep 0.025; done"
    provider.script(run(script), Text("ok"))
    client = await start(agent)
    await prompt(client, "go")
    streamed = client.seri["seri/toolOutput"]
    assert streamed and all(n["toolCallId"] == "r" for n in streamed)
    session_id = (await command(client, "seri.session.get", {}))["session"]["id"]
    assert {n["sessionId"] for n in streamed} == {session_id}
    assert "".join(n["text"] for n in streamed) == "".join(f"line {i}\n" for i in range(60))
    [record] = of_kind(await recording(client), "command")
    seconds = record["durationMs"] / 1000
    # At most ~10 a second (one more for the last flush).
    assert len(streamed) <= seconds * 10 + 2, (len(streamed), seconds)
    assert len(streamed) >= 3


async def test_a_flood_of_output_is_streamed_in_bounded_batches_newest_kept(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    # About 6.9 MB in well under a second: far more than a batch may carry.
    provider.script(run("seq 1 1000000"), Text("ok"))
    client = await start(agent)
    await prompt(client, "go")
    streamed = [n["text"] for n in client.seri["seri/toolOutput"]]
    assert all(len(text) <= STREAM_BATCH_CHARS + 60 for text in streamed)
    skipped = [text for text in streamed if text.startswith("[... ")]
    assert skipped and " characters not shown live ...]\n" in skipped[0]
    # What was left out is said, and the newest output always arrives.
    assert streamed[-1].endswith("999999\n1000000\n")
    shown = sum(
        len(text.split("\n", 1)[1]) if text.startswith("[... ") else len(text) for text in streamed
    )
    left_out = sum(int(t[5 : t.index(" characters")].replace(",", "")) for t in skipped)
    assert shown + left_out == len("".join(f"{n}\n" for n in range(1, 1000001)))


async def test_seri_tool_stop_stops_just_that_command(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        run("sleep 100 & echo $! > bg.pid; echo begun; sleep 100"), Text("the task went on")
    )
    client = await start(agent)
    running = asyncio.ensure_future(prompt(client, "go"))
    pid_file = workspace / "bg.pid"
    await wait_until(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=30)
    session_id = (await command(client, "seri.session.get", {}))["session"]["id"]
    stopped = await command(client, "seri.tool.stop", {"sessionId": session_id, "toolCallId": "r"})
    assert stopped == {"stopped": True}
    result = await asyncio.wait_for(running, 15)
    assert result["status"] == "done" and result["turns"] == 2
    assert result_of(provider) == (
        "stopped by the user\nbegun\n\nFiles changed by the command (1):\n  created: bg.pid"
    )
    await wait_until(lambda: not alive(int(pid_file.read_text())), timeout=5)
    [record] = of_kind(await recording(client), "command")
    assert record["ended"] == "stopped"


async def test_seri_tool_stop_of_an_unknown_call_is_a_clear_error(agent) -> None:
    client = await agent()
    try:
        await command(client, "seri.tool.stop", {"sessionId": "nope", "toolCallId": "x"})
    except Exception as exc:
        assert "No command is running as tool call 'x'" in str(exc)
    else:
        raise AssertionError("seri.tool.stop of an unknown call answered")


async def test_in_a_small_window_the_output_bound_is_an_eighth_of_it(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    # 16,000 tokens: 8,000 characters of output, so one command cannot fill the half of
    # the window compaction leaves (30,000 characters would be 7,500 tokens of it).
    provider.script(run("seq 1 300000"), Text("long"))
    options = {"permissions": {"write": "allow", "run": "allow"}}
    client = await agent(init_options=options, provider_extra={"contextWindow": 16_000})
    outcome = await prompt(client, "go")
    assert outcome["status"] == "done", outcome
    content = result_of(provider)
    assert content.startswith("exit code 0\n1\n2\n3\n") and content.endswith("\n300000\n")
    assert 8_000 < len(content) < 8_200
    assert model_output_bound(16_000) == 8_000
    assert model_output_bound(128_000) == model_output_bound(60_000) == 30_000
    assert model_output_bound(2_000) == 4_000


async def test_the_windows_tree_kill_runs_off_the_event_loop(monkeypatch) -> None:
    called: list[tuple[list[str], bool]] = []
    loop_thread = threading.current_thread()

    def taskkill(argv: list[str], **_: object) -> subprocess.CompletedProcess[bytes]:
        called.append((argv, threading.current_thread() is loop_thread))
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(process, "is_windows", lambda: True)
    monkeypatch.setattr(process.subprocess, "run", taskkill)
    child = await asyncio.create_subprocess_exec("sleep", "5")
    try:
        await process.stop_group(child, force=True)
    finally:
        child.kill()
        await child.wait()
    assert called == [(["taskkill", "/T", "/F", "/PID", str(child.pid)], False)]
