"""The slash commands an ACP client offers (`available_commands_update`), and the note
that tells the user what a command did.

The commands run like any prompt text: the client sends `/compact focus words` in a
`session/prompt` and the engine dispatches it, as it does for the LSP face.
"""

from __future__ import annotations

from typing import Any

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    UnstructuredCommandInput,
)

from seri_lsp.agent.rewind import KEPT_NOTE
from seri_lsp.context.compaction import CompactionResult
from seri_lsp.slash import COMMANDS, SlashAnswer
from seri_lsp.store.sessions import Session


def available_commands() -> AvailableCommandsUpdate:
    """The `available_commands_update` that advertises seri's slash commands (those of
    `slash.COMMANDS` offered in ACP)."""
    return AvailableCommandsUpdate(
        session_update="available_commands_update",
        available_commands=[
            AvailableCommand(
                name=command.name,
                description=command.summary,
                input=AvailableCommandInput(UnstructuredCommandInput(hint=command.argument_hint))
                if command.argument_hint
                else None,
            )
            for command in COMMANDS
            if command.in_acp
        ],
    )


def command_note(answer: SlashAnswer) -> str | None:
    """What a slash command's answer tells the user (None: its events said it already)."""
    name = answer.command
    if isinstance(answer.fields, CompactionResult):
        return None if answer.fields.compacted else answer.fields.message
    result: dict[str, Any] = answer.fields
    if name == "clear":
        return (
            f"Started a new session ({_session_id(result)}). The earlier conversation stays in "
            "seri's store; load it from the session history to go back to it."
        )
    if name == "max-turns":
        return f"Turn budget: {result.get('maxTurns')} model calls per prompt in this session."
    if name == "rewind":
        return _rewind_note(result)
    if name in ("trajectory", "cost", "context"):
        return None  # the engine shows its answer (and any warning) itself
    if name == "fork":
        forked: Session = result["session"]
        return (
            f"Forked into session {forked.id} at message {result.get('forkedAt')}: "
            f"the prompts from here go to the fork; session {forked.parent_id} stays "
            "as it was (load it from the session history to go back to it)."
        )
    if name in ("resume", "continue"):
        session: Session | None = result.get("session")
        if session is None:
            return "There is no earlier session in this project to continue."
        return f"Now in session {session.id}: {session.title or '(untitled)'}."
    return result.get("message") or f"/{name}: done."


def _session_id(result: dict[str, Any]) -> str:
    session: Session | None = result.get("session")
    return session.id if session is not None else "?"


def _rewind_note(result: dict[str, Any]) -> str:
    if result.get("message"):
        return str(result["message"])
    rewound = result.get("rewound", 0)
    lines = [f"Rewound {rewound} prompt{'s' if rewound != 1 else ''}."]
    restored = result.get("restoredFiles") or []
    if restored:
        lines.append("Files restored: " + ", ".join(map(str, restored)) + ".")
    conflicts = result.get("conflicts") or []
    if conflicts:
        lines.append(
            "Left alone, changed since by something else (`/rewind force` overwrites them): "
            + ", ".join(map(str, conflicts))
            + "."
        )
    failed = result.get("failed") or []
    if failed:
        lines.append(
            "Could not restore: "
            + "; ".join(f"{f.get('path')} ({f.get('reason')})" for f in failed)
            + "."
        )
    if result.get("conversationKept"):
        lines.append(KEPT_NOTE)
    elif rewound:
        lines.append(
            "The transcript above still shows what was removed; the model no longer sees it."
        )
    if result.get("prompt"):
        lines.append(f"The earliest prompt removed was:\n\n> {result['prompt']}")
    return "\n\n".join(lines)
