"""The agent's tools: read, write and edit files, list folders, grep, subagents, memory.

Tools see the editor's unsaved buffers and change files through the editor when it
supports that, so buffers and undo stay right: by edits (LSP `workspace/applyEdit`; a
file the editor does not have open is also written to disk), or by whole files when
the host reads and writes them for the agent (ACP `fs/read_text_file` and
`fs/write_text_file`). Every path goes through the workspace boundary first, and writes
through the permission gate. A write that had to ask the user reads its file again once
they answer and works on that text, so what the user changed meanwhile is kept (an edit
is matched anew; a whole-file write over a changed file is refused).

The disk work (following a path's symbolic links, reading, listing, searching, writing)
runs on the tool threads (`disk.ToolThreads`), never on the event loop, so the server
keeps answering while a tool works (on a hung network mount too) and a cancel stops the
tool at once. A path is resolved in the same thread job as the disk work on it; a read
whose file turns out open in the editor is answered from the buffer instead. Files on
disk are written atomically (`seri_lsp.files`): a crash leaves the old content or the
new, never a mix.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from seri_lsp.agent import disk, search
from seri_lsp.agent.cancel import TaskCancelled
from seri_lsp.agent.disk import DiskError, LineRange, ToolThreads
from seri_lsp.agent.workspace import FileChanges, PathDenied, Workspace, WorkspacePath
from seri_lsp.events import Activity, FileChange
from seri_lsp.host import Host, Question, ask_user, refusal
from seri_lsp.limits import clean_text
from seri_lsp.settings import WritePermission
from seri_lsp.store.messages import ToolCall

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolOutcome:
    """The result of one tool call, and what it means for the session's records."""

    content: str
    is_error: bool = False
    read: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    denial: str | None = None
    edit_via: str | None = None
    change: FileChange | None = None
    # A subagent's (`task`) outcome: the files (real paths) it changed through the editor.
    subagent_editor_paths: tuple[str, ...] = ()
    # A `run` call's record (the trajectory's `command` event): what ran, how it ended.
    command: dict[str, Any] | None = None
    # An MCP tool's (seri_lsp/mcp/tools.py): the server that answered (or was to).
    server: str | None = None

    @property
    def editor_paths(self) -> tuple[str, ...]:
        """The files (real paths) this call changed through the editor, which may hold
        them unsaved: its own edit's, or a subagent's."""
        if self.edit_via == "editor" and self.change is not None:
            return (self.change.path,)
        return self.subagent_editor_paths

    @property
    def created(self) -> bool:
        """Whether this call wrote a new file."""
        return self.change is not None and self.change.old_text is None


class ToolError(Exception):
    """A tool could not do what was asked; the message goes back to the model."""


class Denied(Exception):
    """A tool call was refused (boundary or permission); the message is the reason."""

    def __init__(self, reason: str, path: str | None = None) -> None:
        super().__init__(reason)
        self.path = path


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_PATH = {"type": "string", "description": "Path relative to the workspace root."}

TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "read_file": _schema(
        "read_file",
        "Read a text file of the workspace (the editor's unsaved text if it is open). "
        "Files up to 256 KiB come whole; read bigger ones in parts with offset and limit.",
        {
            "path": _PATH,
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "The first line to read, 1-based (default 1).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": "How many lines to read from offset (default: to the end).",
            },
        },
        ["path"],
    ),
    "write_file": _schema(
        "write_file",
        "Create a file or replace its whole content.",
        {"path": _PATH, "content": {"type": "string", "description": "The new content."}},
        ["path", "content"],
    ),
    "edit": _schema(
        "edit",
        "Replace one exact occurrence of old_text with new_text in a file. old_text must "
        "match the file exactly (whitespace included) and occur exactly once.",
        {
            "path": _PATH,
            "old_text": {"type": "string", "description": "The exact text to replace."},
            "new_text": {"type": "string", "description": "The replacement."},
        },
        ["path", "old_text", "new_text"],
    ),
    "list_dir": _schema(
        "list_dir",
        "List a folder of the workspace; folders end with '/'.",
        {"path": {**_PATH, "description": "Folder relative to the workspace root ('.')."}},
        ["path"],
    ),
    "grep": _schema(
        "grep",
        "Search files for a regular expression (Python syntax); answers path:line: text. "
        "Skips .git/, what .gitignore ignores, and binary files; stops after a few seconds.",
        {
            "pattern": {"type": "string", "description": "The regular expression."},
            "path": {**_PATH, "description": "File or folder to search (default: all)."},
        },
        ["pattern"],
    ),
    "task": _schema(
        "task",
        "Hand a self-contained task to a subagent with its own conversation and a budget "
        "of 25 turns; its final answer comes back as the result. At most three subagents "
        "run at once; further calls wait their turn.",
        {"prompt": {"type": "string", "description": "Everything the subagent needs."}},
        ["prompt"],
    ),
    "remember": _schema(
        "remember",
        "Propose a line for the project's memory file. The user decides whether it is "
        "kept; it reaches the prompt from the next session on.",
        {"text": {"type": "string", "description": "One durable fact or preference."}},
        ["text"],
    ),
}


