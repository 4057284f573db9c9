"""Slash commands typed into the chat (`/compact focus words`, `/max-turns 20`, ...)."""

from __future__ import annotations

import re
from dataclasses import dataclass

COMMANDS = {
    "compact": "/compact [focus words]",
    "clear": "/clear",
    "rewind": "/rewind [n] [both|conversation|files] [force]",
    "max-turns": "/max-turns N",
    "resume": "/resume ID",
    "continue": "/continue",
    "trajectory": "/trajectory [on|off]",
    "fork": "/fork",
    "cost": "/cost",
    "context": "/context",
    "rename": "/rename TITLE",
}

# A slash command is "/" and a word, alone or followed by a space; "/src/app.py is
# broken" is a prompt about a path, not a command.
_COMMAND = re.compile(r"^/(?P<name>[A-Za-z][\w-]*)(?:\s+(?P<argument>.*))?$", re.DOTALL)


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
    return ", ".join(COMMANDS.values())
