"""The command line: server flags, global flags before a subcommand, errors printed once,
and a server that stops cleanly on exit, end of input, Ctrl-C (SIGINT) and SIGTERM."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import provider_options
from tests.harness import cli_env, seri, server_env
from tests.scripted_provider import Calls, Error, Hang, ScriptedProvider, Text
from tests.test_request_answers import INVALID_REQUEST, RawServer, error_of
from tests.test_turn_budget import looping


def db_rows(profile_root: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# --- stopping the server ---------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_server_cleanly_and_closes_the_store(
    profile_root: Path, workspace: Path, signum: int
) -> None:
    server = RawServer(profile_root, workspace)
    try:
        server.initialize()
        session = server.command("seri.session.new", [{}])["result"]["session"]
        assert (profile_root / "seri.db-wal").exists()  # the store is open, in WAL mode
        started = time.monotonic()
        server.process.send_signal(signum)
        assert server.wait(10) == 0
        assert time.monotonic() - started < 5
    finally:
        server.close()
    assert "Traceback" not in server.stderr, server.stderr
    assert "language server" not in server.stderr  # stdin was a pipe: no terminal notice
    # The last connection closed: the WAL was checkpointed into seri.db and removed.
    assert not (profile_root / "seri.db-wal").exists()
    assert db_rows(profile_root, "SELECT id FROM sessions") == [(session["id"],)]


def test_a_signal_during_a_task_interrupts_it_answers_it_and_stores_it(
    profile_root: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    hang = Hang()
    provider.script(hang)
    server = RawServer(profile_root, workspace)
    try:
        server.initialize(init_options=provider_options(provider))
        server.command("seri.session.new", [{}])
        prompt_id = server.request(
            "workspace/executeCommand", {"command": "seri.prompt", "arguments": [{"text": "hi"}]}
        )
        provider.wait_for_requests(1)
        server.process.send_signal(signal.SIGTERM)
        assert server.wait(15) == 0
        answer = server.response(prompt_id, timeout=1)
        # Seri stopped it, not the user: interrupted, and stored as such.
        assert answer["result"]["status"] == "interrupted"
    finally:
        hang.release.set()
        server.close()
    assert "Traceback" not in server.stderr, server.stderr
    assert not (profile_root / "seri.db-wal").exists()
    stored = db_rows(profile_root, "SELECT role, content FROM messages ORDER BY id")
    assert stored[0] == ("user", "hi")


def test_shutdown_then_exit_ends_with_0_and_later_requests_are_refused(
    profile_root: Path, workspace: Path
) -> None:
    server = RawServer(profile_root, workspace)
    try:
        server.initialize()
        assert server.call("shutdown")["result"] is None
        refused = error_of(server.command("seri.session.list", [{}]))
        assert refused["code"] == INVALID_REQUEST
        server.notify("exit")
        assert server.wait(10) == 0
    finally:
        server.close()
    assert "Traceback" not in server.stderr
    assert not (profile_root / "seri.db-wal").exists()


def test_exit_without_shutdown_ends_with_1_and_end_of_input_with_0(
    profile_root: Path, workspace: Path
) -> None:
    server = RawServer(profile_root, workspace)
    try:
        server.initialize()
        server.notify("exit")
        assert server.wait(10) == 1
    finally:
        server.close()
    server = RawServer(profile_root, workspace)
    try:
        server.initialize()
        server.command("seri.session.new", [{}])
        assert server.process.stdin is not None
        server.process.stdin.close()  # the editor went away
        assert server.wait(10) == 0
    finally:
        server.close()
    assert "Traceback" not in server.stderr
    assert not (profile_root / "seri.db-wal").exists()


def test_a_terminal_on_stdin_gets_one_line_saying_what_this_is(
    profile_root: Path, workspace: Path
) -> None:
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "seri_lsp", "--profile-root", str(profile_root)],
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
        cwd=workspace,
    )
    os.close(terminal)
    try:
        assert process.stderr is not None
        first = b""
        while not first.endswith(b"\n"):  # the whole line
            ready, _, _ = select.select([process.stderr], [], [], 15)
            assert ready, f"no (whole) notice on stderr: {first!r}"
            chunk = os.read(process.stderr.fileno(), 4096)
            assert chunk, f"stderr ended inside the notice: {first!r}"
            first += chunk
        process.send_signal(signal.SIGINT)  # Ctrl-C
        assert process.wait(10) == 0
        stderr = (first + process.stderr.read()).decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        os.close(controller)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    notice = lines[0]
    assert "LSP" in notice and "stdin/stdout" in notice
    assert "editor" in notice and "editors/" in notice
    assert "Ctrl-C" in notice


# --- what the server opens ---------------------------------------------------------------


def two_sessions(profile_root: Path, workspace: Path) -> tuple[str, str]:
    """An older session and the project's latest one."""
    server = RawServer(profile_root, workspace)
    try:
        server.initialize()
        older = server.command("seri.session.new", [{}])["result"]["session"]["id"]
        latest = server.command("seri.clear", [{}])["result"]["session"]["id"]
    finally:
        server.close()
    return older, latest