# The `run` tool (its process work: agent/commands.py): seconds by default, at most.
RUN_DEFAULT_TIMEOUT = 120
RUN_MAX_TIMEOUT = 600

_RUN_DESCRIPTION = (
    "Run one shell command line in the workspace (/bin/sh -c; cmd or PowerShell on "
    "Windows), e.g. to run the tests, a build or a linter, and get its exit code and "
    "output (stdout and stderr together; a long output is cut to its head and tail). "
    "stdin is empty: do not run interactive commands (editors, pagers, prompts, watch "
    f"modes). cwd is a folder relative to the workspace root (default the root). timeout "
    f"in seconds, default {RUN_DEFAULT_TIMEOUT}, at most {RUN_MAX_TIMEOUT}; the command and what "
    "it started are killed when it runs over. The user may be asked to allow it."
)

_RUN_PROPERTIES: dict[str, Any] = {
    "command": {"type": "string", "description": "The command line."},
    "cwd": {
        "type": "string",
        "description": "Folder to run in, relative to the workspace root (default '.').",
    },
    "timeout": {
        "type": "number",
        "minimum": 1,
        "description": f"Seconds (default {RUN_DEFAULT_TIMEOUT}, at most {RUN_MAX_TIMEOUT}).",
    },
}


def _run_schema() -> dict[str, Any]:
    return _schema("run", _RUN_DESCRIPTION, _RUN_PROPERTIES, ["command"])


WRITE_TOOLS = frozenset({"write_file", "edit"})

SubagentRunner = Callable[[str], Awaitable[ToolOutcome]]
MemoryProposer = Callable[[str], Awaitable[ToolOutcome]]
# Runs a `run` call (its arguments, its call id): `commands.CommandRunner.run`.
CommandRunning = Callable[[dict[str, Any], str, FileChanges], Awaitable[ToolOutcome]]


# A write's text before and after goes with its question up to this many characters
# each (an editor shows the diff); a larger file is described by the edit alone.
MAX_PROPOSAL_CHARS = 1_000_000
WRITE_CHOICES = ("Allow", "Allow for this session", "Deny")
DENIED_WRITE = "the user denied this write"


@dataclass(frozen=True)
class WriteProposal:
    """A write the user may be asked about: `current[start:end]` of a file becomes
    `new_text` (`current` None: the file does not exist yet and `new_text` is all of it).
    Only built into a question when one is asked, so an allowed write costs nothing."""

    tool: str
    path: str
    action: str  # create, overwrite or edit
    current: str | None
    start: int
    end: int
    new_text: str

    @property
    def proposed(self) -> str:
        """The file's whole text after the write."""
        current = self.current or ""
        return current[: self.start] + self.new_text + current[self.end :]

    def details(self) -> dict[str, Any]:
        """The question's details, as `seri/approve` sends them."""
        current = self.current or ""
        details: dict[str, Any] = {
            "tool": self.tool,
            "path": self.path,
            "action": self.action,
            "line": current.count("\n", 0, self.start) + 1,
        }
        if self.action == "edit":
            details["oldText"] = current[self.start : self.end]
            details["newText"] = self.new_text
        proposed_chars = len(current) - (self.end - self.start) + len(self.new_text)
        if max(len(current), proposed_chars) <= MAX_PROPOSAL_CHARS:
            details["current"] = self.current
            details["proposed"] = self.proposed
        else:
            details["tooLarge"] = True
        return details


