"""The agent loop end to end: real server, scripted provider on 127.0.0.1, real files."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.agent_helpers import events, messages, prompt, tool_results
from tests.harness import CLIENTS, command, stop_server, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text, usage


@pytest.mark.parametrize("client_name", CLIENTS)
async def test_a_multi_tool_task_reads_searches_and_edits_the_workspace(
    agent, provider: ScriptedProvider, workspace: Path, client_name: str
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("def foo():\n    return 1\n")
    (workspace / "README.md").write_text("call foo() to start\n")
    provider.script(
        Calls([("c1", "list_dir", {"path": "."}), ("c2", "grep", {"pattern": r"foo\(\)"})]),
        Calls([("c3", "read_file", {"path": "src/app.py"})]),
        Calls(
            [
                (
                    "c4",
                    "edit",
                    {"path": "src/app.py", "old_text": "def foo", "new_text": "def bar"},
                ),
                ("c5", "write_file", {"path": "NOTES.md", "content": "renamed foo to bar\n"}),
            ]
        ),
        Text("Renamed foo to bar in src/app.py and wrote NOTES.md.", usage=usage(900)),
    )
    client = await agent(client_name=client_name)
    result = await prompt(client, "Rename foo to bar")
    assert result["status"] == "done"
    assert result["turns"] == 4

    assert (workspace / "src" / "app.py").read_text() == "def bar():\n    return 1\n"
    assert (workspace / "NOTES.md").read_text() == "renamed foo to bar\n"

    history = await messages(client)
    assert [m["role"] for m in history] == [
        "user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool", "tool",
        "assistant",
    ]  # fmt: skip
    results = tool_results(history)
    assert results["c1"]["content"].splitlines() == ["README.md", "src/"]
    assert "README.md:1: call foo() to start" in results["c2"]["content"]
    assert "src/app.py:1: def foo():" in results["c2"]["content"]
    assert results["c3"]["content"] == "def foo():\n    return 1\n"
    assert not any(r.get("isError") for r in results.values())

    view = await command(client, "seri.session.get", {})
    assert view["paths"] == {"read": [], "modified": ["src/app.py", "NOTES.md"]}
    ended = await wait_until(lambda: client.seri["seri/turnEnded"])
    assert ended[-1]["status"] == "done" and ended[-1]["turns"] == 4
    stored = await wait_until(
        lambda: len(client.seri["seri/message"]) >= 10 and client.seri["seri/message"]
    )
    assert [n["message"]["role"] for n in stored][:3] == ["user", "assistant", "tool"]


async def test_every_tool_call_gets_exactly_one_result_answering_its_id(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        Calls(
            [
                ("a", "read_file", {"path": "missing.txt"}),
                ("b", "not_a_tool", {}),
                ("c", "read_file", "{not json"),
                ("d", "edit", {"path": "x.txt", "old_text": "", "new_text": "y"}),
            ]
        ),
        Text("ok"),
    )
    client = await agent()
    assert (await prompt(client, "try things"))["status"] == "done"
    history = await messages(client)
    results = tool_results(history)
    assert sorted(results) == ["a", "b", "c", "d"]
    assert all(r["isError"] for r in results.values())
    assert "does not exist" in results["a"]["content"]
    assert "no tool named 'not_a_tool'" in results["b"]["content"]
    assert "not a JSON object" in results["c"]["content"]
    # The next request carried every result, each right after its call.
    second = provider.requests[1]["messages"]
    assert [m["role"] for m in second[-5:]] == ["assistant", "tool", "tool", "tool", "tool"]


async def test_edit_refuses_missing_or_ambiguous_old_text(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("one two one\n")
    provider.script(
        Calls(
            [
                ("m", "edit", {"path": "a.txt", "old_text": "three", "new_text": "3"}),
                ("n", "edit", {"path": "a.txt", "old_text": "one", "new_text": "1"}),
            ]
        ),
        Text("could not"),
    )
    client = await agent()
    await prompt(client, "edit")
    results = tool_results(await messages(client))
    assert "old_text was not found in a.txt" in results["m"]["content"]
    assert "occurs 2 times in a.txt" in results["n"]["content"]
    assert (workspace / "a.txt").read_text() == "one two one\n"


async def test_request_bodies_carry_tools_pin_sampling_knobs_and_effort(
    agent, provider: ScriptedProvider
) -> None:
    pin = {"order": ["anthropic", "google-vertex"], "allow_fallbacks": False}
    provider.script(Text("hello"))
    client = await agent(
        provider_extra={
            "temperature": 0.3,
            "topP": 0.95,
            "maxTokens": 2048,
            "seed": 7,
            "reasoningEffort": "high",
            "provider": pin,
        }
    )
    await prompt(client, "hi")
    body = provider.requests[0]
    assert body["model"] == "test/model"
    assert body["provider"] == pin
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (
        0.3,
        0.95,
        2048,
        7,
    )
    # Not OpenRouter's host, so the OpenAI spelling of the effort knob.
    assert body["reasoning_effort"] == "high"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    names = [tool["function"]["name"] for tool in body["tools"]]
    assert names == [
        "read_file",
        "write_file",
        "edit",
        "list_dir",
        "grep",
        "task",
        "remember",
        "run",
    ]
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][1:] == [{"role": "user", "content": "hi"}]
    assert provider.headers[0]["Authorization"] == "Bearer test-key"


async def test_streamed_text_arrives_as_deltas_and_is_stored_whole(
    agent, provider: ScriptedProvider
) -> None:
    text = "Streaming replies arrive in small pieces, then as one stored message."
    provider.script(Text(text, chunk_size=5, thinking="Let me think.", usage=usage(321)))
    client = await agent()
    await prompt(client, "stream please")
    deltas = await wait_until(lambda: client.seri["seri/delta"])
    assert len(deltas) > 5
    assert "".join(d["text"] for d in deltas) == text
    history = await messages(client)
    assert history[-1]["content"] == text
    assert history[-1]["thinking"] == "Let me think."


async def test_non_streaming_mode_works_the_same(agent, provider: ScriptedProvider) -> None:
    provider.script(Calls([("c1", "list_dir", {"path": "."})]), Text("done", usage=usage(50)))
    client = await agent(provider_extra={"stream": False})
    assert (await prompt(client, "look"))["status"] == "done"
    assert provider.requests[0]["stream"] is False
    assert (await messages(client))[-1]["content"] == "done"
    assert client.seri["seri/delta"] == []


async def test_usage_is_stored_and_the_billed_count_survives_a_restart(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(Text("hi", usage=usage(4321, 12)))
    client = await agent()
    await prompt(client, "hello")
    view = await command(client, "seri.session.get", {})
    assert view["usage"]["estimateTokens"] == 4321
    recorded = events(profile_root, "usage")
    assert recorded[-1]["inputTokens"] == 4321 and recorded[-1]["outputTokens"] == 12
    await stop_server(client)
    again = await agent()
    view = await command(again, "seri.session.get", {})
    assert view["usage"]["estimateTokens"] == 4321


@pytest.mark.parametrize(
    "field",
    [
        "context_length",  # OpenRouter
        "max_input_tokens",  # LiteLLM
        "max_model_len",  # vLLM
    ],
)
async def test_context_window_comes_from_the_provider_model_list(
    agent, provider: ScriptedProvider, field: str
) -> None:
    provider.context_length = 64_000
    provider.window_field = field
    client = await agent()
    view = await command(client, "seri.session.get", {})
    assert view["usage"]["contextWindow"] == 64_000
    assert view["usage"]["contextWindowSource"] == "provider"
    await command(client, "seri.session.get", {})
    logged = [m.message for m in client.log_messages if "Context window" in m.message]
    assert logged == [
        f"Context window of test/model: 64,000 tokens, from the provider's model list ({field})."
    ]


async def test_the_context_window_setting_wins_else_the_default(
    agent, provider: ScriptedProvider
) -> None:
    configured = await agent(provider_extra={"contextWindow": 9000})
    usage = (await command(configured, "seri.session.get", {}))["usage"]
    assert (usage["contextWindow"], usage["contextWindowSource"]) == (9000, "setting")
    provider.context_length = None  # the list does not name the model
    unlisted = await agent()
    usage = (await command(unlisted, "seri.session.get", {}))["usage"]
    assert (usage["contextWindow"], usage["contextWindowSource"]) == (128_000, "default")
    assert [m.message for m in unlisted.log_messages if "Context window" in m.message] == [
        "Context window of test/model: 128,000 tokens, from the default (the provider's "
        "model list did not give one)."
    ]


async def test_an_unreachable_model_list_is_said_so_in_the_window_s_log_line(agent) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    client = await agent(provider_extra={"baseUrl": f"http://127.0.0.1:{port}/v1"})
    usage = (await command(client, "seri.session.get", {}))["usage"]
    assert usage["contextWindowSource"] == "default"
    [line] = [m.message for m in client.log_messages if "Context window" in m.message]
    assert "the provider's model list could not be read: it is asked again in 300 s" in line


async def test_a_turn_reports_progress(agent, provider: ScriptedProvider) -> None:
    provider.script(Calls([("c1", "list_dir", {"path": "."})]), Text("done"))
    client = await agent()
    await prompt(client, "go")
    working = [
        values
        for values in client.progress_reports.values()
        if values and getattr(values[0], "title", "") == "seri: working"
    ]
    assert working
    reports = [v.message for v in working[0] if v.kind == "report"]
    assert reports == ["turn 1", "turn 2"]
    assert working[0][-1].kind == "end"


async def test_slash_commands_in_the_prompt(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    first = (await command(client, "seri.session.new", {}))["session"]
    cleared = await prompt(client, "/clear")
    assert cleared["command"] == "clear" and cleared["session"]["id"] != first["id"]
    resumed = await prompt(client, f"/resume {first['id']}")
    assert resumed["session"]["id"] == first["id"]
    continued = await prompt(client, "/continue")
    assert continued["session"]["id"] == first["id"]
    budget = await prompt(client, "/max-turns 12")
    assert budget["maxTurns"] == 12
    # None of that reached the model.
    assert provider.requests == []
    provider.script(Text("a path, not a command"))
    assert (await prompt(client, "/src/app.py is broken"))["status"] == "done"
    assert provider.requests[0]["messages"][-1]["content"] == "/src/app.py is broken"


async def test_the_session_title_is_the_first_prompt(agent, provider: ScriptedProvider) -> None:
    provider.script(Text("ok"), Text("ok"))
    client = await agent()
    await prompt(client, "Fix the flaky test in tests/test_io.py")
    await prompt(client, "and another thing")
    session = (await command(client, "seri.session.get", {}))["session"]
    assert session["title"] == "Fix the flaky test in tests/test_io.py"
