"""Provider faults: retried when worth retrying, otherwise a failed turn that says why."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from tests.agent_helpers import events, messages, prompt
from tests.harness import command, shown_messages, wait_until
from tests.scripted_provider import Calls, Drop, Error, Hang, ScriptedProvider, Text, Truncated


async def test_429_and_5xx_are_retried_and_every_retry_is_recorded(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(
        Error(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}),
        Error(503, {"error": {"message": "overloaded"}}),
        Text("finally"),
    )
    client = await agent()
    result = await prompt(client, "hello")
    assert result["status"] == "done"
    assert len(provider.requests) == 3
    retries = events(profile_root, "retry")
    assert [(r["attempt"], r["status"]) for r in retries] == [(1, 429), (2, 503)]
    assert retries[0]["delay"] == 0  # Retry-After honoured
    assert "slow down" in retries[0]["error"]
    logs = [m.message for m in client.log_messages if "retry" in m.message]
    assert len(logs) == 2


async def test_retries_are_bounded_then_the_turn_fails(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(*[Error(500, {"error": {"message": "boom"}})] * 3)
    client = await agent()
    result = await prompt(client, "hello")
    assert result["status"] == "failed"
    assert "HTTP 500" in result["error"] and "boom" in result["error"]
    assert len(provider.requests) == 3  # one try and two retries (maxRetries 2)
    assert len(events(profile_root, "retry")) == 2
    ended = await wait_until(lambda: client.seri["seri/turnEnded"])
    assert ended[-1]["status"] == "failed"


async def test_a_client_error_is_not_retried(agent, provider: ScriptedProvider) -> None:
    provider.script(Error(401, {"error": {"message": "No auth credentials found"}}))
    client = await agent()
    result = await prompt(client, "hello")
    assert result["status"] == "failed"
    assert "HTTP 401: No auth credentials found" in result["error"]
    assert len(provider.requests) == 1


async def test_a_provider_that_does_not_answer_times_out(agent, provider: ScriptedProvider) -> None:
    hang = Hang()
    provider.script(hang)
    client = await agent(provider_extra={"timeout": 1})
    result = await prompt(client, "hello")
    hang.release.set()
    assert result["status"] == "failed"
    assert "did not answer within 1 seconds" in result["error"]


async def test_a_request_dropped_without_a_reply_is_sent_again_and_the_turn_ends_done(
    agent, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    """The provider keeps connections alive, closes idle ones after a second, and
    drops one request without a reply (as a gateway closing a kept-alive connection
    just as it is reused): the turn ends done, that request sent twice, one retry
    recorded."""
    (workspace / "notes.txt").write_text("a note\n")
    provider.idle_close = 1.0
    provider.script(
        Calls([("c1", "read_file", {"path": "notes.txt"})]),
        Drop(),
        Text("It says: a note."),
    )
    client = await agent(provider_extra={"contextWindow": 100_000})
    result = await prompt(client, "What does notes.txt say?")
    assert result["status"] == "done", result
    requests = provider.requests
    assert len(requests) == 3
    assert requests[2] == requests[1]  # the dropped request, sent again as it was
    assert provider.connections == 2  # the drop closed the first connection
    retries = events(profile_root, "retry")
    assert [(r["attempt"], r["status"]) for r in retries] == [(1, None)]
    assert "closed the connection without answering" in retries[0]["error"]
    assert (await messages(client))[-1]["content"] == "It says: a note."


async def test_connections_are_kept_alive_across_tasks_until_the_provider_closes_them(
    agent, provider: ScriptedProvider
) -> None:
    provider.idle_close = 1.0
    client = await agent(provider_extra={"contextWindow": 100_000})
    for text in ("one", "two"):
        provider.script(Text(text))
        assert (await prompt(client, "hello"))["status"] == "done"
    assert provider.connections == 1  # the second task reused the first's connection
    await asyncio.sleep(1.5)  # the provider closes the idle connection meanwhile
    provider.script(Text("three"))
    assert (await prompt(client, "hello"))["status"] == "done"
    assert provider.connections == 2
    assert len(provider.requests) == 3  # nothing was sent twice


async def test_a_connection_that_keeps_failing_ends_the_turn_after_the_retries(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(Drop(), Drop(), Drop())
    client = await agent(provider_extra={"contextWindow": 100_000})
    result = await prompt(client, "hello")
    assert result["status"] == "failed"
    assert result["error"].startswith(
        f"The provider at {provider.base_url} closed the connection without answering ("
    )
    assert len(provider.requests) == 3  # one try and two retries (maxRetries 2)
    assert len(events(profile_root, "retry")) == 2


async def test_a_failure_after_reply_bytes_arrived_is_not_sent_again(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Truncated("half"), Text("never asked for"))
    client = await agent(provider_extra={"contextWindow": 100_000})
    result = await prompt(client, "hello")
    assert result["status"] == "failed"
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("base_url", "why"),
    [
        ("https://api..example.com/v1", "has an empty part"),
        (f"https://{'a' * 64}.example.com/v1", "is 64 characters long (at most 63)"),
        ("http://:8080/v1", "names no host"),
        ("http://127.0.0.1:99999/v1", "is not a port number"),
    ],
)
async def test_a_malformed_base_url_is_a_provider_error_naming_the_setting(
    agent, base_url: str, why: str
) -> None:
    client = await agent(provider_extra={"baseUrl": base_url})
    result = await prompt(client, "hello")
    assert result["status"] == "failed"
    assert result["error"].startswith(f"provider.baseUrl {base_url!r} is not a URL seri can call")
    assert why in result["error"]
    assert "Internal error" not in result["error"]
    shown = await wait_until(lambda: shown_messages(client, containing="provider.baseUrl"))
    assert shown
    # The view of the session still answers, with the default window.
    view = await command(client, "seri.session.get", {})
    assert view["usage"]["contextWindowSource"] == "default"
    assert not [m for m in client.log_messages if "Traceback" in m.message]


async def test_a_refused_connection_fails_the_turn(agent) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = await agent(provider_extra={"baseUrl": f"http://127.0.0.1:{port}/v1"})
    result = await prompt(client, "hello")
    assert result["status"] == "failed"
    assert "Could not reach the provider" in result["error"]


async def test_a_truncated_stream_fails_the_turn_and_says_so(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Truncated("half a sent"))
    client = await agent()
    result = await prompt(client, "hello")
    assert result["status"] == "failed"
    assert "the connection closed mid-reply" in result["error"]
    # The user's prompt is kept; nothing half-made is stored as the model's answer.
    assert [m["role"] for m in await messages(client)] == ["user"]
    errors = await wait_until(lambda: shown_messages(client, containing="mid-reply"))
    assert errors


async def test_after_a_failure_the_next_prompt_works(agent, provider: ScriptedProvider) -> None:
    provider.script(Error(400, {"error": {"message": "bad request"}}), Text("better"))
    client = await agent()
    assert (await prompt(client, "one"))["status"] == "failed"
    assert (await prompt(client, "two"))["status"] == "done"
    sent = provider.requests[1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["one", "two"]
