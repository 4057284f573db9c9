"""The model in the chat (`seri.models`, `seri.session.model`): the provider's models
with their context windows, and a session's own model, used from its next turn and kept
with it."""

from __future__ import annotations

import asyncio
import json

from tests.agent_helpers import prompt
from tests.harness import command, stop_server
from tests.scripted_provider import Hang, ScriptedProvider, Text
from tests.session_helpers import invalid, refused


async def test_the_models_are_listed_with_their_windows(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    answer = await command(client, "seri.models")
    assert answer == {
        "models": [
            {"id": "test/model", "contextWindow": 128_000},
            {"id": "other/model", "contextWindow": 4096},
        ],
        "current": "test/model",
    }
    opened = (await command(client, "seri.session.new"))["session"]
    assert opened["model"] == "test/model"  # the header's model: the setting's


async def test_a_chosen_model_serves_the_next_turn_and_a_resume(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    provider.script(Text("one"), Text("two"), Text("three"))
    first = await prompt(client, "first prompt")
    usage = await command(client, "seri.session.get", {})
    assert usage["usage"]["contextWindow"] == 128_000
    chosen = await command(client, "seri.session.model", {"model": "other/model"})
    assert chosen["model"] == "other/model"
    assert chosen["contextWindow"] == 4096  # re-read for the new model
    assert chosen["session"]["model"] == "other/model"
    assert "warning" not in chosen
    change = client.seri["seri/sessionChanged"][-1]
    assert (change["reason"], change["session"]["model"]) == ("model", "other/model")
    assert await command(client, "seri.models") == {
        "models": [
            {"id": "test/model", "contextWindow": 128_000},
            {"id": "other/model", "contextWindow": 4096},
        ],
        "current": "other/model",
    }
    assert (await prompt(client, "second prompt"))["status"] == "done"
    before, after = provider.raw_requests[-2], provider.raw_requests[-1]
    assert json.loads(before)["model"] == "test/model"
    assert json.loads(after)["model"] == "other/model"
    # The frozen prefix changes only in the model's name: with the name put back, the
    # bytes are the same up to the end of the earlier request's messages.
    old_messages = json.loads(before)["messages"]
    new_messages = json.loads(after)["messages"]
    assert new_messages[: len(old_messages)] == old_messages
    swapped = after.replace(b'"other/model"', b'"test/model"', 1)
    common = next(
        (i for i, (a, b) in enumerate(zip(before, swapped, strict=False)) if a != b), len(before)
    )
    assert before[common:].startswith(b"]"), before[common - 40 : common + 40]
    rest = {k: v for k, v in json.loads(before).items() if k not in ("model", "messages")}
    assert rest == {k: v for k, v in json.loads(after).items() if k not in ("model", "messages")}
    assert (await command(client, "seri.session.get", {}))["usage"]["contextWindow"] == 4096
    # Kept with the session: a new server resuming it uses it.
    await stop_server(client)
    again = await agent()
    resumed = await command(again, "seri.session.resume", {"sessionId": first["sessionId"]})
    assert resumed["session"]["model"] == "other/model"
    # Its recording names the model it runs on.
    assert (await command(again, "seri.trajectory.get", {}))["header"]["model"] == "other/model"
    assert (await prompt(again, "third prompt"))["status"] == "done"
    assert provider.requests[-1]["model"] == "other/model"
    # A new session uses the setting's model again.
    fresh = (await command(again, "seri.session.new"))["session"]
    assert fresh["model"] == "test/model"


async def test_null_goes_back_to_the_setting(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    await command(client, "seri.session.model", {"model": "other/model"})
    back = await command(client, "seri.session.model", {"model": None})
    assert (back["model"], back["session"]["model"], back["contextWindow"]) == (
        "test/model",
        "test/model",
        128_000,
    )
    provider.script(Text("ok"))
    assert (await prompt(client, "hello"))["status"] == "done"
    assert provider.requests[-1]["model"] == "test/model"


async def test_a_model_the_provider_does_not_list_is_refused(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    message, field = await invalid(client, "seri.session.model", {"model": "othr/model"})
    assert field == "model"
    assert "does not list the model 'othr/model'" in message
    message, field = await invalid(client, "seri.session.model", {"model": "other"})
    assert "Did you mean: other/model?" in message
    message, field = await invalid(client, "seri.session.model", {})
    assert field == "model"
    assert (await command(client, "seri.models"))["current"] == "test/model"


async def test_another_session_gets_its_model_without_being_opened(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    provider.script(Text("ok"))
    older = (await prompt(client, "the older one"))["sessionId"]
    current = (await command(client, "seri.session.new"))["session"]
    announced = len(client.seri["seri/sessionChanged"])
    chosen = await command(
        client, "seri.session.model", {"sessionId": older, "model": "other/model"}
    )
    assert chosen["session"]["id"] == older
    assert chosen["contextWindow"] is None  # not open: nothing read for it yet
    assert len(client.seri["seri/sessionChanged"]) == announced  # not announced
    assert (await command(client, "seri.models"))["current"] == "test/model"
    assert (await command(client, "seri.session.get", {}))["session"]["id"] == current["id"]
    resumed = await command(client, "seri.session.resume", {"sessionId": older})
    assert resumed["session"]["model"] == "other/model"
    assert (await command(client, "seri.models"))["current"] == "other/model"


async def test_without_a_model_list_the_model_is_taken_with_a_warning(
    agent, provider: ScriptedProvider
) -> None:
    provider.models_status = 404  # a provider without a model list
    client = await agent()
    listed = await command(client, "seri.models")
    assert listed["models"] == [] and "could not be read" in listed["error"]
    chosen = await command(client, "seri.session.model", {"model": "typed/model"})
    assert chosen["model"] == "typed/model"
    assert "is not checked" in chosen["warning"]


async def test_a_provider_setting_that_is_wrong_refuses_the_list(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent(provider_extra={"baseUrl": "127.0.0.1:47150/v1"})
    assert "provider.baseUrl" in await refused(client, "seri.models", {})


async def test_the_open_sessions_model_waits_for_its_task(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    slow = Hang(then=Text("slow answer"))
    provider.script(slow)
    running = asyncio.ensure_future(prompt(client, "a slow prompt"))
    await asyncio.to_thread(provider.wait_for_requests, 1)
    message = await refused(client, "seri.session.model", {"model": "other/model"})
    assert "A task is running" in message
    slow.release.set()
    assert (await running)["status"] == "done"
    assert (await command(client, "seri.models"))["current"] == "test/model"


async def test_bad_arguments_name_their_field(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    for args, field in [
        ({"model": 5}, "model"),
        ({"model": "   "}, "model"),
        ({"model": "x" * 301}, "model"),
        ({"sessionId": "nope-123", "model": "other/model"}, "sessionId"),
        ({"sessionId": 7, "model": "other/model"}, "sessionId"),
    ]:
        assert (await invalid(client, "seri.session.model", args))[1] == field, args


async def test_the_model_slash_command_shows_and_switches_the_model(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    shown = await prompt(client, "/model")
    assert shown["status"] == "done" and shown["command"] == "model"
    assert shown["model"] == "test/model"
    assert "test/model" in shown["text"] and "other/model" in shown["text"]
    assert "4,096" in shown["text"] and "error" not in shown
    assert "warning" not in (await prompt(client, "/model test/model"))
    assert provider.requests == []  # nothing sent to the model

    switched = await prompt(client, "/model other/model")
    assert switched["model"] == "other/model" and switched["contextWindow"] == 4096
    assert "other/model" in switched["text"]
    provider.script(Text("hi"))
    assert (await prompt(client, "hello"))["status"] == "done"
    assert json.loads(provider.raw_requests[-1])["model"] == "other/model"
    assert (await command(client, "seri.models"))["current"] == "other/model"

    back = await prompt(client, "/model default")
    assert back["model"] == "test/model"
    commands = [entry["name"] for entry in (await command(client, "seri.commands"))["commands"]]
    assert "model" in commands