class WriteGate:
    """Applies the `permissions.write` setting to each write of one session's task tree
    (a subagent's writes ask in its parent's session)."""

    def __init__(self, policy: WritePermission, host: Host, session_id: str | None = None) -> None:
        self.policy = policy
        self.host = host
        self.session_id = session_id
        self._allowed_for_session = False

    async def check(self, proposal: WriteProposal) -> bool:
        """Return if the write may go ahead (True when the user was asked, which may
        have taken a while); raise Denied with the reason otherwise (a note the user
        gave with a Deny is part of it, for the model to read)."""
        if self.policy == "allow" or self._allowed_for_session:
            return False
        if self.policy == "deny":
            raise Denied("writes are turned off (permissions.write is 'deny')")
        question = Question(
            kind="write",
            message=f"seri wants to {proposal.action} {proposal.path}.",
            choices=WRITE_CHOICES,
            session_id=self.session_id,
            details=proposal.details(),
        )
        resume = None
        if self.session_id is not None:
            resume = Activity(self.session_id, "tool", f"{proposal.tool} {proposal.path}")
        answer = await ask_user(self.host, question, resume)
        if answer.choice == "Allow for this session":
            self._allowed_for_session = True
            return True
        if answer.choice == "Allow":
            return True
        raise Denied(refusal(answer, "write"))


class ExternalTool(Protocol):
    """A tool from outside seri (an MCP server's, seri_lsp/mcp/tools.py): its name as
    the model sees it, its definition, and how to run it (never raising but for a
    cancel)."""

    @property
    def name(self) -> str: ...

    @property
    def schema(self) -> dict[str, Any]: ...

    @property
    def server(self) -> str:
        """The server it comes from (recorded with each call)."""
        ...

    async def run(self, args: Mapping[str, Any]) -> ToolOutcome: ...


class ExternalTools(Protocol):
    """Where a session's external tools come from: `prepare` before each task (the
    first fixes the session's list), then `for_session` gives that list."""

    async def prepare(self, session_id: str) -> None: ...

    def for_session(self, session_id: str) -> Sequence[ExternalTool]: ...


