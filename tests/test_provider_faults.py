"""Provider faults: retried when worth retrying, otherwise a failed turn that says why."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.agent_helpers import events, messages, prompt
from tests.harness import shown_messages, wait_until
from tests.scripted_provider import Error, Hang, ScriptedProvider, Text, Truncated


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
    assert "ended before the reply was complete" in result["error"]
    # The user's prompt is kept; nothing half-made is stored as the model's answer.
    assert [m["role"] for m in await messages(client)] == ["user"]
    errors = await wait_until(lambda: shown_messages(client, containing="ended"))
    assert errors


async def test_after_a_failure_the_next_prompt_works(agent, provider: ScriptedProvider) -> None:
    provider.script(Error(400, {"error": {"message": "bad request"}}), Text("better"))
    client = await agent()
    assert (await prompt(client, "one"))["status"] == "failed"
    assert (await prompt(client, "two"))["status"] == "done"
    sent = provider.requests[1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["one", "two"]
