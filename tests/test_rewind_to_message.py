"""`seri.rewind {messageId}`: "Rewind to here" on a prompt of the chat goes back to just
before that prompt (conversation and files), whichever prompt of the session it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.agent_helpers import messages, prompt
from tests.harness import command
from tests.scripted_provider import ScriptedProvider
from tests.test_checkpoints import refused, run, task, two_prompts, user_texts, write


def prompt_ids(history: list[dict[str, Any]]) -> list[int]:
    return [m["id"] for m in history if m["role"] == "user" and not m.get("kind")]


async def test_rewind_to_a_prompt_goes_back_to_just_before_it(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    client: LanguageClient = await agent()
    # An earlier session first: message ids are the store's, not a session's positions.
    task(provider, answer="earlier")
    await run(client, "an earlier session's prompt")
    await prompt(client, "/clear")
    await two_prompts(client, provider, workspace)
    task(provider, write("w3", "third.txt", "three\n"))
    await run(client, "third prompt")
    first, second, third = prompt_ids(await messages(client))
    assert first > 1

    # The second of three prompts: it and the third leave, with what they changed.
    result = await command(client, "seri.rewind", {"messageId": second})
    assert result["rewound"] == 2
    assert result["prompt"] == "second prompt"
    assert result["restoredFiles"] == ["app.py", "notes.txt", "src/new.py", "third.txt"]
    assert (workspace / "app.py").read_text() == "value = 2\n"
    assert (workspace / "notes.txt").read_text() == "first notes\n"
    assert not (workspace / "third.txt").exists()
    assert user_texts(await messages(client)) == ["first prompt\nwith a second line"]

    # A prompt no longer in the session (rewound) is named as such; nothing changes.
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await command(client, "seri.rewind", {"messageId": third})
    assert caught.value.data == {"field": "messageId"}
    assert "is not one of this session's prompts" in caught.value.message
    # A reply's id is not a prompt either.
    reply = next(m["id"] for m in await messages(client) if m["role"] == "assistant")
    with pytest.raises(JsonRpcInvalidParams):
        await command(client, "seri.rewind", {"messageId": reply})
    assert user_texts(await messages(client)) == ["first prompt\nwith a second line"]

    # The first prompt, conversation only: the files stay as they are.
    result = await command(client, "seri.rewind", {"messageId": first, "restore": "conversation"})
    assert result["rewound"] == 1 and result["prompt"] == "first prompt\nwith a second line"
    assert result["restoredFiles"] == []
    assert (workspace / "app.py").read_text() == "value = 2\n"
    assert user_texts(await messages(client)) == []
    message = await refused(client, "seri.rewind", {"steps": 1})
    assert "has no prompt to rewind" in message


async def test_rewind_to_a_prompt_refuses_bad_ids(agent) -> None:
    client: LanguageClient = await agent()
    for value in (0, "3", 1.5):
        with pytest.raises(JsonRpcInvalidParams) as caught:
            await command(client, "seri.rewind", {"messageId": value})
        assert caught.value.data == {"field": "messageId"}, value


async def test_a_check_names_the_files_changed_since_and_changes_nothing_then_force_overwrites(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("value = 1\n")
    client: LanguageClient = await agent()
    await two_prompts(client, provider, workspace)
    first, second = prompt_ids(await messages(client))
    (workspace / "notes.txt").write_text("edited by hand\n")

    checked = await command(client, "seri.rewind", {"messageId": first, "check": True})
    assert checked == {"rewound": 2, "conflicts": ["notes.txt"], "checked": True}
    assert (workspace / "notes.txt").read_text() == "edited by hand\n"
    assert prompt_ids(await messages(client)) == [first, second]
    conversation = {"messageId": second, "check": True, "restore": "conversation"}
    assert (await command(client, "seri.rewind", conversation))["conflicts"] == []

    result = await command(client, "seri.rewind", {"messageId": first, "force": True})
    assert result["conflicts"] == []
    assert "notes.txt" in result["restoredFiles"]
    assert (workspace / "app.py").read_text() == "value = 1\n"