def opened(server: RawServer) -> list[tuple[str, str]]:
    return [(c["reason"], c["session"]["id"]) for c in server.notifications("seri/sessionChanged")]


def test_resume_on_the_server_command_opens_that_session(
    profile_root: Path, workspace: Path
) -> None:
    older, _ = two_sessions(profile_root, workspace)
    server = RawServer(profile_root, workspace, "--resume", older[:8])
    try:
        server.initialize()  # resumeOnOpen is on, but --resume wins
        server.wait_for(lambda m: m.get("method") == "seri/sessionChanged")
        view = server.command("seri.session.get", [{}])["result"]
        assert view["session"]["id"] == older
        assert opened(server) == [("resumed", older)]
    finally:
        server.close()


def test_continue_on_the_server_command_wins_over_resume_on_open_off(
    profile_root: Path, workspace: Path
) -> None:
    _, latest = two_sessions(profile_root, workspace)
    server = RawServer(profile_root, workspace, "--continue")
    try:
        server.initialize(init_options={"resumeOnOpen": False})
        server.wait_for(lambda m: m.get("method") == "seri/sessionChanged")
        assert opened(server) == [("continued", latest)]
    finally:
        server.close()


def test_resume_of_an_unknown_id_is_shown_and_nothing_is_opened(
    profile_root: Path, workspace: Path
) -> None:
    two_sessions(profile_root, workspace)
    server = RawServer(profile_root, workspace, "--resume", "no-such-session")
    try:
        server.initialize()
        shown = server.wait_for(lambda m: m.get("method") == "window/showMessage")["params"]
        assert shown["type"] == 1  # Error
        assert "no-such-session" in shown["message"] and "new" in shown["message"]
        view = server.command("seri.session.get", [{}])["result"]
        assert view["session"] is None
        assert opened(server) == []
        # The server goes on: a new session when asked.
        assert server.command("seri.session.new", [{}])["result"]["session"]["id"]
    finally:
        server.close()
    assert "Traceback" not in server.stderr


def test_resume_or_continue_of_a_session_held_elsewhere(
    profile_root: Path, workspace: Path
) -> None:
    first = RawServer(profile_root, workspace)
    try:
        first.initialize()
        held = first.command("seri.session.new", [{}])["result"]["session"]["id"]
        second = RawServer(profile_root, workspace, "--resume", held)
        try:
            second.initialize()
            shown = second.wait_for(lambda m: m.get("method") == "window/showMessage")["params"]
            assert shown["type"] == 1
            assert held in shown["message"] and f"pid {first.process.pid}" in shown["message"]
            assert second.command("seri.session.get", [{}])["result"]["session"] is None
        finally:
            second.close()
        third = RawServer(profile_root, workspace, "--continue")
        try:
            third.initialize(init_options={"resumeOnOpen": False})
            change = third.wait_for(lambda m: m.get("method") == "seri/sessionChanged")
            assert change["params"]["reason"] == "new"
            assert change["params"]["session"]["id"] != held
        finally:
            third.close()
        assert "Traceback" not in second.stderr + third.stderr
    finally:
        first.close()


