"""The `seri-lsp` command: the language server (default) and terminal subcommands.

seri-lsp [--stdio | --tcp --port N] [--profile-root DIR] [--max-turns N]
         [--continue | --resume ID]
seri-lsp sessions [--all] [--json]
seri-lsp show ID [--json]
seri-lsp search QUERY... [--all] [--limit N] [--json]
seri-lsp export ID [--format markdown|json] [-o FILE]
seri-lsp delete ID [--yes]
seri-lsp import FILE [--workspace DIR]
seri-lsp run "PROMPT" [--continue | --resume ID] [--max-turns N]
seri-lsp trajectory list [--json] [--session ID] [--limit N]
seri-lsp trajectory show ID [--json]
seri-lsp trajectory diff A B [--json]
seri-lsp acp [--profile-root DIR] [--max-turns N]

Flags given before the subcommand count for it too (`seri-lsp --max-turns 5 run ...`).
Every error is printed once, on stderr, as `seri-lsp: <message>`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from seri_lsp import __version__
from seri_lsp.context.reports import spend_words
from seri_lsp.engine import Engine, PromptOutcome
from seri_lsp.errors import InvalidArgument, SeriError, SessionHeld
from seri_lsp.events import Delta, Event, MessageStored
from seri_lsp.files import atomic_write_text
from seri_lsp.host import Host, Level
from seri_lsp.limits import (
    DEFAULT_SEARCH_LIMIT,
    EXPORT_FORMATS,
    MAX_BUNDLE_BYTES,
    MAX_LIST_LIMIT,
    MAX_PROMPT_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_TURNS,
    check_session_id,
    check_text,
    parse_whole_number,
)
from seri_lsp.lsp.wire import to_wire
from seri_lsp.profile import DB_NAME, ensure_profile_root, resolve_profile_root
from seri_lsp.settings import load_settings
from seri_lsp.signals import on_stop_signals
from seri_lsp.slash import SlashAnswer
from seri_lsp.store import search
from seri_lsp.store.database import Database, StoreError
from seri_lsp.store.legacy import find_pending, import_files
from seri_lsp.store.locks import SessionLocks
from seri_lsp.store.messages import Message
from seri_lsp.store.sessions import Session, SessionStore
from seri_lsp.store.trajectories import TrajectoryStore
from seri_lsp.trajectory import view as trajectory_view


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    # Given before the subcommand, after it, or not at all (the last given wins).
    args.profile_root = getattr(args, "profile_root", None)
    args.log_level = getattr(args, "log_level", "warning")
    if args.continue_ and args.resume is not None:
        parser.error("--continue and --resume cannot be used together")
    if args.command in (
        "sessions",
        "show",
        "search",
        "export",
        "delete",
        "import",
        "trajectory",
        "acp",
    ) and (args.continue_ or args.resume is not None):
        parser.error(
            "--continue and --resume apply to the language server and to `run` "
            "(an ACP editor opens sessions itself)"
        )
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        if args.command == "sessions":
            return _sessions(args)
        if args.command == "show":
            return _show(args)
        if args.command == "search":
            return _search(args)
        if args.command == "export":
            return _export(args)
        if args.command == "delete":
            return _delete(args)
        if args.command == "import":
            return _import(args)
        if args.command == "run":
            return asyncio.run(_run(args))
        if args.command == "trajectory":
            return _trajectory(args)
        if args.command == "acp":
            return _acp(args)
        return _serve(args)
    except (StoreError, SeriError) as exc:
        print(f"seri-lsp: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a profile root that is a file, or cannot be made
        print(f"seri-lsp: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("seri-lsp: interrupted.", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--profile-root",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="profile folder holding seri.db (default: $SERI_PROFILE_ROOT or the user data dir)",
    )
    common.add_argument(
        "--log-level",
        default=argparse.SUPPRESS,
        choices=["debug", "info", "warning", "error"],
        help="how much to log on stderr",
    )

    parser = argparse.ArgumentParser(
        prog="seri-lsp",
        description="seri's session-and-context engine, served over the Language Server Protocol.",
        parents=[common],
    )
    # Not `set_defaults` for the common flags: it would change the defaults of the very
    # arguments the subcommands share (`parents`), and a subcommand would then put its
    # default back over a flag given before it. `main` fills in what was not given.
    parser.set_defaults(command=None)
    parser.add_argument("--version", action="version", version=f"seri-lsp {__version__}")
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (default)")
    transport.add_argument("--tcp", action="store_true", help="serve on a TCP port")
    parser.add_argument("--host", default="127.0.0.1", help="TCP host (with --tcp)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (with --tcp)")
    parser.add_argument(
        "--max-turns",
        type=_turns,
        metavar="N",
        help=f"cap model turns per task, 1 to {MAX_TURNS} (default 500)",
    )
    opening = parser.add_mutually_exclusive_group()
    opening.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="open the project's latest session when the editor connects",
    )
    opening.add_argument(
        "--resume", metavar="ID", help="open this session when the editor connects"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    sessions = commands.add_parser("sessions", parents=[common], help="list sessions")
    sessions.add_argument("--all", action="store_true", help="every project, not just this one")
    sessions.add_argument("--json", action="store_true", help="print JSON")
    sessions.add_argument("--project", metavar="DIR", help="the project (default: this folder)")

    show = commands.add_parser("show", parents=[common], help="print one conversation")
    show.add_argument("session_id", metavar="ID", help="session id (or a unique prefix)")
    show.add_argument("--json", action="store_true", help="print JSON")

    finding = commands.add_parser(
        "search", parents=[common], help="find the messages of stored sessions that match words"
    )
    finding.add_argument(
        "query", metavar="QUERY", nargs="+", help='words (all must match), "a phrase", a path'
    )
    finding.add_argument("--all", action="store_true", help="every project, not just this one")
    finding.add_argument(
        "--limit",
        type=_search_limit,
        metavar="N",
        default=DEFAULT_SEARCH_LIMIT,
        help=f"at most N hits, 1 to {MAX_SEARCH_LIMIT} (default {DEFAULT_SEARCH_LIMIT})",
    )
    finding.add_argument("--json", action="store_true", help="print the hits as JSON")
    finding.add_argument("--project", metavar="DIR", help="the project (default: this folder)")

    exporting = commands.add_parser(
        "export",
        parents=[common],
        help="write a session as markdown (to read) or as a JSON bundle (to import elsewhere)",
    )
    exporting.add_argument("session_id", metavar="ID", help="session id (or a unique prefix)")
    exporting.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        help="markdown or json (default: from -o's extension, .json for json; else markdown)",
    )
    exporting.add_argument("-o", "--output", metavar="FILE", help="write here, not to stdout")

    deleting = commands.add_parser(
        "delete",
        parents=[common],
        help="delete a session for good, with its checkpoints, recordings and subagents",
    )
    deleting.add_argument("session_id", metavar="ID", help="session id (or a unique prefix)")
    deleting.add_argument(
        "-y", "--yes", action="store_true", help="do not ask (needed without a terminal)"
    )

    importing = commands.add_parser(
        "import", parents=[common], help="import an exported JSON bundle as a new session"
    )
    importing.add_argument("file", metavar="FILE", help="a bundle made by `seri-lsp export`")
    importing.add_argument(
        "--workspace", metavar="DIR", help="the project to import into (default: here)"
    )

    run = commands.add_parser("run", parents=[common], help="run one prompt without an editor")
    run.add_argument("prompt", metavar="PROMPT")
    # SUPPRESS: not given here, the same flag before `run` still counts.
    which = run.add_mutually_exclusive_group()
    which.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        default=argparse.SUPPRESS,
        help="latest session",
    )
    which.add_argument("--resume", metavar="ID", default=argparse.SUPPRESS, help="a given session")
    run.add_argument(
        "--max-turns",
        type=_turns,
        metavar="N",
        default=argparse.SUPPRESS,
        help=f"cap model turns, 1 to {MAX_TURNS}",
    )
    run.add_argument("--workspace", metavar="DIR", help="the project folder (default: here)")

    trajectory = commands.add_parser(
        "trajectory", parents=[common], help="read the recordings of runs (list, show, diff)"
    )
    reading = trajectory.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = reading.add_parser("list", parents=[common], help="recordings, newest first")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument("--session", metavar="ID", help="only this session's recordings")
    listing.add_argument("--limit", type=_limit, metavar="N", help="at most N recordings")
    showing = reading.add_parser(
        "show", parents=[common], help="a recording: its header, then its events"
    )
    showing.add_argument(
        "recording", metavar="ID", help="recording id, or a session id (its latest recording)"
    )
    showing.add_argument("--json", action="store_true", help="JSON lines: header, then events")
    diffing = reading.add_parser(
        "diff", parents=[common], help="what differs between two runs, and their totals"
    )
    diffing.add_argument("a", metavar="A", help="recording (or session) id")
    diffing.add_argument("b", metavar="B", help="recording (or session) id")
    diffing.add_argument("--json", action="store_true", help="print JSON")

    acp = commands.add_parser(
        "acp",
        parents=[common],
        help="serve the Agent Client Protocol on stdin/stdout (Zed, CodeCompanion, avante)",
    )
    # SUPPRESS: not given here, the same flag before `acp` still counts.
    acp.add_argument(
        "--max-turns",
        type=_turns,
        metavar="N",
        default=argparse.SUPPRESS,
        help=f"cap model turns per task, 1 to {MAX_TURNS} (default 500)",
    )
    return parser


def _whole_number(flag: str, maximum: int) -> Callable[[str], int]:
    """An argparse type: a whole number from 1 to `maximum`, refused in `flag`'s words."""

    def parse(text: str) -> int:
        try:
            return parse_whole_number(flag, text, 1, maximum)
        except InvalidArgument as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag} ")) from None

    return parse


