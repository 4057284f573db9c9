"""Paging a session's history: `seri.session.get {sessionId?, limit?, before?}`.

The newest `limit` messages come first (before message `before` when given), in
conversation order, with `hasMore` saying whether older ones exist; an editor walks
back page by page to the first message. Through the real server, on sessions imported
from legacy files (the open one and one that is not open) and on a compacted session.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from seri_lsp.lsp.protocol import encoded_body
from seri_lsp.store.messages import ENCODE_BATCH, EncodedMessages
from tests.agent_helpers import prompt
from tests.harness import command, wait_until
from tests.scripted_provider import ScriptedProvider, Text, usage

SESSION = "paged-session"
COUNT = 25


def seed(profile_root: Path, workspace: Path, session_id: str = SESSION, count: int = COUNT):
    """A legacy session of `count` messages, m1 .. mN, alternating user and assistant."""
    folder = profile_root / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "session", "id": session_id, "cwd": os.path.realpath(workspace)}]
    for number in range(1, count + 1):
        role = "user" if number % 2 else "assistant"
        lines.append({"type": "message", "role": role, "content": f"m{number}"})
    (folder / f"{session_id}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


async def get(client, **args: Any) -> dict[str, Any]:
    return await command(client, "seri.session.get", args)


def contents(view: dict[str, Any]) -> list[str]:
    return [message["content"] for message in view["messages"]]


@pytest.fixture
async def server(lsp, profile_root: Path, workspace: Path):
    """A server whose project has the 25-message session, resumed on open."""
    seed(profile_root, workspace)
    client = await lsp()
    await wait_until(lambda: client.seri["seri/sessionChanged"])
    return client


@pytest.mark.parametrize("open_session", [True, False], ids=["open", "not-open"])
async def test_pages_walk_back_from_the_newest_to_the_first_message(
    server, open_session: bool
) -> None:
    args: dict[str, Any] = {}
    if not open_session:
        await command(server, "seri.session.new")
        args["sessionId"] = SESSION
    whole = await get(server, **args)
    assert contents(whole) == [f"m{n}" for n in range(1, COUNT + 1)]
    assert whole["hasMore"] is False
    assert whole["session"]["id"] == SESSION

    newest = await get(server, **args, limit=10)
    assert contents(newest) == [f"m{n}" for n in range(16, 26)]
    assert newest["hasMore"] is True
    # The rest of the view is the same as the whole one's.
    for key in ("session", "usage", "paths"):
        assert newest[key] == whole[key], key

    middle = await get(server, **args, limit=10, before=newest["messages"][0]["id"])
    assert contents(middle) == [f"m{n}" for n in range(6, 16)]
    assert middle["hasMore"] is True

    oldest = await get(server, **args, limit=10, before=middle["messages"][0]["id"])
    assert contents(oldest) == [f"m{n}" for n in range(1, 6)]
    assert oldest["hasMore"] is False
    assert oldest["messages"] + middle["messages"] + newest["messages"] == whole["messages"]


async def test_page_edges(server) -> None:
    whole = (await get(server))["messages"]
    # A page exactly as long as the history has nothing older; one shorter has.
    assert (await get(server, limit=COUNT))["hasMore"] is False
    assert contents(await get(server, limit=COUNT)) == contents({"messages": whole})
    assert (await get(server, limit=COUNT - 1))["hasMore"] is True
    assert len((await get(server, limit=10_000))["messages"]) == COUNT
    # `before` alone: everything older than that message.
    before_alone = await get(server, before=whole[5]["id"])
    assert contents(before_alone) == ["m1", "m2", "m3", "m4", "m5"]
    assert before_alone["hasMore"] is False
    # Before the newest: the one before it; before the first: nothing, nothing more.
    assert contents(await get(server, limit=1, before=whole[-1]["id"])) == [f"m{COUNT - 1}"]
    first = await get(server, limit=5, before=whole[0]["id"])
    assert first["messages"] == [] and first["hasMore"] is False
    # null counts as absent.
    assert len((await get(server, limit=None, before=None))["messages"]) == COUNT


@pytest.mark.parametrize(
    "args, field",
    [
        ({"limit": 0}, "limit"),
        ({"limit": -1}, "limit"),
        ({"limit": 10_001}, "limit"),
        ({"limit": "5"}, "limit"),
        ({"limit": 2.5}, "limit"),
        ({"limit": True}, "limit"),
        ({"before": 0}, "before"),
        ({"before": -3}, "before"),
        ({"before": "12"}, "before"),
        ({"before": 1.5}, "before"),
        ({"before": 2**63}, "before"),
        ({"before": 999_999}, "before"),
        ({"limit": 5, "before": [1]}, "before"),
    ],
)
async def test_bad_paging_arguments_name_the_field(server, args: dict[str, Any], field) -> None:
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await get(server, **args)
    assert caught.value.data == {"field": field}
    assert field in caught.value.message


async def test_before_must_be_a_message_of_that_session(
    server, profile_root: Path, workspace: Path
) -> None:
    other = (await get(server))["messages"][3]["id"]
    await command(server, "seri.session.new")
    # Another session's message, asked of the open (empty) one and by id of another.
    for args in ({}, {"sessionId": (await get(server))["session"]["id"]}):
        with pytest.raises(JsonRpcInvalidParams) as caught:
            await get(server, **args, limit=5, before=other)
        assert caught.value.data == {"field": "before"}
        assert str(other) in caught.value.message
    # Of the session it belongs to, by id, it works.
    page = await get(server, sessionId=SESSION, limit=2, before=other)
    assert contents(page) == ["m2", "m3"] and page["hasMore"] is True


async def test_no_open_session_has_no_pages(lsp) -> None:
    client = await lsp()
    view = await get(client, limit=10)
    assert view["session"] is None and view["messages"] == [] and view["hasMore"] is False
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await get(client, limit=10, before=1)
    assert caught.value.data == {"field": "before"}


async def test_pages_follow_conversation_order_after_a_compaction(
    agent, provider: ScriptedProvider
) -> None:
    """The recap is stored after the messages it keeps (a higher id) but comes first: a
    page before the first kept message holds the recap."""
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    for index in range(3):
        provider.script(Text(f"reply {index} " + "x" * 400, usage=usage(100)))
        assert (await prompt(client, f"prompt {index}"))["status"] == "done"
    provider.script(
        Text("Goal: test paging\nProgress: three replies\nBlockers: none\nNext steps: more")
    )
    assert (await command(client, "seri.compact", {}))["compacted"] is True
    whole = (await get(client))["messages"]
    recap, kept = whole[0], whole[1:]
    assert recap.get("kind") == "recap" and kept
    assert recap["id"] > max(message["id"] for message in kept)

    newest = await get(client, limit=len(kept))
    assert newest["messages"] == kept and newest["hasMore"] is True
    before_kept = await get(client, limit=10, before=kept[0]["id"])
    assert before_kept["messages"] == [recap] and before_kept["hasMore"] is False
    assert (await get(client, limit=10, before=recap["id"]))["messages"] == []


@pytest.mark.parametrize("count", [0, 1, ENCODE_BATCH + 3])
def test_messages_encoded_by_the_store_are_written_as_the_json_they_stand_for(
    count: int,
) -> None:
    """A long history goes out as the store encoded it, batch by batch, spliced into the
    answer: the client reads exactly the messages, whatever else the answer holds."""
    messages = [
        {"id": n, "role": "tool", "content": f'é\u2028"{n}\\', "tool_call_id": f"c{n}"}
        for n in range(count)
    ]
    for rest in ({}, {"session": None, "hasMore": False, "usage": {"estimateTokens": 1}}):
        result = {**rest, "messages": EncodedMessages.of(messages)}
        payload = {"jsonrpc": "2.0", "id": 7, "result": result}
        body = b"".join(encoded_body(payload, str))
        assert json.loads(body) == {**payload, "result": {**rest, "messages": messages}}