def test_continue_with_nothing_to_continue_says_so_in_the_log(
    profile_root: Path, workspace: Path
) -> None:
    server = RawServer(profile_root, workspace, "--continue")
    try:
        server.initialize()
        logged = server.wait_for(
            lambda m: (
                m.get("method") == "window/logMessage"
                and "No earlier session" in m["params"]["message"]
            )
        )
        assert "new one" in logged["params"]["message"]
        assert server.command("seri.session.get", [{}])["result"]["session"] is None
    finally:
        server.close()


# --- the terminal subcommands ----------------------------------------------------------


def test_max_turns_before_the_subcommand_is_honoured(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    provider.script(*looping(5))
    env = cli_env(provider, profile_root)
    result = seri("--max-turns", "2", "run", "loop", cwd=workspace, env=env)
    assert result.returncode == 1, result.stderr
    assert "[max_turns]" in result.stderr
    assert len(provider.requests) == 2
    # The flag after the subcommand still works, and wins when both are given.
    provider.requests.clear()
    provider.script(*looping(5))
    both = seri("--max-turns", "3", "run", "loop", "--max-turns", "1", cwd=workspace, env=env)
    assert both.returncode == 1 and len(provider.requests) == 1


def test_continue_before_the_subcommand_is_honoured(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    provider.script(Text("one"), Text("two"))
    env = cli_env(provider, profile_root)
    assert seri("run", "first", cwd=workspace, env=env).returncode == 0
    assert seri("--continue", "run", "second", cwd=workspace, env=env).returncode == 0
    sent = provider.requests[1]["messages"]
    assert [m["content"] for m in sent[1:]] == ["first", "one", "second"]


@pytest.mark.parametrize("kind", ["a file", "cannot be made"])
def test_a_profile_root_that_cannot_be_used_is_one_line_not_a_traceback(
    tmp_path: Path, workspace: Path, kind: str
) -> None:
    root = tmp_path / "profile-file"
    if kind == "a file":
        root.write_text("not a folder")
    else:
        (tmp_path / "blocker").write_text("x")
        root = tmp_path / "blocker" / "profile"
    for args in (("sessions",), ("run", "hello")):
        result = seri(*args, "--profile-root", str(root), cwd=workspace)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("seri-lsp: "), result.stderr
        assert str(root) in lines[0] or "blocker" in lines[0]


def test_rewind_from_the_terminal_says_what_it_did(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("old\n")
    provider.script(
        Calls([("e1", "edit", {"path": "notes.txt", "old_text": "old", "new_text": "new"})]),
        Text("edited"),
    )
    env = cli_env(provider, profile_root)
    # No terminal to ask on: a config that allows writes without asking.
    profile_root.mkdir(parents=True, exist_ok=True)
    (profile_root / "config.json").write_text('{"permissions": {"write": "allow"}}')
    first = seri("run", "make it new", cwd=workspace, env=env)
    assert first.returncode == 0, first.stderr
    assert (workspace / "notes.txt").read_text() == "new\n"
    rewound = seri("--continue", "run", "/rewind", cwd=workspace, env=env)
    assert rewound.returncode == 0, rewound.stderr
    assert "Rewound 1 prompt." in rewound.stdout
    assert "Restored: notes.txt." in rewound.stdout
    assert "The prompt was: make it new" in rewound.stdout
    assert (workspace / "notes.txt").read_text() == "old\n"


def test_clear_from_the_terminal_names_the_new_session(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    provider.script(Text("hello"))
    env = cli_env(provider, profile_root)
    first = seri("run", "hi", cwd=workspace, env=env)
    old = first.stderr.strip().splitlines()[-1].split()[-1]
    cleared = seri("--continue", "run", "/clear", cwd=workspace, env=env)
    assert cleared.returncode == 0, cleared.stderr
    new = cleared.stderr.strip().splitlines()[-1].split()[-1]
    assert new != old
    listed = seri("sessions", "--json", cwd=workspace, env=env)
    assert new in listed.stdout


def test_run_continue_with_nothing_to_continue_says_so_first(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    provider.script(Text("hello"))
    result = seri(
        "run",
        "hi",
        "--continue",
        cwd=workspace,
        env=cli_env(provider, profile_root),
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    notice = [i for i, line in enumerate(lines) if "nothing to continue" in line]
    assert len(notice) == 1 and "new session" in lines[notice[0]]
    done = [i for i, line in enumerate(lines) if line.startswith("[done]")]
    assert notice[0] < done[0]
    assert len(db_rows(profile_root, "SELECT id FROM sessions")) == 1


def assert_once(stderr: str, text: str) -> None:
    assert stderr.count(text) == 1, stderr
    assert "Traceback" not in stderr, stderr


def test_each_error_is_printed_once(
    provider: ScriptedProvider, profile_root: Path, workspace: Path, tmp_path: Path
) -> None:
    env = cli_env(provider, profile_root)
    unknown = "Unknown session id 'nope'"
    for args in (
        ("run", "x", "--resume", "nope"),
        ("show", "nope"),
        ("--resume", "nope", "run", "x"),
    ):
        result = seri(*args, cwd=workspace, env=env)
        assert result.returncode == 1
        assert_once(result.stderr, unknown)

    provider.script(Error(401, {"error": {"message": "bad key for this test"}}))
    failed = seri("run", "hello", cwd=workspace, env=env)
    assert failed.returncode == 1
    assert_once(failed.stderr, "bad key for this test")

    provider.script(*looping(3))
    budget = seri("run", "loop", "--max-turns", "1", cwd=workspace, env=env)
    assert budget.returncode == 1
    errors = [line for line in budget.stderr.splitlines() if line.startswith("seri-lsp:")]
    assert len(errors) == len(set(errors)) == 1, budget.stderr

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "seri.db").write_text("not a database at all\n")
    broken_env = {**env, "SERI_PROFILE_ROOT": str(broken)}
    for args in (("sessions",), ("show", "x"), ("run", "x")):
        result = seri(*args, cwd=workspace, env=broken_env)
        assert result.returncode == 1, (args, result.stderr)
        assert_once(result.stderr, "not a SQLite database")


@pytest.mark.parametrize(
    "args",
    [
        ("--max-turns", "²", "run", "x"),
        ("--max-turns", "0", "run", "x"),
        ("--max-turns", "10001", "run", "x"),
        ("--max-turns", "9" * 5000),
        ("run", "x", "--max-turns", "٣"),
        ("--continue", "run", "x", "--resume", "abc"),
        ("--continue", "--resume", "abc"),
        ("--resume", "abc", "sessions"),
    ],
)
def test_bad_flags_are_refused_before_anything_starts(
    profile_root: Path, workspace: Path, args: tuple[str, ...]
) -> None:
    result = seri(*args, "--profile-root", str(profile_root), cwd=workspace)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr) < 2000
    assert not profile_root.exists()  # nothing was created


def test_run_refuses_text_that_is_not_unicode_before_starting(
    profile_root: Path, workspace: Path
) -> None:
    # Bytes that are not UTF-8 on the command line arrive as lone surrogates.
    for args in (
        (b"run", b"\xff\xfe hi"),
        (b"run", b"hi", b"--resume", b"\xff"),
        (b"show", b"\xff"),
    ):
        result = subprocess.run(
            [sys.executable.encode(), b"-m", b"seri_lsp", *args],
            cwd=workspace,
            env=server_env({"SERI_PROFILE_ROOT": str(profile_root)}),
            capture_output=True,
            timeout=60,
        )
        stderr = result.stderr.decode(errors="replace")
        assert result.returncode == 1, stderr
        assert "lone surrogate" in stderr and "Traceback" not in stderr
    assert not (profile_root / "seri.db").exists() or not db_rows(
        profile_root, "SELECT id FROM sessions"
    )


def test_the_tcp_server_answers_and_stops_cleanly(profile_root: Path, workspace: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "seri_lsp", "--tcp", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--profile-root", str(profile_root)],
        stderr=subprocess.PIPE,
        env=server_env(),
        cwd=workspace,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                connection = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                assert time.monotonic() < deadline, "the TCP server did not listen"
                time.sleep(0.1)
        with connection:
            uri = workspace.as_uri()
            for message in (
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"capabilities": {}, "rootUri": uri},
                },
                {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "workspace/executeCommand",
                    "params": {"command": "seri.session.new", "arguments": 5},
                },
            ):
                body = json.dumps(message).encode()
                connection.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            received = b""
            while b'"id": 2' not in received:
                chunk = connection.recv(65536)
                assert chunk, "the connection closed"
                received += chunk
            assert b'"field": "arguments"' in received
            process.send_signal(signal.SIGTERM)
            assert process.wait(10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert process.stderr is not None
    assert "Traceback" not in process.stderr.read().decode()
    assert not (profile_root / "seri.db-wal").exists()

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = seri("--tcp", "--port", str(busy.getsockname()[1]), cwd=workspace)
    assert taken.returncode == 1
    assert taken.stderr.count("address already in use") == 1, taken.stderr


def test_ctrl_c_during_run_cancels_the_task_and_stores_it(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    hang = Hang()
    provider.script(hang)
    process = subprocess.Popen(
        [sys.executable, "-m", "seri_lsp", "run", "hello"],
        cwd=workspace,
        env=server_env(cli_env(provider, profile_root)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        provider.wait_for_requests(1)
        process.send_signal(signal.SIGINT)
        assert process.wait(15) == 1
    finally:
        hang.release.set()
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert process.stderr is not None
    stderr = process.stderr.read()
    assert "[cancelled]" in stderr and "Traceback" not in stderr, stderr
    assert_once(stderr, "Cancelled by the user.")
    assert db_rows(profile_root, "SELECT role, content FROM messages") == [("user", "hello")]


def test_checks_nobody_could_allow_without_a_terminal_are_shown_as_not_run(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    provider.script(
        Calls([("w", "write_file", {"path": "a.txt", "content": "1\n"})]), Text("wrote it")
    )
    profile_root.mkdir(parents=True, exist_ok=True)
    config = {
        "permissions": {"write": "allow"},
        "checks": [{"name": "lint", "command": "touch ran"}],
    }
    (profile_root / "config.json").write_text(json.dumps(config))
    result = seri("run", "write a.txt", cwd=workspace, env=cli_env(provider, profile_root))
    assert result.returncode == 0, result.stderr
    assert not (workspace / "ran").exists()
    assert "seri-lsp: Checks not run: the user did not answer" in result.stderr
    assert "permissions.run is 'ask'" in result.stderr


def test_a_call_running_when_seri_stops_is_stored_interrupted_not_not_run(
    profile_root: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls(
            [
                ("r1", "run", {"command": "echo started > began.txt; sleep 60"}),
                ("r2", "read_file", {"path": "began.txt"}),
            ]
        )
    )
    server = RawServer(profile_root, workspace)
    try:
        options = provider_options(provider)
        options["permissions"] = {"run": "allow"}
        server.initialize(init_options=options)
        server.command("seri.session.new", [{}])
        server.request(
            "workspace/executeCommand", {"command": "seri.prompt", "arguments": [{"text": "go"}]}
        )
        deadline = time.monotonic() + 30
        while not (workspace / "began.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        server.process.send_signal(signal.SIGTERM)
        assert server.wait(15) == 0
    finally:
        server.close()
    results = dict(
        db_rows(profile_root, "SELECT tool_call_id, content FROM messages WHERE role = 'tool'")
    )
    assert results["r1"].startswith("Interrupted: seri stopped"), results
    assert results["r2"] == "Not run: the task ended (interrupted) before this call ran."