_limit = _whole_number("--limit", MAX_LIST_LIMIT)
_search_limit = _whole_number("--limit", MAX_SEARCH_LIMIT)
_turns = _whole_number("--max-turns", MAX_TURNS)


TERMINAL_NOTICE = (
    "seri-lsp: this is a language server: it speaks LSP (JSON-RPC) on stdin/stdout and is "
    "started by an editor (see editors/ in the seri-lsp repository); `seri-lsp run PROMPT` "
    "works in a terminal. Press Ctrl-C to quit."
)


def _serve(args: argparse.Namespace) -> int:
    # Start-up makes a few hundred thousand objects that live as long as the server (the
    # modules, the LSP types). The garbage collector walked them all at every full
    # collection, a tenth of the start-up: they are moved out of its way (gc.freeze),
    # those loaded so far before the LSP types load, those after once the server is
    # built, which keeps every later collection cheap too. (Disabling the collector
    # meanwhile would save a little more time but leave 9 MB of garbage in the heap.)
    gc.freeze()
    from seri_lsp.lsp.server import ServerOptions, create_server

    server = create_server(
        ServerOptions(
            profile_root=args.profile_root,
            max_turns=args.max_turns,
            continue_latest=args.continue_,
            resume=args.resume,
        )
    )
    gc.freeze()
    if args.tcp:
        code = server.serve_tcp(args.host, args.port)
    else:
        # Said once Ctrl-C stops the server cleanly, so a Ctrl-C right after it does.
        code = server.serve_stdio(ready=_say_what_this_is if sys.stdin.isatty() else None)
    # The store is closed. End now: a thread stuck in a system call (a FIFO being read,
    # a slow name lookup) must not keep a stopped server alive.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _say_what_this_is() -> None:
    print(TERMINAL_NOTICE, file=sys.stderr, flush=True)