class Toolbox:
    """Runs tool calls against the workspace on behalf of one conversation."""

    def __init__(
        self,
        workspace: Workspace,
        host: Host,
        gate: WriteGate,
        threads: ToolThreads,
        *,
        subagent: SubagentRunner | None = None,
        remember: MemoryProposer | None = None,
        changes: FileChanges | None = None,
        run_command: CommandRunning | None = None,
        external: Sequence[ExternalTool] = (),
    ) -> None:
        # Offered after the built-in tools, sorted by name (a stable cached prefix).
        self.external = {tool.name: tool for tool in sorted(external, key=lambda t: t.name)}
        self.workspace = workspace
        self.host = host
        self.gate = gate
        self.threads = threads
        self.changes = changes if changes is not None else FileChanges()
        self._subagent_runner = subagent
        self._memory_proposer = remember
        self._run_command = run_command

    @property
    def names(self) -> list[str]:
        """The tools this conversation offers the model."""
        names = ["read_file", "write_file", "edit", "list_dir", "grep"]
        if self._subagent_runner is not None:
            names.append("task")
        if self._memory_proposer is not None:
            names.append("remember")
        if self._run_command is not None:
            names.append("run")
        return names + list(self.external)

    def schemas(self) -> list[dict[str, Any]]:
        """Tool definitions as sent in the request body."""
        return [self._schema_of(name) for name in self.names]

    def server_of(self, name: str) -> str | None:
        """The server an external tool comes from; None for a built-in tool."""
        tool = self.external.get(name)
        return tool.server if tool is not None else None

    def _schema_of(self, name: str) -> dict[str, Any]:
        if name in self.external:
            return self.external[name].schema
        return _run_schema() if name == "run" else TOOL_SCHEMAS[name]

    async def run(self, call: ToolCall) -> ToolOutcome:
        """Run one call; every failure becomes an error result, never an exception."""
        args = call.parsed_arguments()
        if args is None:
            return ToolOutcome(
                f"The arguments of {call.name} are not a JSON object: {call.arguments[:200]}",
                is_error=True,
            )
        if call.name not in self.names:
            return ToolOutcome(
                f"There is no tool named {call.name!r}; available: {', '.join(self.names)}.",
                is_error=True,
            )
        try:
            outcome: ToolOutcome
            if call.name in self.external:
                outcome = await self.external[call.name].run(args)
            elif call.name == "run":
                assert self._run_command is not None
                outcome = await self._run_command(args, call.id, self.changes)
            else:
                outcome = await getattr(self, f"_{call.name}")(args)
        except Denied as exc:
            return ToolOutcome(f"Denied: {clean_text(str(exc))}.", is_error=True, denial=str(exc))
        except (ToolError, DiskError, search.PatternError) as exc:
            return ToolOutcome(f"Error: {clean_text(str(exc))}", is_error=True)
        except OSError as exc:
            reason = clean_text(str(exc.strerror or exc))
            return ToolOutcome(f"Error: {reason} ({call.name}).", is_error=True)
        except TaskCancelled:  # (a cancel is no failure of the tool)
            raise
        except Exception as exc:  # a bug, or input nobody foresaw: a failed call, not a failed task
            logger.exception("The %s tool failed unexpectedly", call.name)
            reason = clean_text(f"{type(exc).__name__}: {exc}")
            return ToolOutcome(f"Error: {call.name} failed unexpectedly ({reason}).", is_error=True)
        # Names on disk and editor buffers may hold text that is not valid Unicode (a
        # file name that is not UTF-8): what is stored and sent must be.
        return replace(outcome, content=clean_text(outcome.content))

    # --- the tools ----------------------------------------------------------------

    async def _read_file(self, args: dict[str, Any]) -> ToolOutcome:
        lines = _line_range(args)
        path = args.get("path")
        if lines is None:
            target, found = await self._locate(path, disk.read_whole, defer=True)
        else:
            target, found = await self._locate(path, disk.read_range, lines, defer=True)
        text = await self.host.read_file(target.real)
        if text is None:
            text = _unless_failed(found)
        elif lines is not None:
            text = disk.range_of_text(text, target.display, lines)
        elif len(text) > disk.MAX_READ_CHARS:
            size = f"{len(text)} characters"
            raise disk.too_big(target.display, size, disk.text_line_count(text))
        return ToolOutcome(text, read=(target.display,))

    async def _write_file(self, args: dict[str, Any]) -> ToolOutcome:
        raw = args.get("path")
        target, found = await self._locate(raw, disk.read_current, defer=True)
        content = _required_text(args, "content", allow_empty=True)
        data = _encoded(content, "content", target)
        current, is_open = await self._current(target, found)
        verb = "create" if current is None else "overwrite"
        end = len(current or "")
        proposal = WriteProposal("write_file", target.display, verb, current, 0, end, content)
        if await self._allow_write(proposal, target):
            seen = current
            current, is_open = await self._read_again(raw, target)
            if current != seen:
                if seen is None:
                    raise _changed_meanwhile(target, " (it was created)")
                raise _changed_meanwhile(target, " (it was deleted)" if current is None else "")
        await self.changes.before(target, current)
        if current is None:
            via = await self._create(target, content, data)
        else:
            via = await self._replace(target, current, is_open, 0, len(current), content)
        action = "Created" if current is None else "Wrote"
        return ToolOutcome(
            f"{action} {target.display} ({len(data)} bytes).",
            modified=(target.display,),
            edit_via=via,
            change=FileChange(str(target.real), current, content),
        )

    async def _edit(self, args: dict[str, Any]) -> ToolOutcome:
        raw = args.get("path")
        target, found = await self._locate(raw, disk.read_current, defer=True)
        old_text = _required_text(args, "old_text")
        new_text = _required_text(args, "new_text", allow_empty=True)
        _encoded(new_text, "new_text", target)
        current, is_open = await self._current(target, found)
        if current is None:
            raise ToolError(f"{target.display} does not exist.")
        count = current.count(old_text)
        if count == 0:
            raise ToolError(
                f"old_text was not found in {target.display}; read the file and copy the "
                "text exactly, whitespace included."
            )
        if count > 1:
            raise ToolError(
                f"old_text occurs {count} times in {target.display}; include more "
                "surrounding text so it matches exactly once."
            )
        start = current.index(old_text)
        end = start + len(old_text)
        proposal = WriteProposal("edit", target.display, "edit", current, start, end, new_text)
        if await self._allow_write(proposal, target):
            # The match is made again on the text as it is now.
            current, is_open = await self._read_again(raw, target)
            if current is None:
                raise _changed_meanwhile(target, " (it was deleted)")
            count = current.count(old_text)
            if count != 1:
                now = "no longer holds old_text" if count == 0 else f"holds old_text {count} times"
                raise _changed_meanwhile(target, f" and now {now}")
        await self.changes.before(target, current)
        start = current.index(old_text)
        end = start + len(old_text)
        via = await self._replace(target, current, is_open, start, end, new_text)
        line = current.count("\n", 0, start) + 1
        changed = current[:start] + new_text + current[end:]
        return ToolOutcome(
            f"Edited {target.display} at line {line}.",
            modified=(target.display,),
            edit_via=via,
            change=FileChange(str(target.real), current, changed, line),
        )

    async def _list_dir(self, args: dict[str, Any]) -> ToolOutcome:
        _, listing = await self._locate(args.get("path") or ".", disk.list_folder)
        return ToolOutcome(listing)

    async def _grep(self, args: dict[str, Any]) -> ToolOutcome:
        # Compiled on the tool thread too: a costly pattern must not stall the server.
        _, found = await self._locate(
            args.get("path") or ".",
            _grep_in,
            _required_text(args, "pattern"),
            self.workspace,
            self.host.open_documents(),
            budget=search.GREP_TIME_BUDGET.seconds(),
        )
        return ToolOutcome(found)

    async def _task(self, args: dict[str, Any]) -> ToolOutcome:
        assert self._subagent_runner is not None
        return await self._subagent_runner(_required_text(args, "prompt"))

    async def _remember(self, args: dict[str, Any]) -> ToolOutcome:
        assert self._memory_proposer is not None
        return await self._memory_proposer(_required_text(args, "text"))

    async def append_line(self, path: Path, line: str) -> WorkspacePath:
        """Add `line` at the end of a workspace file (created if missing) as the write
        tools change files: through the editor when it has the file open or writes files,
        else atomically on disk, into the task's checkpoint. No permission is asked (the
        caller asked its own question). Denied when the path leads outside the
        workspace, ToolError when the write fails."""
        target, found = await self._locate(str(path), disk.read_current, defer=True)
        current, is_open = await self._current(target, found)
        await self.changes.before(target, current)
        if current is None:
            text = f"{line}\n"
            await self._create(target, text, _encoded(text, "the new text", target))
        else:
            separator = "" if not current or current.endswith("\n") else "\n"
            end = len(current)
            await self._replace(target, current, is_open, end, end, f"{separator}{line}\n")
        return target

    # --- helpers --------------------------------------------------------------------

    async def _locate(
        self,
        raw: object,
        work: Callable[..., Any],
        *args: Any,
        defer: bool = False,
        budget: float | None = None,
    ) -> tuple[WorkspacePath, Any]:
        """Where a model-supplied path leads, and `work(real, display, *args)` done on
        it, in one job on a tool thread (following symbolic links reads the disk too).
        Denied when the path is outside the workspace. With `defer`, the work's disk
        failure comes back as its value instead (see `_unless_failed`): the editor's
        buffer, looked up next, may stand in for the file."""
        try:
            return await self.threads.run(
                _locate_then, self.workspace, raw, work, args, defer, budget=budget
            )
        except PathDenied as exc:
            raise Denied(str(exc), raw if isinstance(raw, str) else None) from exc

    async def _current(self, target: WorkspacePath, found: Any) -> tuple[str | None, bool]:
        """The file's text (the editor's buffer if open, else what `found` read from
        disk), and whether it is open."""
        text = await self.host.read_file(target.real)
        if text is not None:
            return text, True
        return _unless_failed(found), False

    async def _allow_write(self, proposal: WriteProposal, target: WorkspacePath) -> bool:
        """Pass the write gate; True when the user was asked (the file may have changed
        while they were)."""
        try:
            return await self.gate.check(proposal)
        except Denied as exc:
            raise Denied(str(exc), target.display) from exc

    async def _read_again(self, raw: object, target: WorkspacePath) -> tuple[str | None, bool]:
        """The file's text and whether it is open, read again as at first (the path
        resolved anew): what the write must be computed from once the user has answered,
        for they may have changed the file meanwhile."""
        again, found = await self._locate(raw, disk.read_current, defer=True)
        if again.real != target.real:
            raise _changed_meanwhile(target, f" (it now leads to {again.display})")
        return await self._current(again, found)

    async def _replace(
        self,
        target: WorkspacePath,
        current: str,
        was_open: bool,
        start: int,
        end: int,
        new_text: str,
    ) -> str:
        """Change an existing file: through the editor when it can, else on disk."""
        changed = current[:start] + new_text + current[end:]
        data = _encoded(changed, "the new text", target)
        if self.host.writes_files:
            await self._write_through_host(target, changed)
            await self.changes.after(target, changed)
            return "editor"
        if self.host.can_apply_edits:
            result = await self.host.apply_edit(target.real, current, start, end, new_text)
            if not result.applied:
                raise ToolError(
                    f"the editor refused the change to {target.display}: {result.reason}"
                )
            if was_open:
                await self.changes.after(target, changed)
                return "editor"
            # The editor now holds the change in a buffer the user never opened; write the
            # file too, so the disk (and every other tool) sees the same text.
            await self.threads.run(disk.write_file, target.real, data)
            await self.changes.after(target, changed)
            return "editor+disk"
        await self.threads.run(disk.write_file, target.real, data)
        await self.changes.after(target, changed)
        return "disk"

    async def _create(self, target: WorkspacePath, content: str, data: bytes) -> str:
        """Create a new file: through the editor when it writes files, else on disk."""
        if self.host.writes_files:
            # The editor may not create folders; they are made here, inside the workspace.
            await self.threads.run(disk.make_parents, target.real)
            await self._write_through_host(target, content)
            via = "editor"
        else:
            await self.threads.run(disk.write_file, target.real, data)
            via = "disk"
        await self.changes.after(target, content)
        return via

    async def _write_through_host(self, target: WorkspacePath, text: str) -> None:
        result = await self.host.write_file(target.real, text)
        if not result.applied:
            raise ToolError(f"the editor refused to write {target.display}: {result.reason}")


