"""The turn budget: from the server argument, `/max-turns`, `seri.maxTurns`; subagents get 25."""

from __future__ import annotations

import subprocess
from pathlib import Path

from lsprotocol import types

from tests.agent_helpers import messages, prompt, tool_results
from tests.harness import cli_env, command, seri, shown_messages, stop_server, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text


def looping(count: int) -> list[Calls]:
    """Replies that never stop asking for tools."""
    return [Calls([(f"l{i}", "list_dir", {"path": "."})]) for i in range(count)]


async def test_the_server_argument_caps_turns_per_task(agent, provider: ScriptedProvider) -> None:
    provider.script(*looping(5))
    client = await agent(args=("--max-turns", "2"))
    result = await prompt(client, "loop")
    assert result["status"] == "max_turns" and result["turns"] == 2
    assert len(provider.requests) == 2
    # Every call still got its result, and the user was told.
    history = await messages(client)
    assert [m["role"] for m in history[-2:]] == ["assistant", "tool"]
    warning = await wait_until(lambda: shown_messages(client, types.MessageType.Warning))
    assert "/max-turns" in warning[0]
    assert (await command(client, "seri.session.get", {}))["session"]["maxTurns"] == 2
    ended = await wait_until(lambda: client.seri["seri/turnEnded"])
    assert ended[-1] == {
        "sessionId": result["sessionId"],
        "status": "max_turns",
        "turns": 2,
        "error": result["error"],
    }


async def test_slash_max_turns_holds_for_the_rest_of_the_session_and_persists(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(*looping(3), *looping(3))
    client = await agent()
    await command(client, "seri.session.new", {})
    assert (await prompt(client, "/max-turns 1"))["maxTurns"] == 1
    assert (await prompt(client, "loop"))["turns"] == 1
    assert (await prompt(client, "again"))["turns"] == 1
    await stop_server(client)
    again = await agent()  # resumes the same session
    assert (await command(again, "seri.session.get", {}))["session"]["maxTurns"] == 1
    assert (await prompt(again, "after restart"))["turns"] == 1


async def test_the_max_turns_command_sets_the_budget(agent, provider: ScriptedProvider) -> None:
    provider.script(*looping(4))
    client = await agent(args=("--max-turns", "10"))
    assert (await command(client, "seri.maxTurns", {"n": 3}))["maxTurns"] == 3
    result = await prompt(client, "loop")
    assert (result["status"], result["turns"]) == ("max_turns", 3)


async def test_a_subagent_runs_in_a_child_session_with_its_own_budget_of_25(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("t", "task", {"prompt": "Explore the repository"})]),
        *looping(25),
        Text("The subagent ran out; I will continue myself."),
    )
    client = await agent(init_options={"maxTurns": 2})
    result = await prompt(client, "delegate")
    assert result["status"] == "done" and result["turns"] == 2
    assert len(provider.requests) == 27

    child_requests = provider.requests[1:26]
    assert all("subagent of seri" in r["messages"][0]["content"] for r in child_requests)
    assert child_requests[0]["messages"][1] == {"role": "user", "content": "Explore the repository"}
    child_tools = [t["function"]["name"] for t in child_requests[0]["tools"]]
    assert "task" not in child_tools

    outcome = tool_results(await messages(client))["t"]
    assert outcome["isError"] and "budget of 25 turns" in outcome["content"]
    child_id = outcome["content"].split("(session ")[1].split(")")[0]
    child = await command(client, "seri.session.get", {"sessionId": child_id})
    assert sum(1 for m in child["messages"] if m["role"] == "assistant") == 25
    # Child sessions are linked to their parent, not listed as conversations of their own.
    listed = await command(client, "seri.session.list", {})
    assert [s["id"] for s in listed["sessions"]] == [result["sessionId"]]


async def test_a_subagent_answer_is_the_tool_result(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "config.toml").write_text("port = 8080\n")
    provider.script(
        Calls([("t", "task", {"prompt": "Find the port"})]),
        Calls([("r", "read_file", {"path": "config.toml"})]),
        Text("The port is 8080 (config.toml)."),
        Text("Port 8080."),
    )
    client = await agent()
    await prompt(client, "what port?")
    outcome = tool_results(await messages(client))["t"]
    assert outcome["content"] == "The port is 8080 (config.toml)."
    assert not outcome.get("isError")
    view = await command(client, "seri.session.get", {})
    assert view["paths"]["read"] == ["config.toml"]


def run_cli(
    provider: ScriptedProvider, profile_root: Path, workspace: Path, *args: str
) -> subprocess.CompletedProcess:
    env = cli_env(provider, profile_root)
    return seri("run", *args, cwd=workspace, env=env)


def test_run_exits_0_when_the_task_is_done(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    (workspace / "hello.txt").write_text("hi there\n")
    provider.script(Calls([("r", "read_file", {"path": "hello.txt"})]), Text("It says hi there."))
    result = run_cli(provider, profile_root, workspace, "What does hello.txt say?")
    assert result.returncode == 0, result.stderr
    assert "What does hello.txt say?" in result.stdout
    assert "read_file" in result.stdout and "It says hi there." in result.stdout


def test_run_exits_1_when_the_turn_budget_runs_out(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    provider.script(*looping(3))
    result = run_cli(provider, profile_root, workspace, "loop", "--max-turns", "2")
    assert result.returncode == 1
    assert "max_turns" in result.stderr
    assert len(provider.requests) == 2


def test_run_exits_1_when_the_provider_fails(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    from tests.scripted_provider import Error

    provider.script(Error(401, {"error": {"message": "bad key"}}))
    result = run_cli(provider, profile_root, workspace, "hello")
    assert result.returncode == 1
    assert "bad key" in result.stderr


def test_run_continue_and_resume_reuse_a_session(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    provider.script(Text("one"), Text("two"), Text("three"))
    assert run_cli(provider, profile_root, workspace, "first").returncode == 0
    assert run_cli(provider, profile_root, workspace, "second", "--continue").returncode == 0
    sent = provider.requests[1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["first", "one", "second"]
    session_line = run_cli(provider, profile_root, workspace, "--resume", "nope", "x")
    assert session_line.returncode == 1 and "Unknown session id 'nope'" in session_line.stderr