def _acp(args: argparse.Namespace) -> int:
    from seri_lsp.acp.agent import AgentOptions
    from seri_lsp.acp.server import serve

    if sys.stdin.isatty():
        print(
            "seri-lsp acp: an ACP agent; it speaks JSON-RPC on stdin/stdout and is started by "
            "an editor (Zed, CodeCompanion.nvim, avante.nvim). Press Ctrl-D to quit.",
            file=sys.stderr,
            flush=True,
        )
    code = serve(AgentOptions(profile_root=args.profile_root, max_turns=args.max_turns))
    # Every session is closed. End now: a tool thread stuck in a system call (a FIFO
    # being read) must not keep the agent alive after its client has gone. The client may
    # have closed stdout (the pipe's transport then closed sys.stdout): nothing to flush.
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(ValueError, OSError):
            stream.flush()
    os._exit(code)


def _open_store(args: argparse.Namespace) -> SessionStore:
    """The profile's store, with any legacy files not yet imported brought in first."""
    root = ensure_profile_root(resolve_profile_root(args.profile_root, None))
    store = SessionStore(Database.open(root / DB_NAME))
    pending, _ = find_pending(root, store)
    if pending:
        for line in import_files(pending, store).summary_lines():
            print(f"seri-lsp: {line}", file=sys.stderr)
    return store