def _locate_then(
    workspace: Workspace,
    raw: object,
    work: Callable[..., Any],
    args: tuple[Any, ...],
    defer: bool,
    *,
    stop: disk.Stop,
) -> tuple[WorkspacePath, Any]:
    """On a tool thread: resolve `raw` in the workspace, then do `work` on it. With
    `defer`, a DiskError or OSError of the work is returned, not raised."""
    target = workspace.resolve(raw)
    try:
        return target, work(target.real, target.display, *args, stop=stop)
    except (DiskError, OSError) as exc:
        if not defer:
            raise
        return target, _Failed(exc)


@dataclass(frozen=True)
class _Failed:
    """A disk read that failed, held until it is known whether the editor's buffer
    stands in for the file."""

    error: DiskError | OSError


def _unless_failed(found: Any) -> Any:
    """What a deferred disk read found; its failure raised."""
    if isinstance(found, _Failed):
        raise found.error
    return found


def _grep_in(
    real: Path,
    display: str,
    pattern: str,
    workspace: Workspace,
    open_documents: dict[Path, str],
    *,
    stop: disk.Stop,
) -> str:
    """grep for `pattern` (compiled here) under a resolved path (on a tool thread)."""
    compiled = search.compile_pattern(pattern)
    root = workspace.real_root_of(real)
    scope = search.GrepScope(
        target=real,
        root=root if root is not None else real,
        contains=workspace.contains,
        relative=workspace.relative,
        open_documents=open_documents,
    )
    return search.grep(compiled, scope, stop=stop)


