"""Providers that misbehave: each misbehaviour ends the task with a message that says what
happened (and what to do), nothing broken reaches the database or the wire, and the server
keeps answering. Real server process, scripted provider on 127.0.0.1.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from seri_lsp.agent.provider import is_local_url
from seri_lsp.waits import WAITS_ENV
from tests.agent_helpers import events, messages, prompt
from tests.harness import command, server_env, shown_messages, wait_until
from tests.scripted_provider import Calls, Comment, Drip, Error, Raw, ScriptedProvider, Text

KEY_HINT = "set provider.apiKey in the settings, or SERI_API_KEY / OPENROUTER_API_KEY"


def chunk(delta: dict[str, Any] | Any, finish: str | None = None) -> dict[str, Any]:
    return {"id": "x", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def whole(message: dict[str, Any] | Any, finish: str = "stop") -> str:
    return json.dumps(
        {"id": "x", "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
    )


async def assert_still_answers(client, provider: ScriptedProvider) -> None:
    """The server is not stuck: it answers a request, and the next prompt works."""
    assert "sessions" in await command(client, "seri.session.list", {})
    provider.script(Text("fine again"))
    assert (await prompt(client, "again"))["status"] == "done"


def assert_clear_failure(result: dict[str, Any], *phrases: str) -> None:
    assert result["status"] == "failed", result
    error = result.get("error") or ""
    assert error.strip(), "a failure must say why"
    assert "Internal error" not in error, error
    for phrase in phrases:
        assert phrase in error, error


def stored_texts(profile_root: Path) -> list[str]:
    """Every message's content and tool calls as the database holds them (raw bytes)."""
    conn = sqlite3.connect(profile_root / "seri.db")
    conn.text_factory = bytes
    try:
        rows = conn.execute("SELECT * FROM messages").fetchall()
    finally:
        conn.close()
    return [
        value.decode("utf-8")  # strict: a lone surrogate could not have been stored
        for row in rows
        for value in row
        if isinstance(value, bytes)
    ]


# --- provider.timeout bounds the whole call ---------------------------------------------