def _here(value: str | None) -> str:
    return os.path.realpath(value or os.getcwd())


def _sessions(args: argparse.Namespace) -> int:
    store = _open_store(args)
    infos = store.recent(None if args.all else _here(args.project))
    if args.json:
        default_turns = _default_turns(args)
        print(json.dumps(to_wire([info.session(default_turns) for info in infos]), indent=2))
        return 0
    if not infos:
        print(
            "No sessions." if args.all else "No sessions in this project (--all lists every one)."
        )
        return 0
    for info in infos:
        project = f"  {info.project}" if args.all else ""
        count = f"{info.message_count:>4} msgs"
        spent = spend_words(info.spend)
        print(f"{info.id}  {info.updated_at[:19]}  {count}  {spent:>12}  {info.title}{project}")
    return 0


def _show(args: argparse.Namespace) -> int:
    check_session_id("ID", args.session_id)
    store = _open_store(args)
    info = store.resolve(args.session_id)
    messages = store.messages(info.id)
    if args.json:
        payload = {"session": info.session(_default_turns(args)), "messages": messages}
        print(json.dumps(to_wire(payload), indent=2, ensure_ascii=False))
        return 0
    print(f"# {info.title or '(untitled)'}  [{info.id}]  {info.project}")
    for message in messages:
        print(format_message(message))
    return 0


def _search(args: argparse.Namespace) -> int:
    """`seri-lsp search`: as `seri.session.search`, `--json` printing its result."""
    expression = search.parse_query(" ".join(args.query))
    store = _open_store(args)
    if store.db.search_unavailable is not None:
        raise search.SearchUnavailable(store.db.search_unavailable)
    hits: list[search.SearchHit] = []
    more = False
    if expression is not None:
        start = search.backlog(store.db)
        for done in search.index_backlog(store.db):
            if not done.finished:
                print(
                    f"seri-lsp: indexing the stored sessions for search "
                    f"({done.percentage(start.done)}%)",
                    file=sys.stderr,
                    flush=True,
                )
        project = None if args.all else _here(args.project)
        hits, more = search.search(store.db, expression, project, args.limit)
    if args.json:
        print(json.dumps(to_wire(search.SearchPage(hits, more)), indent=2, ensure_ascii=False))
        return 0
    if not hits:
        print("No match." if args.all else "No match in this project (--all searches every one).")
    for hit in hits:
        where = f"  {hit.project_path}" if args.all else ""
        print(f"{hit.session_id}  {hit.created_at[:19]}  {hit.role:<9}  {hit.title}{where}")
        print(f"    {hit.snippet}")
    if more:
        print(f"(more than {len(hits)}; --limit shows more)")
    return 0


