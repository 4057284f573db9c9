"""The gate every `run` tool call passes: `permissions.run`, the command rules
(`permissions.commands`, see command_rules.py), then the user's answer.

`deny` runs no command. `allow` runs every command except those a deny rule refuses (a
line deny rules cannot look at whole, unparseable or with an `eval`, is asked about when
there are deny rules).
`ask` (the default) runs a line without asking when every simple command of it matches
an allow rule (the settings', the session's, or the workspace's once agreed) and none a
deny rule; a deny match refuses the whole line; otherwise the chat's approval card (kind
`command`, with the line, its cwd and its parts) asks: "Allow once" runs it, "Allow
`<pattern>` for this session" runs it and keeps the suggested patterns for the rest of the
session's task tree, "Deny" refuses it (with the user's note, for the model to read), and
no answer refuses it as well.

Allow rules from a workspace's own settings (`workspaceAllow`, which VS Code sends apart
from the user's) are used only after the user agreed to that workspace's rules once: a
question lists them, and the agreement is kept per project in the profile
(`command-rules.json`), for exactly the rules listed (changed rules are asked again).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from seri_lsp.agent.tools import Denied
from seri_lsp.command_rules import (
    CommandRules,
    SessionRules,
    Verdict,
    decide,
    judged,
    suggested_pattern,
)
from seri_lsp.events import Activity
from seri_lsp.files import atomic_write_text
from seri_lsp.host import Host, Question, ask_user, refusal
from seri_lsp.settings import Permission

ALLOW_ONCE = "Allow once"
DENY = "Deny"
USE_WORKSPACE_RULES = "Use these rules"
IGNORE_WORKSPACE_RULES = "Don't use them"  # (a refusal to ACP's option kinds)
AGREEMENTS_NAME = "command-rules.json"


def allow_for_session(patterns: tuple[str, ...]) -> str:
    """The choice that allows `patterns` for the rest of the session."""
    return f"Allow {', '.join(f'`{p}`' for p in patterns)} for this session"


class WorkspaceAgreements:
    """Which workspaces' allow rules the user agreed to: the profile's
    `command-rules.json`, {project: [rules agreed]}, written atomically. (The same
    shape keeps the answers about workspaces' MCP servers, in `mcp-consent.json`.)"""

    def __init__(self, profile_root: Path, name: str = AGREEMENTS_NAME) -> None:
        self.path = profile_root / name

    def _read(self) -> dict[str, list[str]]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def agreed(self, project: str, rules: tuple[str, ...]) -> bool:
        return sorted(self._read().get(project, [])) == sorted(rules)

    def agree(self, project: str, rules: tuple[str, ...]) -> None:
        data = self._read()
        data[project] = sorted(rules)
        atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def forget(self, project: str) -> bool:
        """Revoke the project's agreement; whether there was one."""
        data = self._read()
        if data.pop(project, None) is None:
            return False
        atomic_write_text(self.path, json.dumps(data, indent=2, sort_keys=True) + "\n")
        return True


class CommandGate:
    """Decides, for one session's task tree, whether a command line may run."""

    def __init__(
        self,
        policy: Permission,
        host: Host,
        session_id: str | None = None,
        rules: CommandRules | None = None,
        agreements: WorkspaceAgreements | None = None,
        project: str = "",
    ) -> None:
        self.policy = policy
        self.host = host
        self.session_id = session_id
        self.rules = rules or CommandRules()
        self.agreements = agreements
        self.project = project
        self.session = SessionRules()
        # Whether this gate asked about the workspace's rules (asked once per gate).
        self._workspace_answer: bool | None = None

    async def check(self, command: str, cwd: str) -> None:
        """Return when `command` may run in `cwd` (workspace-relative, `.` for the root);
        raise `Denied` with the reason otherwise. May wait for the user."""
        if self.policy == "deny":
            raise Denied("running commands is turned off (permissions.run is 'deny')")
        extra = [*self.session.patterns, *await self._workspace_allow()]
        # Off the event loop: the parser's first use imports it (~0.2 s), and a line
        # may be long.
        verdict = await asyncio.to_thread(decide, command, self.rules, extra)
        if verdict.decision == "deny":
            raise Denied(f"a deny rule refuses this command: {verdict.reason}")
        if verdict.decision == "allow":
            return
        if self.policy == "allow" and (judged(verdict) or not self.rules.deny):
            return  # (where deny rules could not look at all of it, it is asked about)
        await self._ask(command, cwd, verdict)

    async def _workspace_allow(self) -> tuple[str, ...]:
        """The workspace's allow rules, where the user agreed to them (asked once)."""
        rules = self.rules.workspace_allow
        if not rules or self.policy != "ask":
            return ()
        agreements = self.agreements
        if agreements is not None and await asyncio.to_thread(
            agreements.agreed, self.project, rules
        ):
            return rules
        if self._workspace_answer is None:
            listed = ", ".join(f"`{r}`" for r in rules)
            answer = await ask_user(
                self.host,
                Question(
                    kind="command",
                    message=(
                        "This workspace's settings allow commands to run without asking: "
                        f"{listed}. Use these rules for this project?"
                    ),
                    choices=(USE_WORKSPACE_RULES, IGNORE_WORKSPACE_RULES),
                    session_id=self.session_id,
                    details={"workspaceRules": list(rules)},
                ),
                None,
            )
            self._workspace_answer = answer.choice == USE_WORKSPACE_RULES
            if self._workspace_answer and agreements is not None:
                await asyncio.to_thread(agreements.agree, self.project, rules)
        return rules if self._workspace_answer else ()

    async def _ask(self, command: str, cwd: str, verdict: Verdict) -> None:
        suggested = tuple(suggested_pattern(part) for part in verdict.unmatched)
        patterns = tuple(dict.fromkeys(p for p in suggested if p is not None))
        session_choice = None
        if verdict.error is None and patterns and None not in suggested:
            session_choice = allow_for_session(patterns)
        choices = (ALLOW_ONCE, *((session_choice,) if session_choice else ()), DENY)
        details: dict[str, object] = {
            "command": command,
            "cwd": cwd,
            "parts": [part.text for part in verdict.parts],
            "unmatched": [part.text for part in verdict.unmatched],
            "patterns": list(patterns) if session_choice else [],
        }
        if verdict.reason:
            details["reason"] = verdict.reason
        question = Question(
            kind="command",
            message=f"seri wants to run `{command}` in {_where(cwd)}.",
            choices=choices,
            session_id=self.session_id,
            details=details,
        )
        resume = None
        if self.session_id is not None:
            resume = Activity(self.session_id, "tool", f"run {command}")
        answer = await ask_user(self.host, question, resume)
        if answer.choice == ALLOW_ONCE:
            return
        if session_choice is not None and answer.choice == session_choice:
            self.session.add(patterns)
            return
        raise Denied(refusal(answer, "command"))


def _where(cwd: str) -> str:
    """The cwd as a question names it (`.` reads as "the workspace root")."""
    return "the workspace root" if cwd == "." else cwd