async def test_a_stream_that_never_finishes_times_out_as_a_whole(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent(provider_extra={"timeout": 1.2})
    for what in ("comment", "content", "bytes"):  # keep-alives, trickled text, single bytes
        drip = Drip(what=what, interval=0.2)
        provider.script(drip)
        sent = len(provider.requests)
        started = time.monotonic()
        result = await prompt(client, f"hello ({what})")
        elapsed = time.monotonic() - started
        assert_clear_failure(
            result, "The provider did not finish its reply within 1.2 seconds (provider.timeout)"
        )
        assert drip.sent >= 3, "the provider kept the connection busy the whole time"
        assert elapsed < 8, f"a 1.2-second timeout took {elapsed:.1f}s"
        assert len(provider.requests) == sent + 1  # a timeout is not retried
    ended = await wait_until(lambda: len(client.seri["seri/turnEnded"]) == 3)
    assert ended and all(e["status"] == "failed" for e in client.seri["seri/turnEnded"])
    assert [m["role"] for m in await messages(client)] == ["user"] * 3
    await assert_still_answers(client, provider)


async def test_keep_alive_comments_before_a_reply_in_time_are_fine(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(
        Raw([Comment(), Comment(), chunk({"content": "hi"}), chunk({}, "stop")], end="done")
    )
    client = await agent()
    result = await prompt(client, "hello")
    assert result["status"] == "done"
    assert (await messages(client))[-1]["content"] == "hi"


# --- replies of the wrong shape --------------------------------------------------------

STREAM_SHAPES = {
    "choices not a list": ({"choices": "oops"}, "choices should be an array, got a string"),
    "choices an object": ({"choices": {"0": {}}}, "choices should be an array, got an object"),
    "a choice not an object": ({"choices": [7]}, "choices[0] should be an object, got a number"),
    "delta a number": (chunk(5), "choices[0].delta should be an object, got a number"),
    "content a number": (
        chunk({"content": 5}),
        "choices[0].delta.content should be a string, got a number",
    ),
    "tool_calls an object": (
        chunk({"tool_calls": {"index": 0}}),
        "choices[0].delta.tool_calls should be an array, got an object",
    ),
    "a tool call a string": (
        chunk({"tool_calls": ["call"]}),
        "choices[0].delta.tool_calls[0] should be an object, got a string",
    ),
    "tool call index a string": (
        chunk({"tool_calls": [{"index": "zero", "function": {"name": "x"}}]}),
        "choices[0].delta.tool_calls[0].index should be a whole number, got a string",
    ),
    "function a list": (
        chunk({"tool_calls": [{"index": 0, "function": ["x"]}]}),
        "choices[0].delta.tool_calls[0].function should be an object, got an array",
    ),
    "chunk a JSON array": ([1, 2], "a stream chunk should be a JSON object, got an array"),
    "chunk a JSON string": ('"hello"', "a stream chunk should be a JSON object, got a string"),
    "chunk a number": ("42", "a stream chunk should be a JSON object, got a number"),
    "chunk not JSON": ("{not json", "a chunk that is not JSON"),
    "chunk nested too deep": ("[" * 100_000, "a chunk that is not JSON"),
}


async def test_streamed_chunks_of_the_wrong_shape_fail_clearly(
    agent, provider: ScriptedProvider
) -> None:
    # One server for every case: each failure must leave it answering the next prompt.
    client = await agent()
    for case, (event, phrase) in STREAM_SHAPES.items():
        provider.script(Raw([chunk({"content": "Hel"}), event, chunk({}, "stop")], end="done"))
        sent = len(provider.requests)
        result = await prompt(client, f"hello ({case})")
        assert_clear_failure(result, "The provider sent an unexpected reply shape: ", phrase)
        assert len(provider.requests) == sent + 1, case  # not retried
    shown = shown_messages(client, containing="unexpected reply shape")
    assert len(shown) == len(STREAM_SHAPES)
    await assert_still_answers(client, provider)


WHOLE_SHAPES = {
    "a JSON array": ("[1, 2]", "the reply should be a JSON object, got an array"),
    "not JSON": ("<html>Bad gateway</html>", "the reply is not JSON"),
    "choices an object": ('{"choices": {}}', "choices should be an array, got an object"),
    "message a number": (whole(7), "choices[0].message should be an object, got a number"),
    "content a list": (
        whole({"role": "assistant", "content": [1]}),
        "choices[0].message.content should be a string, got an array",
    ),
    "tool_calls a string": (
        whole({"role": "assistant", "tool_calls": "read"}),
        "choices[0].message.tool_calls should be an array, got a string",
    ),
    "function a number": (
        whole({"role": "assistant", "tool_calls": [{"id": "c", "function": 3}]}),
        "choices[0].message.tool_calls[0].function should be an object, got a number",
    ),
}


async def test_whole_replies_of_the_wrong_shape_fail_clearly(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent(provider_extra={"stream": False})
    for case, (body, phrase) in WHOLE_SHAPES.items():
        provider.script(Raw(body=body, end="done"))
        result = await prompt(client, f"hello ({case})")
        assert_clear_failure(result, "The provider sent an unexpected reply shape: ", phrase)
    await assert_still_answers(client, provider)


async def test_a_whole_reply_with_arguments_as_an_object_is_accepted(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    # Some OpenAI-compatible servers send the arguments as an object, not JSON text.
    call = {"id": "c1", "type": "function"}
    call["function"] = {"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}
    provider.script(
        Raw(body=whole({"role": "assistant", "tool_calls": [call]}, "tool_calls"), end="done"),
        Text("written"),
    )
    client = await agent(provider_extra={"stream": False})
    assert (await prompt(client, "write"))["status"] == "done"
    assert (workspace / "a.txt").read_text() == "hi"


# --- the stream closes or resets mid-reply ---------------------------------------------


async def test_a_reply_that_breaks_off_mid_way_says_so(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    for end in ("close", "reset"):  # no [DONE] nor finish_reason; a TCP reset
        provider.script(Raw([chunk({"content": "Half a sen"})], end=end))
        sent = len(provider.requests)
        result = await prompt(client, f"hello ({end})")
        # In plain words: the wire's details (finish_reason, [DONE]) are for the log.
        assert_clear_failure(result, "the connection closed mid-reply")
        assert "finish_reason" not in result["error"] and "[DONE]" not in result["error"]
        assert len(provider.requests) == sent + 1  # not retried: the task fails and says why
    # The prompts are kept; nothing half-made is stored as the model's answer.
    assert [m["role"] for m in await messages(client)] == ["user", "user"]
    await assert_still_answers(client, provider)


async def test_a_whole_reply_that_breaks_off_mid_way_says_so(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent(provider_extra={"stream": False})
    for end in ("close", "reset"):  # a body shorter than its Content-Length; a TCP reset
        provider.script(Raw(body='{"choices": [{"message": {"content": "Half', end=end))
        result = await prompt(client, f"hello ({end})")
        assert_clear_failure(result, "the connection closed mid-reply")
    await assert_still_answers(client, provider)


async def test_a_finish_reason_of_error_is_a_provider_error_and_retried(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(
        Raw([chunk({"content": "Hel"}), chunk({}, "error")], end="done"), Text("Hello.")
    )
    client = await agent()
    assert (await prompt(client, "hello"))["status"] == "done"
    assert (await messages(client))[-1]["content"] == "Hello."


# --- lone surrogates become U+FFFD -----------------------------------------------------


async def test_lone_surrogates_in_a_streamed_reply_are_stored_as_replacement_characters(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(
        Raw(
            [
                chunk({"reasoning": "think \ud83d"}),
                chunk({"content": "caf\ud83d"}),
                chunk({"content": " and "}),
                # A surrogate pair split over two chunks is one character, not two errors.
                chunk({"content": "\ud83d"}),
                chunk({"content": "\ude00 end \udc00"}),
                chunk({}, "stop"),
            ],
            end="done",
        )
    )
    client = await agent()
    result = await prompt(client, "hello")
    assert result["status"] == "done", result
    reply = (await messages(client))[-1]
    assert reply["content"] == "caf\ufffd and \U0001f600 end \ufffd"
    assert reply["thinking"] == "think \ufffd"
    streamed = "".join(d["text"] for d in client.seri["seri/delta"])
    assert streamed == reply["content"]
    wire = await wait_until(
        lambda: [n for n in client.seri["seri/message"] if n["message"]["role"] == "assistant"]
    )
    assert wire[-1]["message"]["content"] == reply["content"]
    assert any("caf\ufffd" in text for text in stored_texts(profile_root))


async def test_a_lone_surrogate_in_tool_arguments_is_replaced_before_the_tool_runs(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    # The surrogate is in the JSON string itself (one level of escaping), so it reaches
    # the engine inside the arguments text: it is cleaned there, like any provider text.
    arguments = '{"path": "a.txt", "content": "x\ud83dy"}'
    first = {"index": 0, "id": "c1", "type": "function"}
    first["function"] = {"name": "write_file", "arguments": arguments}
    provider.script(
        Raw([chunk({"tool_calls": [first]}), chunk({}, "tool_calls")], end="done"),
        Text("written"),
    )
    client = await agent()
    result = await prompt(client, "write")
    assert result["status"] == "done", result
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "x\ufffdy"
    call = (await messages(client))[1]["tool_calls"][0]
    assert "x\ufffdy" in call["arguments"]
    stored_texts(profile_root)  # every stored text is valid UTF-8


async def test_lone_surrogates_in_a_whole_reply_and_in_errors_are_replaced(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(
        Error(503, {"error": {"message": "busy \ud83d"}}),
        Raw(
            body=whole({"role": "assistant", "content": "ok \ud83d", "reasoning": "\udc00"}),
            end="done",
        ),
        Error(400, {"error": {"message": "bad \ud83d request"}}),
    )
    client = await agent(provider_extra={"stream": False})
    assert (await prompt(client, "one"))["status"] == "done"
    reply = (await messages(client))[-1]
    assert (reply["content"], reply["thinking"]) == ("ok \ufffd", "\ufffd")
    assert events(profile_root, "retry")[0]["error"].endswith("busy \ufffd")
    result = await prompt(client, "two")
    assert_clear_failure(result, "HTTP 400: bad \ufffd request")
    stored_texts(profile_root)


# --- API keys ------------------------------------------------------------------------


async def test_no_api_key_for_a_remote_provider_fails_before_sending(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent(
        provider_extra={
            "baseUrl": "https://openrouter.ai/api/v1",
            "apiKey": None,
            "contextWindow": 100_000,
        }
    )
    started = time.monotonic()
    result = await prompt(client, "hello")
    assert_clear_failure(result)
    assert result["error"] == (
        "No API key for https://openrouter.ai/api/v1: set provider.apiKey in the settings, "
        "or SERI_API_KEY / OPENROUTER_API_KEY in the environment."
    )
    assert time.monotonic() - started < 5  # nothing was sent, nothing waited on
    shown = await wait_until(lambda: shown_messages(client, containing="No API key"))
    assert shown
    await command(client, "seri.session.list", {})


async def test_a_key_from_the_environment_is_used_for_a_remote_provider(agent) -> None:
    # The key is found, so the call is sent (and fails only because the host does not exist).
    client = await agent(
        provider_extra={
            "baseUrl": "https://seri-test.invalid/v1",
            "apiKey": None,
            "contextWindow": 100_000,
        },
        env={"OPENROUTER_API_KEY": "from-env"},
    )
    result = await prompt(client, "hello")
    assert_clear_failure(result, "Could not reach the provider at https://seri-test.invalid/v1")
    assert "No API key" not in result["error"]


async def test_a_local_provider_needs_no_key(agent, provider: ScriptedProvider) -> None:
    provider.script(Text("local answer"))
    client = await agent(provider_extra={"apiKey": None})
    assert (await prompt(client, "hello"))["status"] == "done"
    assert "Authorization" not in provider.headers[0]


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_names_where_it_came_from_and_is_not_retried(
    agent, provider: ScriptedProvider, status: int
) -> None:
    provider.script(Error(status, {"error": {"message": "User not found."}}))
    client = await agent()
    result = await prompt(client, "hello")
    assert_clear_failure(
        result,
        f"HTTP {status}: User not found.",
        "(from provider.apiKey in the initialization options)",
        ": correct provider.apiKey in the initialization options.",
    )
    assert len(provider.requests) == 1


async def test_a_refused_key_from_the_environment_names_the_variable(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Error(401, {"error": {"message": "Invalid key"}}))
    client = await agent(provider_extra={"apiKey": None}, env={"SERI_API_KEY": "wrong"})
    result = await prompt(client, "hello")
    assert_clear_failure(
        result,
        "HTTP 401: Invalid key",
        "(from the environment variable SERI_API_KEY) was refused: set the right key in "
        "SERI_API_KEY",
    )
    assert provider.headers[0]["Authorization"] == "Bearer wrong"


async def test_a_401_without_a_key_says_to_set_one(agent, provider: ScriptedProvider) -> None:
    provider.script(Error(401, {"error": {"message": "No auth credentials found"}}))
    client = await agent(provider_extra={"apiKey": None})
    result = await prompt(client, "hello")
    assert_clear_failure(result, "HTTP 401", f"No API key was sent: {KEY_HINT}")
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8080/v1", True),
        ("http://127.9.9.9/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://10.1.2.3/v1", True),
        ("http://172.20.0.5/v1", True),
        ("http://192.168.1.10:1234/v1", True),
        ("http://100.101.102.103/v1", True),
        ("http://[fd00::5]/v1", True),
        ("http://gpu-box.local:8000/v1", True),
        ("http://ollama:11434/v1", True),
        ("https://openrouter.ai/api/v1", False),
        ("https://api.openai.com/v1", False),
        ("http://8.8.8.8/v1", False),
        ("http://[2001:4860::8888]/v1", False),
        ("http://localhost.example.com/v1", False),
    ],
)
def test_which_base_urls_count_as_local(url: str, local: bool) -> None:
    assert is_local_url(url) is local


# --- a retry drops what the failed attempt streamed ------------------------------------


async def test_a_retry_resets_the_streamed_text(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    final = "Hello, world. This is the whole answer."
    provider.script(
        Raw(
            [
                chunk({"content": "Hello, wor"}),
                chunk({"content": "ld. This is"}),
                {"error": {"message": "upstream overloaded", "code": 502}},
            ],
            end="done",
        ),
        Text(final),
    )
    client = await agent()
    result = await prompt(client, "hello")
    assert result["status"] == "done", result
    deltas = client.seri["seri/delta"]
    resets = [i for i, d in enumerate(deltas) if d.get("reset")]
    assert len(resets) == 1
    before, reset, after = deltas[: resets[0]], deltas[resets[0]], deltas[resets[0] + 1 :]
    assert "".join(d["text"] for d in before) == "Hello, world. This is"
    assert reset["text"] == "" and reset["sessionId"] == result["sessionId"]
    assert "".join(d["text"] for d in after) == final
    assert not any("reset" in d for d in before + after)  # only on the wire when true
    history = await messages(client)
    assert [(m["role"], m["content"]) for m in history] == [("user", "hello"), ("assistant", final)]
    assert events(profile_root, "retry")[0]["status"] == 502


async def test_a_retry_before_anything_streamed_sends_no_reset(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Error(503, {"error": {"message": "busy"}}), Text("answer"))
    client = await agent()
    assert (await prompt(client, "hello"))["status"] == "done"
    assert not any(d.get("reset") for d in client.seri["seri/delta"])


async def test_each_retry_that_streamed_gets_its_own_reset(
    agent, provider: ScriptedProvider
) -> None:
    broken = [chunk({"content": "partial"}), {"error": {"message": "oops", "code": 500}}]
    provider.script(
        Raw(broken, end="done"),
        Raw(broken, end="done"),
        Calls([("c1", "list_dir", {"path": "."})]),
        Text("done"),
    )
    client = await agent()
    assert (await prompt(client, "hello"))["status"] == "done"
    texts = [("RESET" if d.get("reset") else d["text"]) for d in client.seri["seri/delta"]]
    assert texts == ["partial", "RESET", "partial", "RESET", "done"]


def test_the_terminal_starts_the_reply_again_after_a_reset(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    profile_root.mkdir(mode=0o700)
    config = {
        "provider": {
            "baseUrl": provider.base_url,
            "model": provider.model,
            "retryBaseDelay": 0.01,
            "retryMaxDelay": 0.05,
        }
    }
    (profile_root / "config.json").write_text(json.dumps(config))
    provider.script(
        Raw(
            [chunk({"content": "First try"}), {"error": {"message": "boom", "code": 502}}],
            end="done",
        ),
        Text("Second try, whole."),
    )
    result = subprocess.run(
        [sys.executable, "-m", "seri_lsp", "run", "--profile-root", str(profile_root), "hi"],
        cwd=workspace,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "[seri] First try\n" in result.stdout
    assert result.stdout.count("[seri] Second try, whole.") == 1
    assert result.stdout.index("First try") < result.stdout.index("Second try")
    assert "the reply broke off; it starts again" in result.stderr


async def test_a_too_long_error_mid_stream_resets_before_compacting_and_resending(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    for index in range(3):
        provider.script(Text(f"reply {index} " + "x" * 400))
        assert (await prompt(client, f"prompt {index}"))["status"] == "done"
    summary = "Goal: g\nProgress: p\nBlockers: none\nNext steps: n"
    too_long = {"error": {"message": "This model's maximum context length is 4000 tokens."}}
    provider.script(
        Raw([chunk({"content": "Start of"}), too_long], end="done"), Text(summary), Text("fits")
    )
    first = len(client.seri["seri/delta"])
    assert (await prompt(client, "prompt 3"))["status"] == "done"
    texts = [("RESET" if d.get("reset") else d["text"]) for d in client.seri["seri/delta"]]
    assert texts[first:] == ["Start of", "RESET", "fits"]
    assert (await messages(client))[-1]["content"] == "fits"


async def test_hostile_numbers_and_nesting_in_a_reply_lose_nothing(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls(
            [
                ("deep", "read_file", "[" * 50_000),
                ("long", "read_file", '{"n": ' + "7" * 5000 + "}"),
            ],
            usage={"prompt_tokens": 10**30},
        ),
        Text("still here", usage={"prompt_tokens": -5, "completion_tokens": 10**40}),
    )
    client = await agent()
    result = await prompt(client, "go")
    assert result["status"] == "done", result
    stored = await messages(client)
    calls = [m for m in stored if m["role"] == "assistant" and m.get("tool_calls")]
    assert calls, stored  # the reply with the absurd usage was kept
    answers = [m for m in stored if m["role"] == "tool"]
    assert [a["tool_call_id"] for a in answers] == ["deep", "long"]
    assert all(a["isError"] and "not a JSON object" in a["content"] for a in answers)
    assert stored[-1]["content"] == "still here"
    await assert_still_answers(client, provider)


async def test_a_model_list_that_trickles_does_not_hold_up_a_prompt(
    agent, provider: ScriptedProvider
) -> None:
    provider.models_drip = 0.5  # a whole second per two bytes: minutes for the list
    # The list's deadline (5 s) shortened to 1 s: the same bound, proven sooner.
    client = await agent(env={WAITS_ENV: "MODELS_SECONDS=1"})
    provider.script(Text("answered"))
    started = time.monotonic()
    result = await prompt(client, "hello")
    assert result["status"] == "done", result
    assert time.monotonic() - started < 15
    view = await command(client, "seri.session.get", {"limit": 1})
    assert view["usage"]["contextWindow"] == 128_000  # the default, the list never came


@pytest.mark.parametrize(
    "setting, value, named",
    [
        ("baseUrl", "localhost:11434/v1", "provider.baseUrl"),
        ("apiKey", "clé-secrète", "provider.apiKey"),
        ("timeout", 1e400, "provider.timeout"),
        ("model", "bad\udcffmodel", "provider.model"),
    ],
)
async def test_provider_settings_that_cannot_work_are_named_at_start(
    agent, provider: ScriptedProvider, setting: str, value: Any, named: str
) -> None:
    client = await agent(provider_extra={setting: value})
    await wait_until(lambda: any(named in m.message for m in client.messages))
    if setting == "timeout":
        # The bad value is not used: the prompt reaches the scripted provider.
        provider.script(Text("fine"))
        result = await prompt(client, "hello")
        assert result["status"] == "done", result
    else:
        # It decides where prompts go: no default stands in for it, nothing is sent.
        with pytest.raises(JsonRpcException, match=named):
            await prompt(client, "hello")
        assert provider.requests == []