def _export(args: argparse.Namespace) -> int:
    """`seri-lsp export`: as `seri.session.export`, to stdout or a file."""
    from seri_lsp.export.bundle import export_session
    from seri_lsp.export.redaction import configured_secrets

    check_session_id("ID", args.session_id)
    export_format = args.format
    if export_format is None:
        wants_json = args.output is not None and args.output.lower().endswith(".json")
        export_format = "json" if wants_json else "markdown"
    store = _open_store(args)
    info = store.resolve(args.session_id)
    root = resolve_profile_root(args.profile_root, None)
    secrets = configured_secrets(load_settings(root)[0].provider.api_key)
    exported = export_session(store, info.id, export_format, secrets)
    if exported.redactions:
        print(f"seri-lsp: {exported.redactions} secret(s) replaced by [redacted].", file=sys.stderr)
    if args.output is None:
        sys.stdout.write(exported.text)
        return 0
    atomic_write_text(args.output, exported.text)
    print(f"Exported session {info.id} ({export_format}) to {args.output}.")
    return 0


def _delete(args: argparse.Namespace) -> int:
    """`seri-lsp delete ID`: as `seri.session.delete`, after a question (or `--yes`). A
    session open in an editor (another seri process) is refused; `/clear` never deletes."""
    from seri_lsp.store.deletion import SubagentSession, delete_session

    check_session_id("ID", args.session_id)
    root = resolve_profile_root(args.profile_root, None)
    store = _open_store(args)
    info = store.resolve(args.session_id)
    if info.parent_id is not None:
        raise SubagentSession(info.id, info.parent_id)
    title = info.title or "untitled"
    if not args.yes:
        if not sys.stdin.isatty():
            raise InvalidArgument("--yes", "Not deleting: there is no terminal to ask; add --yes.")
        answer = input(
            f"Delete session {info.id} ({title}, {_count(info.message_count, 'message')}) "
            "and everything stored with it? [y/N] "
        )
        if answer.strip().lower() not in ("y", "yes"):
            print("Not deleted.")
            return 1
    locks = SessionLocks(root)
    holder = locks.acquire(info.id)
    if holder is not None:
        raise SessionHeld(info.id, holder.describe())
    try:
        deletion = delete_session(store.db, info.id)
    except BaseException:
        locks.release(info.id)
        raise
    locks.forget(info.id)
    extra = ""
    if deletion.subagent_sessions:
        extra = f" and {_count(deletion.subagent_sessions, 'subagent session')}"
    print(f"Deleted session {info.id} ({title}): {_count(deletion.messages, 'message')}{extra}.")
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _import(args: argparse.Namespace) -> int:
    """`seri-lsp import FILE`: as `seri.session.import`, into this folder's project."""
    from seri_lsp.export.bundle import import_bundle, read_bundle

    path = Path(args.file)
    try:
        size = path.stat().st_size
        if size > MAX_BUNDLE_BYTES:
            raise InvalidArgument(
                "FILE",
                f"{path} is {size / 2**20:,.1f} MiB; at most {MAX_BUNDLE_BYTES // 2**20} MiB "
                "can be imported",
            )
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidArgument("FILE", f"{path} is not UTF-8 text, so not a bundle") from None
    except OSError as exc:
        raise InvalidArgument("FILE", f"{path} cannot be read: {exc.strerror}") from None
    bundle = read_bundle(text)
    project = _here(args.workspace)
    store = _open_store(args)
    info, made = import_bundle(store, bundle, project)
    if made:
        print(f"Imported as session {info.id} ({info.title or 'untitled'}) in {project}.")
    else:
        print(
            f"Already imported: session {info.id} ({info.title or 'untitled'}) in {project} "
            "holds this bundle."
        )
    return 0