def _changed_meanwhile(target: WorkspacePath, detail: str) -> ToolError:
    """The error of a write whose file changed while the user was asked to allow it."""
    return ToolError(
        f"{target.display} changed while the user was asked to allow this write{detail}; "
        f"nothing was written. Read {target.display} again and redo the change on its "
        "new text."
    )


def _required_text(args: dict[str, Any], name: str, *, allow_empty: bool = False) -> str:
    value = args.get(name)
    if not isinstance(value, str) or (not allow_empty and not value):
        raise ToolError(f"the argument {name!r} must be a non-empty string.")
    return value


def _line_range(args: dict[str, Any]) -> LineRange | None:
    """read_file's offset and limit (None when neither is given)."""
    values = {}
    for name in ("offset", "limit"):
        value = args.get(name)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ToolError(f"the argument {name!r} must be a whole number of at least 1.")
        values[name] = value
    if not values:
        return None
    return LineRange(offset=values.get("offset", 1), limit=values.get("limit"))


def _encoded(text: str, name: str, target: WorkspacePath) -> bytes:
    """`text` as UTF-8; ToolError (nothing written) if it holds what UTF-8 cannot carry."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start : exc.end].encode("unicode_escape").decode("ascii")
        what = f"the argument {name!r}" if not name.startswith("the ") else name
        raise ToolError(
            f"{what} cannot be written as UTF-8: it holds a lone surrogate ({bad}) at "
            f"character {exc.start}, half of a character that needs two. {target.display} "
            "was not changed; send the text again with whole characters."
        ) from None
