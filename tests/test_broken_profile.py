"""A profile folder that is broken under seri: a config.json that is no file (a FIFO, a
link to a device), a disk that is full. Each is told in words and nothing hangs."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import resource
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from seri_lsp.errors import store_failure_message
from tests.conftest import provider_options
from tests.harness import (
    cli_env,
    command,
    initialize_client,
    seri,
    server_env,
    shown_messages,
    wait_until,
)
from tests.scripted_provider import ScriptedProvider, Text
from tests.test_request_answers import RawServer, error_of

REQUEST_FAILED = -32803
# Long enough for a loaded machine, short of a hang.
ANSWER_TIMEOUT = 20
DISK_FULL = "cannot be written: the disk is full (free some space and try again)."


def config(profile_root: Path) -> Path:
    return profile_root / "config.json"


@pytest.fixture
def fifo_config(profile_root: Path) -> Iterator[Path]:
    """A profile whose config.json is a named pipe nobody writes to."""
    profile_root.mkdir(mode=0o700)
    path = config(profile_root)
    os.mkfifo(path)
    yield path
    # A server that did block on it (a regression) gets its end of file and can exit.
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def is_fifo(path: Path) -> bool:
    return stat.S_ISFIFO(path.lstat().st_mode)


def limit_memory() -> None:
    """In the child: at most 2 GiB of address space, so reading /dev/zero fails fast."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


# --- config.json that is no regular file -------------------------------------------------


