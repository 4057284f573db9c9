"""Checks: the user's lint and test commands, run after a task that changed files.

When the model finishes a task (answers without tool calls) and the task modified files
(its subagents' changes included), each `checks` entry runs in the workspace root, one
after the other, as a subprocess of its own process group: off the event loop, within
its `timeout` (the whole group is killed when it runs over), its output kept bounded
(the first and last `OUTPUT_HEAD` / `OUTPUT_TAIL` bytes). `seri.cancel` kills a running
check the same way. Every result is recorded. The process work (shared with the `run`
tool) is `process`'s; on Windows the process tree is ended (`taskkill /T /F`).

When a check fails, its output goes back to the model as a user message (`kind:
"check"`) and the task goes on; the checks run again when the model finishes after
changing files again. After `MAX_CHECK_ROUNDS` failing rounds, or when the model
finishes without changing anything after a failure, the task ends (`failed`), naming the
checks that still fail.

A task that stops without a final answer (out of turns, or failed) after changing files
gets one round too, shown to the user only: the model is not asked again. A cancelled
task gets none.

The checks read the disk, so the files the task changed through the editor are saved
first (`Host.save_files`); those it could not save are named to the model and the user.

Running commands follows `permissions.run`: `allow`, `deny`, or `ask` (the default),
asked once per session through the editor ("Allow for this session" / "Deny").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seri_lsp.agent import process
from seri_lsp.agent.cancel import CancelScope
from seri_lsp.context.conversation import Conversation
from seri_lsp.events import Activity
from seri_lsp.host import NO_ANSWER, Host, ProgressReporter, Question, ask_user
from seri_lsp.settings import CheckSetting, Permission
from seri_lsp.store.messages import Message

MAX_CHECK_ROUNDS = 3
OUTPUT_HEAD = 3072
OUTPUT_TAIL = 3072

ALLOW_FOR_SESSION = "Allow for this session"
DENY = "Deny"


@dataclass(frozen=True)
class CheckResult:
    """How one check ran."""

    name: str
    command: str
    exit_code: int | None
    duration: float
    timed_out: bool
    output: str
    output_bytes: int
    error: str | None = None  # it could not be started

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None

    def describe(self) -> str:
        """`exited with 1 after 0.4 s`, `timed out after 120 s and was killed`, ..."""
        if self.error is not None:
            return f"could not be started: {self.error}"
        if self.timed_out:
            return f"timed out after {self.duration:.1f} s and was killed"
        if self.exit_code is not None and self.exit_code < 0:
            return f"was killed by signal {-self.exit_code} after {self.duration:.1f} s"
        return f"exited with {self.exit_code} after {self.duration:.1f} s"

    def to_record(self, round_number: int) -> dict[str, Any]:
        return {
            "name": self.name,
            "command": self.command,
            "round": round_number,
            "passed": self.passed,
            "exitCode": self.exit_code,
            "durationMs": round(self.duration * 1000),
            "timedOut": self.timed_out,
            "error": self.error,
            "output": self.output,
            "outputBytes": self.output_bytes,
        }


async def run_check(check: CheckSetting, cwd: Path) -> CheckResult:
    """Run one check to its end, its time limit, or a cancel (which kills it too)."""
    try:
        started = await process.start(check.command, cwd)
    except OSError as exc:
        return CheckResult(
            check.name, check.display(), None, 0.0, False, "", 0, exc.strerror or str(exc)
        )
    output = process.BoundedOutput(OUTPUT_HEAD, OUTPUT_TAIL)
    ended = await process.run(started, check.timeout, [output.add])
    return CheckResult(
        name=check.name,
        command=check.display(),
        exit_code=ended.exit_code,
        duration=ended.duration,
        timed_out=ended.timed_out,
        output=output.text(),
        output_bytes=output.total,
    )


class RunGate:
    """Applies `permissions.run` for one session (asked at most once per session)."""

    def __init__(self, policy: Permission, host: Host, session_id: str | None = None) -> None:
        self.policy = policy
        self.host = host
        self.session_id = session_id
        self._answer: bool | None = None

    async def check(
        self, what: str, scope: CancelScope, details: dict[str, Any] | None = None
    ) -> str | None:
        """None when the commands may run; otherwise the reason they may not."""
        if self.policy == "allow":
            return None
        if self.policy == "deny":
            return "running commands is turned off (permissions.run is 'deny')"
        if self._answer is True:
            return None
        if self._answer is False:
            return "the user denied running the checks in this session"
        question = Question(
            kind="checks",
            message=f"seri wants to run {what}.",
            choices=(ALLOW_FOR_SESSION, DENY),
            session_id=self.session_id,
            details=details or {},
        )
        answer = (await scope.run(ask_user(self.host, question))).choice
        if answer == ALLOW_FOR_SESSION:
            self._answer = True
            return None
        if answer == DENY:
            self._answer = False
            return "the user denied running the checks in this session"
        return NO_ANSWER


@dataclass(frozen=True)
class Verdict:
    """What the agent loop does after the checks: go on (`again`), or end."""

    again: bool = False
    error: str | None = None


@dataclass(frozen=True)
class Round:
    """One round of checks: the failing ones, and the files the editor held unsaved."""

    failed: list[CheckResult]
    unsaved: list[str]


class TaskChecks:
    """The checks of one task: whether they are due, the rounds, what the model hears."""

    def __init__(
        self,
        checks: tuple[CheckSetting, ...],
        gate: RunGate,
        host: Host,
        scope: CancelScope,
        cwd: Path | None,
    ) -> None:
        self.checks = checks
        self.gate = gate
        self.host = host
        self.scope = scope
        self.cwd = cwd
        self.rounds = 0
        self._modified = False
        self._failing: list[CheckResult] = []  # of the last round

    def note_modified(self) -> None:
        """A tool (or a subagent) changed a file: the checks are due at the end."""
        self._modified = True

    async def after_final_reply(
        self, conversation: Conversation, progress: ProgressReporter, editor_paths: list[str]
    ) -> Verdict:
        """Run the checks if the task changed files since they last ran.

        `editor_paths`: the files the task changed through the editor, saved first.
        """
        if not self.checks:
            return Verdict()
        if not self._modified:
            if self._failing:  # the model stopped without touching what failed
                return Verdict(error=self._still_failing("the model finished without changes"))
            return Verdict()
        self._modified = False
        done = await self._round(conversation, progress, editor_paths)
        if done is None:
            return Verdict()
        failed = self._failing = done.failed
        if not failed:
            return Verdict()
        last = self.rounds >= MAX_CHECK_ROUNDS
        content = failure_message(failed, self.rounds, last, done.unsaved)
        await conversation.append(Message(role="user", content=content, kind="check"))
        if not last:
            return Verdict(again=True)
        return Verdict(error=self._still_failing(f"after {self.rounds} rounds"))

    async def after_stop(
        self,
        conversation: Conversation,
        progress: ProgressReporter,
        status: str,
        editor_paths: list[str],
    ) -> None:
        """One round after a task that stopped without a final answer (`max_turns`, or
        `failed`) having changed files since the checks last ran: recorded and shown to
        the user; the model does not hear of it (the task is over)."""
        if not self.checks or not self._modified:
            return
        self._modified = False
        done = await self._round(conversation, progress, editor_paths)
        if done is None:
            return
        if not done.failed:
            names = ", ".join(check.name for check in self.checks)
            self.host.show("info", f"The task stopped ({status}); its checks pass: {names}.")
            return
        failing = ", ".join(f"{r.name} ({r.describe()})" for r in done.failed)
        self.host.show(
            "warning",
            f"The task stopped ({status}); its checks fail: {failing}. The model was not "
            "told; their output is in the recording (seri.trajectory.get).",
        )

    async def _round(
        self, conversation: Conversation, progress: ProgressReporter, editor_paths: list[str]
    ) -> Round | None:
        """Save what the editor holds, then run every check once and record it; None
        when the checks may not run."""
        if self.cwd is None:
            self.host.log("warning", "Checks not run: no workspace folder is open.")
            return None
        listed = ", ".join(f"{c.name} ({c.display()})" for c in self.checks)
        details = {
            "cwd": str(self.cwd),
            "checks": [{"name": c.name, "command": c.display()} for c in self.checks],
        }
        denied = await self.gate.check(f"the checks in {self.cwd}: {listed}", self.scope, details)
        if denied is not None:
            await conversation.record_event(
                "denial", {"tool": "checks", "path": str(self.cwd), "reason": denied}
            )
            if denied == NO_ANSWER:  # not a choice the user made: say it where it is seen
                self.host.show(
                    "warning",
                    f"Checks not run: {denied} (permissions.run is 'ask'). Set "
                    "permissions.run to 'allow' to run them without asking.",
                )
            else:
                self.host.log("info", f"Checks not run: {denied}.")
            return None
        unsaved = await self._save(editor_paths)
        self.rounds += 1
        failed = []
        for check in self.checks:
            progress.report(f"check {check.name}")
            self.host.emit(Activity(conversation.session_id, "checks", check.name))
            result = await self.scope.run(run_check(check, self.cwd))
            await conversation.record_event("check", result.to_record(self.rounds))
            self.host.log("info", f"Check {check.name} {result.describe()}.")
            if not result.passed:
                failed.append(result)
        return Round(failed, unsaved)

    async def _save(self, editor_paths: list[str]) -> list[str]:
        """Have the editor save the files the task changed through it; the ones it did
        not (shown to the user), as the checks' output names them."""
        if not editor_paths:
            return []
        unsaved = await self.scope.run(self.host.save_files([Path(p) for p in editor_paths]))
        if not unsaved:
            return []
        names = [self._display(path) for path in unsaved]
        self.host.show("warning", unsaved_note(names))
        return names

    def _display(self, path: Path) -> str:
        assert self.cwd is not None
        try:
            return str(path.relative_to(self.cwd))
        except ValueError:
            return str(path)

    def _still_failing(self, when: str) -> str:
        names = ", ".join(f"{r.name} ({r.describe()})" for r in self._failing)
        return f"The checks still fail {when}: {names}. Their output is in the conversation."


def unsaved_note(names: list[str]) -> str:
    """Which files the checks saw only the disk's older text of."""
    return (
        "These files were open in the editor with unsaved changes that could not be saved, "
        f"so the checks saw the older text on disk: {', '.join(names)}."
    )


def failure_message(
    failed: list[CheckResult], round_number: int, last: bool, unsaved: Sequence[str] = ()
) -> str:
    """The user message that hands failing checks back to the model."""
    lines = [f"The checks failed after your changes (round {round_number} of {MAX_CHECK_ROUNDS}):"]
    if unsaved:
        lines += ["", unsaved_note(list(unsaved))]
    for result in failed:
        fence = "```"
        while fence in result.output:
            fence += "`"
        lines += ["", f"{result.name}: `{result.command}` {result.describe()}."]
        if result.output.strip():
            lines += [fence, result.output.rstrip("\n"), fence]
        else:
            lines.append("(no output)")
    lines.append("")
    if last:
        lines.append("That was the last round: the task ends here with the checks failing.")
    else:
        lines.append("Fix what they report. They run again when you finish after changing files.")
    return "\n".join(lines)