def _trajectory(args: argparse.Namespace) -> int:
    """`seri-lsp trajectory list|show|diff`: recordings, read only."""
    for given in (getattr(args, "session", None), getattr(args, "recording", None)):
        if given is not None:
            check_session_id("ID", given)
    for given in (getattr(args, "a", None), getattr(args, "b", None)):
        if given is not None:
            check_session_id("ID", given)
    store = _open_store(args)
    recordings = TrajectoryStore(store.db)
    if args.action == "list":
        session = store.resolve(args.session).id if args.session else None
        infos = recordings.recordings(session, args.limit)
        if args.json:
            print(json.dumps(to_wire(infos), indent=2, ensure_ascii=False))
        elif not infos:
            print("No recordings.")
        else:
            print("\n".join(trajectory_view.list_lines(infos)))
        return 0
    if args.action == "show":
        trajectory_id = recordings.resolve(args.recording)
        info = recordings.info(trajectory_id)
        assert info is not None
        events = recordings.events(trajectory_id)
        if args.json:
            print(json.dumps(info.header, ensure_ascii=False))
            for event in events:
                print(json.dumps(to_wire(event), ensure_ascii=False))
        else:
            print("\n".join(trajectory_view.show_lines(info, events)))
        return 0
    sides = []
    for given in (args.a, args.b):
        trajectory_id = recordings.resolve(given)
        info = recordings.info(trajectory_id)
        assert info is not None
        sides.append((info, recordings.events(trajectory_id)))
    report = trajectory_view.diff_report(*sides[0], *sides[1])
    if args.json:
        print(json.dumps(to_wire(report), indent=2, ensure_ascii=False))
    else:
        print("\n".join(trajectory_view.diff_lines(report)))
    return 0


def _default_turns(args: argparse.Namespace) -> int:
    root = resolve_profile_root(args.profile_root, None)
    return load_settings(root)[0].max_turns


def format_message(message: Message) -> str:
    """One message as the terminal shows it."""
    if message.role == "user":
        label = {"recap": "recap", "rule": "rule"}.get(message.kind or "", "you")
        return f"\n[{label}] {message.content}"
    if message.role == "tool":
        status = "error" if message.is_error else "result"
        text = message.content if len(message.content) <= 400 else message.content[:400] + " …"
        return f"  <- {status}: {text}"
    lines = [f"\n[seri] {message.content}" if message.content else ""]
    lines += [f"  -> {call.name} {call.arguments}" for call in message.tool_calls]
    return "\n".join(line for line in lines if line)


class TerminalHost(Host):
    """The engine's host for `seri-lsp run`: prints the conversation as it happens."""

    def __init__(self) -> None:
        self._streaming: str | None = None
        self.root_session: str | None = None
        self.shown: set[str] = set()  # what was printed on stderr, so it is printed once

    def emit(self, event: Event) -> None:
        if isinstance(event, Delta):
            if event.reset:
                # The provider is asked again: end the broken-off line, say so, and let
                # the retried reply start on a fresh `[seri]` line.
                if self._streaming == event.session_id:
                    print(flush=True)
                    print("seri-lsp: the reply broke off; it starts again.", file=sys.stderr)
                    self._streaming = None
                return
            if self._streaming != event.session_id:
                prefix = "" if event.session_id == self.root_session else "(subagent) "
                print(f"\n[seri] {prefix}", end="")
                self._streaming = event.session_id
            print(event.text, end="", flush=True)
        elif isinstance(event, MessageStored):
            message = event.message
            if message.role == "assistant" and self._streaming == event.session_id:
                print()
                message = Message(role="assistant", tool_calls=message.tool_calls)
            self._streaming = None
            text = format_message(message)
            if text:
                indent = "" if event.session_id == self.root_session else "    "
                print("\n".join(indent + line for line in text.split("\n")), flush=True)

    def log(self, level: Level, message: str) -> None:
        if level in ("error", "warning"):
            self.show(level, message)

    def show(self, level: Level, message: str) -> None:
        if message in self.shown:
            return
        self.shown.add(message)
        print(f"seri-lsp: {message}", file=sys.stderr, flush=True)

    def show_report(self, text: str) -> None:
        print(text, flush=True)

    async def ask(self, message: str, choices: list[str]) -> str | None:
        if not sys.stdin.isatty():
            return None
        options = " / ".join(f"[{i}] {choice}" for i, choice in enumerate(choices, start=1))
        answer = await asyncio.to_thread(input, f"\n{message}\n{options}: ")
        try:
            return choices[int(answer.strip()) - 1]
        except (ValueError, IndexError):
            return None