async def test_a_config_json_that_is_a_fifo_is_reported_and_ignored(
    fifo_config: Path, lsp, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await lsp(initialize=False)
    await asyncio.wait_for(
        initialize_client(client, workspace, init_options=provider_options(provider)),
        ANSWER_TIMEOUT,
    )
    warning = await wait_until(
        lambda: shown_messages(client, types.MessageType.Warning, "config.json")
    )
    assert warning == [
        f"{fifo_config} is a named pipe (FIFO), not a regular file; ignoring it. "
        "Replace it with a JSON file, or remove it."
    ]
    # The server works, with the initialization options and the defaults.
    provider.script(Text("still here"))
    answer = await asyncio.wait_for(
        command(client, "seri.prompt", {"text": "hello"}), ANSWER_TIMEOUT
    )
    assert answer["status"] == "done", answer
    assert is_fifo(fifo_config)


def test_the_command_line_runs_with_a_config_json_that_is_a_fifo(
    fifo_config: Path, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    provider.script(Text("fine"))
    try:
        result = seri("run", "hello", cwd=workspace, env=cli_env(provider, profile_root))
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"seri-lsp run hung on a FIFO config.json: {exc}")
    # It may hold the provider settings: the prompt waits for the fix (issue 33).
    assert result.returncode == 1, result.stderr
    assert f"{fifo_config} is a named pipe (FIFO), not a regular file, so the provider" in (
        result.stderr
    )
    assert provider.requests == []
    assert "Traceback" not in result.stderr
    assert is_fifo(fifo_config)


def test_a_config_json_linked_to_dev_zero_is_refused_unread(
    provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    profile_root.mkdir(mode=0o700)
    config(profile_root).symlink_to("/dev/zero")
    provider.script(Text("fine"))
    result = subprocess.run(
        [sys.executable, "-m", "seri_lsp", "run", "hello"],
        cwd=workspace,
        env=server_env(cli_env(provider, profile_root)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit_memory,
    )
    assert result.returncode == 1, result.stderr[-2000:]
    path = config(profile_root)
    assert f"{path} is a character device, not a regular file, so the provider" in result.stderr
    assert provider.requests == []
    assert "Traceback" not in result.stderr
    assert os.readlink(path) == "/dev/zero"


async def test_trajectory_on_refuses_to_replace_a_config_json_that_is_a_fifo(
    fifo_config: Path, lsp, workspace: Path
) -> None:
    client = await lsp(initialize=False)
    await asyncio.wait_for(initialize_client(client, workspace), ANSWER_TIMEOUT)
    for attempt in ({"enabled": True}, {"enabled": False}):
        with pytest.raises(JsonRpcException) as caught:
            await asyncio.wait_for(command(client, "seri.trajectory", attempt), ANSWER_TIMEOUT)
        assert caught.value.code == REQUEST_FAILED
        message = caught.value.message
        assert f"{fifo_config} is a named pipe (FIFO), not a regular file" in message
        assert "not overwrite" in message
    with pytest.raises(JsonRpcException) as caught:
        await asyncio.wait_for(
            command(client, "seri.prompt", {"text": "/trajectory on"}), ANSWER_TIMEOUT
        )
    assert "named pipe" in caught.value.message and "not overwrite" in caught.value.message
    assert is_fifo(fifo_config)


# --- a full disk -------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs to fill up; skipped where mounting is not permitted (not root)."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(folder)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30)


def fill(folder: Path) -> Path:
    """Fill the file system under `folder` to the last byte; returns the filler file."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    return filler


def assert_no_traceback(server: RawServer) -> None:
    assert "Traceback" not in server.stderr, server.stderr
    for method in ("window/logMessage", "window/showMessage"):
        for params in server.notifications(method):
            assert "Traceback" not in params["message"], params


def test_a_full_disk_under_the_profile_is_a_refusal_in_words(
    small_disk: Path, workspace: Path
) -> None:
    profile_root = small_disk / "profile"
    server = RawServer(profile_root, workspace, "--log-level", "info")
    try:
        server.initialize()
        assert "result" in server.command("seri.session.new", [{}])
        filler = fill(small_disk)
        answer = server.command("seri.session.new", [{}])
        error = error_of(answer)
        assert error["code"] == REQUEST_FAILED, error
        assert error["message"].endswith(DISK_FULL), error
        assert str(profile_root) in error["message"], error
        server.wait_stderr(lambda text: "Refused workspace/executeCommand" in text)
        assert_no_traceback(server)
        # Space again: the same command works.
        filler.unlink()
        assert "result" in server.command("seri.session.new", [{}])
    finally:
        server.close()


def test_seri_db_that_cannot_take_a_write_is_a_refusal_naming_it(
    profile_root: Path, workspace: Path
) -> None:
    server = RawServer(profile_root, workspace, "--log-level", "info")
    try:
        server.initialize()
        db = profile_root / "seri.db"
        conn = sqlite3.connect(db)
        try:
            # SQLite's own words for SQLITE_FULL, at the insert of the new session's row.
            conn.execute(
                "CREATE TRIGGER disk_full BEFORE INSERT ON sessions "
                "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
            )
            conn.commit()
        finally:
            conn.close()
        error = error_of(server.command("seri.session.new", [{}]))
        assert error["code"] == REQUEST_FAILED, error
        assert error["message"] == f"seri.db at {db} {DISK_FULL}", error
        server.wait_stderr(lambda text: "Refused workspace/executeCommand" in text)
        assert_no_traceback(server)
        assert "result" in server.command("seri.session.list", [{}])
    finally:
        server.close()


def test_only_errors_of_the_disk_are_put_in_its_words() -> None:
    assert store_failure_message(sqlite3.OperationalError("no such table: x")) is None
    assert store_failure_message(OSError(errno.ENOENT, "No such file or directory", "x")) is None
    assert store_failure_message(ValueError("database or disk is full")) is None
    full = OSError(errno.ENOSPC, "No space left on device", "/p/locks/a.lock")
    assert store_failure_message(full) == f"/p/locks/a.lock {DISK_FULL}"
    assert store_failure_message(OSError(errno.EROFS, "Read-only file system")) is not None


async def test_a_task_whose_reply_the_disk_cannot_take_fails_in_words(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(Text("an answer"))
    client = await agent()
    await command(client, "seri.session.new", {})
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        conn.execute(
            "CREATE TRIGGER disk_full BEFORE INSERT ON messages WHEN NEW.role = 'assistant' "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        conn.commit()
    finally:
        conn.close()
    result = await command(client, "seri.prompt", {"text": "hello"})
    assert result["status"] == "failed"
    assert result["error"] == f"seri.db {DISK_FULL}", result
