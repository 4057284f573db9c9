"""The gate every `run` tool call passes: `permissions.run`, then the user's answer.

`allow` runs every command, `deny` none; `ask` (the default) asks about each command
line in the chat's approval card (kind `command`, with the line and its cwd): "Allow
once" runs it, "Deny" refuses it (with the user's note, for the model to read), and no
answer refuses it as well.
"""

from __future__ import annotations

from seri_lsp.agent.tools import Denied
from seri_lsp.events import Activity
from seri_lsp.host import Host, Question, ask_user
from seri_lsp.settings import Permission

ALLOW_ONCE = "Allow once"
DENY = "Deny"
NO_ANSWER = "the user did not answer the permission request"


class CommandGate:
    """Decides, for one session's task tree, whether a command line may run."""

    def __init__(self, policy: Permission, host: Host, session_id: str | None = None) -> None:
        self.policy = policy
        self.host = host
        self.session_id = session_id

    async def check(self, command: str, cwd: str) -> None:
        """Return when `command` may run in `cwd` (workspace-relative, `.` for the root);
        raise `Denied` with the reason otherwise. May wait for the user."""
        if self.policy == "allow":
            return
        if self.policy == "deny":
            raise Denied("running commands is turned off (permissions.run is 'deny')")
        question = Question(
            kind="command",
            message=f"seri wants to run `{command}` in {cwd}.",
            choices=(ALLOW_ONCE, DENY),
            session_id=self.session_id,
            details={"command": command, "cwd": cwd},
        )
        resume = None
        if self.session_id is not None:
            resume = Activity(self.session_id, "tool", f"run {command}")
        answer = await ask_user(self.host, question, resume)
        if answer.choice == ALLOW_ONCE:
            return
        if answer.choice is None:
            raise Denied(NO_ANSWER)
        note = " ".join(answer.note.split())
        raise Denied(
            f"the user denied this command: {note}" if note else "the user denied this command"
        )
