"""Naming sessions (`seri.session.rename`, `/rename`): the user's title is kept."""

from __future__ import annotations

import pytest

from tests.agent_helpers import prompt
from tests.harness import CLIENTS, command
from tests.scripted_provider import ScriptedProvider, Text
from tests.session_helpers import invalid


def changes(client) -> list[tuple[str, str]]:
    """Each `seri/sessionChanged`: (reason, title)."""
    return [(p["reason"], p["session"]["title"]) for p in client.seri["seri/sessionChanged"]]


@pytest.mark.parametrize("client_name", CLIENTS)
async def test_renaming_the_open_session_is_announced_and_listed(lsp, client_name) -> None:
    client = await lsp(client_name=client_name)
    opened = (await command(client, "seri.session.new"))["session"]
    renamed = (await command(client, "seri.session.rename", {"title": "  Login bug hunt "}))[
        "session"
    ]
    assert renamed == {**opened, "title": "Login bug hunt"}  # not touched: it keeps its place
    assert changes(client)[-1] == ("renamed", "Login bug hunt")
    listed = (await command(client, "seri.session.list"))["sessions"]
    assert listed[0]["title"] == "Login bug hunt"


async def test_the_users_title_is_never_replaced_by_the_first_prompts(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    await command(client, "seri.session.new")
    await command(client, "seri.session.rename", {"title": "Named first"})
    provider.script(Text("ok"))
    result = await prompt(client, "the first prompt")
    view = await command(client, "seri.session.get", {"sessionId": result["sessionId"]})
    assert view["session"]["title"] == "Named first"


async def test_a_rewind_keeps_the_users_title(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    provider.script(Text("one"), Text("two"), Text("three"))
    assert (await prompt(client, "first prompt"))["status"] == "done"
    assert (await prompt(client, "/rename My title"))["session"]["title"] == "My title"
    assert (await prompt(client, "second prompt"))["status"] == "done"
    rewound = await command(client, "seri.rewind", {"steps": 2})
    assert rewound["session"]["title"] == "My title"
    # The next first prompt does not name it either.
    assert (await prompt(client, "a new beginning"))["status"] == "done"
    assert (await command(client, "seri.session.get", {}))["session"]["title"] == "My title"


async def test_without_a_rename_a_rewind_puts_the_prompts_title_back(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    provider.script(Text("one"), Text("two"))
    assert (await prompt(client, "first prompt"))["status"] == "done"
    assert (await prompt(client, "second prompt"))["status"] == "done"
    rewound = await command(client, "seri.rewind", {"steps": 2})
    assert rewound["session"]["title"] == ""


async def test_another_session_is_renamed_by_id_without_opening_it(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent()
    provider.script(Text("ok"))
    first = (await prompt(client, "the older session"))["sessionId"]
    current = (await command(client, "seri.session.new"))["session"]
    before = len(changes(client))
    renamed = await command(
        client, "seri.session.rename", {"sessionId": first[:8], "title": "Older, renamed"}
    )
    assert (renamed["session"]["id"], renamed["session"]["title"]) == (first, "Older, renamed")
    assert len(changes(client)) == before  # the open session did not change
    assert (await command(client, "seri.session.get", {}))["session"]["id"] == current["id"]


async def test_slash_rename_names_the_open_session(lsp) -> None:
    client = await lsp()
    result = await prompt(client, "/rename   Refactor the parser  ")
    assert (result["status"], result["command"]) == ("done", "rename")
    assert result["session"]["title"] == "Refactor the parser"
    assert changes(client)[-1] == ("renamed", "Refactor the parser")


@pytest.mark.parametrize(
    "title, words",
    [
        ("", "must be a non-empty string"),
        ("   ", "must be a non-empty string"),
        ("x" * 201, "at most 200"),
        ("two\nlines", "one line"),
        ("a\ttab", "one line"),
        (5, "must be a non-empty string"),
    ],
)
async def test_a_title_must_be_one_line_of_1_to_200_characters(lsp, title, words: str) -> None:
    client = await lsp()
    message, field = await invalid(client, "seri.session.rename", {"title": title})
    assert field == "title" and words in message
    assert (await command(client, "seri.session.list"))["sessions"] == []  # nothing started


async def test_slash_rename_needs_a_one_line_title(lsp) -> None:
    client = await lsp()
    message, field = await invalid(client, "seri.prompt", {"text": "/rename"})
    assert (field, message) == ("text", "/rename needs a title: /rename TITLE")
    message, field = await invalid(client, "seri.prompt", {"text": "/rename one\ntwo"})
    assert field == "text" and "one line" in message


async def test_renaming_an_unknown_session_names_it(lsp) -> None:
    client = await lsp()
    args = {"sessionId": "no-such-session", "title": "x"}
    message, field = await invalid(client, "seri.session.rename", args)
    assert field == "sessionId" and "no-such-session" in message