def _cancel_on_signals(engine: Engine) -> None:
    """Ctrl-C (or SIGTERM) cancels the running task, which ends and is stored as cancelled;
    before a task runs, it stops `run` at once."""
    main = asyncio.current_task()

    def interrupt(_signal: str) -> None:
        if not engine.cancel() and main is not None:
            main.cancel()

    on_stop_signals(interrupt)


async def _run(args: argparse.Namespace) -> int:
    if not args.prompt.strip():
        raise InvalidArgument("PROMPT", "The prompt is empty; say what to do.")
    check_text("PROMPT", args.prompt, MAX_PROMPT_CHARS)
    if args.resume is not None:
        check_session_id("--resume", args.resume)
    workspace = Path(_here(args.workspace))
    root = resolve_profile_root(args.profile_root, None)
    settings, problems = load_settings(root)
    for problem in problems:
        print(f"seri-lsp: {problem}", file=sys.stderr)
    host = TerminalHost()
    engine = Engine.open(
        profile_root=root,
        settings=settings,
        project=str(workspace),
        workspace_roots=[workspace],
        host=host,
        max_turns_flag=args.max_turns,
    )
    _cancel_on_signals(engine)
    try:
        await engine.import_legacy()
        if args.resume is not None:
            session: Session | None = await engine.resume_session(args.resume)
        elif args.continue_:
            session = await engine.continue_session(or_new=True)
            if session is None:
                print(
                    f"seri-lsp: nothing to continue in {workspace}; starting a new session.",
                    file=sys.stderr,
                    flush=True,
                )
                session = await engine.new_session()
        else:
            session = await engine.new_session()
        assert session is not None
        host.root_session = session.id
        result = await engine.prompt(args.prompt)
    finally:
        await engine.close()
    current = session.id
    if isinstance(result, PromptOutcome):
        if result.error and result.error not in host.shown:
            print(f"seri-lsp: {result.error}", file=sys.stderr)
    else:
        said = _said(result)
        if said:
            print(said, flush=True)
        # A slash command may have moved to another session (/clear, /new, /resume).
        now = result.field("session")
        current = now.id if isinstance(now, Session) else session.id
    print(f"\n[{result.status}] session {current}", file=sys.stderr)
    return 0 if result.status == "done" else 1


def _said(answer: SlashAnswer) -> str | None:
    """What a slash command did, in words (the editors show their own)."""
    result = answer.fields
    if answer.command == "rewind":
        from seri_lsp.agent.rewind import KEPT_NOTE, plural

        lines = [f"Rewound {plural(result['rewound'])}."]
        if result.get("restoredFiles"):
            lines.append("Restored: " + ", ".join(result["restoredFiles"]) + ".")
        for failure in result.get("failed", []):
            lines.append(f"Could not restore {failure['path']}: {failure['reason']}.")
        if result.get("conversationKept"):
            lines.append(KEPT_NOTE)
        if "prompt" in result:
            lines.append(f"The prompt was: {result['prompt']}")
        return "\n".join(lines)
    return None
