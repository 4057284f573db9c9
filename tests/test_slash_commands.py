"""The slash commands, declared once in `seri_lsp/slash.py`: the server advertises them
(`initialize`'s `experimental.seri.slashCommands` and `seri.commands`), the engine runs
each by its handler."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from seri_lsp.engine import Engine
from seri_lsp.slash import BY_NAME, COMMANDS, SlashHandlers, usage
from tests.harness import command, initialize_client

ORDER = [
    "compact",
    "clear",
    "rewind",
    "max-turns",
    "model",
    "resume",
    "continue",
    "trajectory",
    "fork",
    "cost",
    "context",
    "rename",
]
COMPACT = {
    "name": "compact",
    "usage": "/compact [focus words]",
    "summary": "Compact the conversation now into a recap; words after it say what to focus on",
    "argumentHint": "focus words (optional)",
}


def check_wire_list(commands: list[dict[str, str]]) -> None:
    assert [entry["name"] for entry in commands] == ORDER
    assert commands[0] == COMPACT
    for entry in commands:
        declared = BY_NAME[entry["name"]]
        expected = (
            {"name", "usage", "summary"}
            | ({"argumentHint"} if declared.argument_hint else set())
            | ({"picker"} if declared.picker else set())
        )
        assert set(entry) == expected
        assert entry["usage"] == declared.usage
        assert entry["summary"] == declared.summary
    # A command that takes no words has no hint.
    assert "argumentHint" not in commands[ORDER.index("clear")]
    # Typed bare, these open an editor's own picker.
    assert [entry["name"] for entry in commands if entry.get("picker")] == [
        "rewind",
        "model",
        "resume",
    ]


async def test_initialize_advertises_the_slash_commands_as_an_experimental_capability(
    lsp, workspace: Path
) -> None:
    client = await lsp(initialize=False)
    result = await initialize_client(client, workspace)
    experimental = result.capabilities.experimental
    check_wire_list(experimental["seri"]["slashCommands"])
    assert "seri.commands" in result.capabilities.execute_command_provider.commands


async def test_seri_commands_answers_the_same_list(lsp, workspace: Path) -> None:
    client = await lsp(initialize=False)
    result = await initialize_client(client, workspace)
    answer = await command(client, "seri.commands")
    assert answer == {"commands": result.capabilities.experimental["seri"]["slashCommands"]}
    check_wire_list(answer["commands"])
    assert await command(client, "seri.commands", {}) == answer


async def test_an_unknown_slash_command_lists_every_declared_usage(lsp) -> None:
    client = await lsp()
    with pytest.raises(JsonRpcInvalidParams) as raised:
        await command(client, "seri.prompt", {"text": "/frobnicate"})
    assert str(raised.value.message) == (
        "Unknown command /frobnicate. Commands: /compact [focus words], /clear, "
        "/rewind [n] [both|conversation|files] [force], /max-turns N, /model [NAME|default], "
        "/resume ID, /continue, /trajectory [on|off], /fork, /cost, /context, /rename TITLE. "
        "Nothing was sent to the model."
    )


def test_the_registry_is_in_the_order_the_editors_list_it() -> None:
    assert [declared.name for declared in COMMANDS] == ORDER
    assert usage().startswith("/compact [focus words], /clear, /rewind")


def test_every_declared_command_has_an_engine_handler_and_nothing_else_has_one() -> None:
    assert sorted(Engine._slash_handlers.names()) == sorted(ORDER)


def test_a_handler_for_an_undeclared_command_is_refused_when_it_is_registered() -> None:
    handlers: SlashHandlers[object] = SlashHandlers()
    with pytest.raises(ValueError, match="/frobnicate is not declared"):
        handlers.handles("frobnicate")


def test_every_usage_starts_with_its_name_and_a_hint_goes_with_words() -> None:
    for declared in COMMANDS:
        assert declared.usage.split()[0] == f"/{declared.name}"
        takes_words = len(declared.usage.split()) > 1
        assert (declared.argument_hint is not None) == takes_words, declared.name
