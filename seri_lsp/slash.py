"""Slash commands typed into the chat (`/compact focus words`, `/max-turns 20`, ...).

`COMMANDS` declares each command once, in the order the editors list them: its name,
usage, summary and argument hint. The engine registers a handler for each
(`SlashHandlers`, by decorating it) and dispatches by name; the LSP face advertises the
list (`initialize`'s `experimental.seri.slashCommands`, `seri.commands`), the ACP face
offers it (`available_commands_update`), and the editors build their menus from what the
server sends. The docs are checked against it by `tests/test_declarations.py`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar


@dataclass(frozen=True)
class Command:
    """One slash command as the user sees it."""

    name: str  # without the slash
    usage: str  # how it is typed, as error messages and menus show it
    summary: str  # what it does, one line
    argument_hint: str | None = None  # what the words after it are; None: it takes none
    # Offered by the ACP face (docs/acp.md); the others work there when typed.
    in_acp: bool = True
    # Typed bare in an editor's chat, the editor offers a picker of its own instead
    # (sessions, models, prompts), as its palette command does.
    picker: bool = False


COMMANDS: tuple[Command, ...] = (
    Command(
        "compact",
        "/compact [focus words]",
        "Compact the conversation now into a recap; words after it say what to focus on",
        "focus words (optional)",
    ),
    Command("clear", "/clear", "Start a new session; this one stays in seri's store"),
    Command(
        "rewind",
        "/rewind [n] [both|conversation|files] [force]",
        "Go back n prompts (default 1): the conversation and the files the tools changed",
        "[n] [both|conversation|files] [force]",
        picker=True,
    ),
    Command(
        "max-turns",
        "/max-turns N",
        "Set how many model calls one prompt may take in this session",
        "N",
    ),
    Command(
        "model",
        "/model [NAME|default]",
        "Show the model and the provider's models, or use NAME in this session from the "
        "next turn (default: the setting's)",
        "model id (optional)",
        picker=True,
    ),
    Command(
        "resume",
        "/resume ID",
        "Open another session of this project by its id (or a unique prefix)",
        "session id",
        in_acp=False,
        picker=True,
    ),
    Command("continue", "/continue", "Open this project's latest session", in_acp=False),
    Command(
        "trajectory",
        "/trajectory [on|off]",
        "Show trajectory recording, or turn it on or off",
        "on | off (optional)",
    ),
    Command("fork", "/fork", "Go on in a copy of this conversation; this one stays as it is"),
    Command("cost", "/cost", "Show what this session spent on model calls: tokens and cost"),
    Command("context", "/context", "Show what fills the context window, part by part"),
    Command(
        "rename",
        "/rename TITLE",
        "Name this session; the rest of the line is the title",
        "title",
        in_acp=False,
    ),
)

BY_NAME: dict[str, Command] = {command.name: command for command in COMMANDS}

# A slash command is "/" and a word, alone or followed by a space; "/src/app.py is
# broken" is a prompt about a path, not a command.
_COMMAND = re.compile(r"^/(?P<name>[A-Za-z][\w-]*)(?:\s+(?P<argument>.*))?$", re.DOTALL)


@dataclass(frozen=True)
class SlashAnswer:
    """What a slash command typed as a prompt answers: on the wire
    `{status: "done", command, ...fields}` (the LSP face flattens `fields` into it).

    `fields` is the command's own answer: a typed value (`/compact`'s CompactionResult)
    or the contract's fields by name.
    """

    command: str
    fields: Any
    status: str = "done"

    def field(self, name: str) -> Any:
        """One of the answer's fields by its contract name (None: absent)."""
        if isinstance(self.fields, dict):
            return self.fields.get(name)
        return None


@dataclass(frozen=True)
class SlashCommand:
    """A parsed slash command: its name and the rest of the line."""

    name: str
    argument: str


def parse_slash(text: str) -> SlashCommand | None:
    """The slash command in `text`, or None when the text is an ordinary prompt."""
    match = _COMMAND.match(text.strip())
    if match is None:
        return None
    return SlashCommand(match.group("name").lower(), (match.group("argument") or "").strip())


def usage() -> str:
    """One line listing the commands."""
    return ", ".join(command.usage for command in COMMANDS)


Owner = TypeVar("Owner")
Handler = Callable[[Owner, str], Awaitable[Any]]


class SlashHandlers(Generic[Owner]):
    """The function that runs each declared command, registered by decorating it.

    The handler takes its owner (the engine) and the words after the command, and
    answers the result's fields.
    """

    def __init__(self) -> None:
        self._handlers: dict[str, Handler[Owner]] = {}

    def handles(self, name: str) -> Callable[[Handler[Owner]], Handler[Owner]]:
        """Register the decorated function as the handler of `/name`."""
        if name not in BY_NAME:
            raise ValueError(f"/{name} is not declared in seri_lsp.slash.COMMANDS")

        def register(handler: Handler[Owner]) -> Handler[Owner]:
            self._handlers[name] = handler
            return handler

        return register

    def get(self, name: str) -> Handler[Owner] | None:
        """The handler of `/name`, or None for a command that does not exist."""
        return self._handlers.get(name)

    def names(self) -> list[str]:
        """The commands that have a handler."""
        return list(self._handlers)
