"""Windows and macOS, checked from Linux: what can be checked without those machines.

No module may need a POSIX-only module to import; the session locks keep their contract
across processes on the cross-platform lock library; paths and file URIs are read by
Windows' rules (drive letters, `\\` separators, case ignored) where Windows' rules apply;
and the calls Windows lacks (`os.pread`, `os.fchmod`, `os.killpg`, loop signal handlers)
are done without, not failed.
"""

from __future__ import annotations

import asyncio
import ntpath
import os
import subprocess
import sys
import textwrap
from pathlib import Path, PureWindowsPath

import pytest
from pygls import uris

from seri_lsp.acp.prompt import file_uri_path
from seri_lsp.agent.checks import run_check
from seri_lsp.agent.disk import LineRange, Stop, read_range
from seri_lsp.agent.workspace import PathDenied, PathRules, Workspace
from seri_lsp.files import atomic_write_text
from seri_lsp.settings import CheckSetting
from seri_lsp.store.locks import SessionLocks

ROOT = Path(__file__).resolve().parent.parent
# Standard modules that exist only on POSIX systems.
POSIX_ONLY = ("fcntl", "termios", "tty", "pty", "pwd", "grp", "resource", "syslog", "posix")
WINDOWS = PathRules(ntpath, PureWindowsPath, ignore_case=True)


def run_python(script: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,  # type: ignore[call-overload]
    )


def test_every_module_imports_without_posix_only_modules() -> None:
    done = run_python(
        f"""
        import importlib, pkgutil, sys

        REFUSED = {POSIX_ONLY!r}

        class Windows:
            def find_spec(self, name, path=None, target=None):
                if name in REFUSED:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

        for name in REFUSED:
            if name != "posix":  # os stands on it here; Windows has nt instead
                sys.modules.pop(name, None)
        sys.meta_path.insert(0, Windows())
        import seri_lsp
        failed = []
        for module in pkgutil.walk_packages(seri_lsp.__path__, "seri_lsp."):
            try:
                importlib.import_module(module.name)
            except Exception as exc:
                failed.append(f"{{module.name}}: {{exc!r}}")
        print("\\n".join(failed))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


HOLD = """
import sys
from pathlib import Path
from seri_lsp.store.locks import SessionLocks

locks = SessionLocks(Path(sys.argv[1]))
assert locks.acquire("s-1") is None
print("held", flush=True)
sys.stdin.read()
"""


def test_a_second_process_is_refused_naming_the_holder_until_the_holder_dies(
    tmp_path: Path,
) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        mine = SessionLocks(tmp_path)
        refused = mine.acquire("s-1")
        assert refused is not None and refused.describe() == f"pid {holder.pid}"
        assert mine.open_elsewhere(["s-1", "s-2"]) == {"s-1"}
    finally:
        holder.kill()  # no release: the process dies holding the lock
        holder.wait(timeout=10)
    assert mine.open_elsewhere(["s-1"]) == set()
    assert mine.acquire("s-1") is None
    assert SessionLocks(tmp_path).acquire("s-1") is not None


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("src\\app.py", "src/app.py"),
        ("src/app.py", "src/app.py"),
        ("C:\\Users\\Me\\Project\\src\\app.py", "src/app.py"),
        ("c:\\users\\me\\PROJECT\\README.md", "README.md"),
        ("C:/Users/Me/Project", "."),
        ("d:\\lib\\util.py", "Lib/util.py"),
    ],
)
def test_windows_paths_inside_the_workspace(raw: str, shown: str) -> None:
    workspace = Workspace(
        [PureWindowsPath("C:/Users/Me/Project"), PureWindowsPath("D:/Lib")],  # type: ignore[list-item]
        rules=WINDOWS,
        real=True,
    )
    assert workspace.normalize(raw) == shown


@pytest.mark.parametrize(
    "raw",
    [
        "..\\Other\\secret.txt",
        "src\\..\\..\\Other",
        "C:\\Users\\Me\\Project2\\x.py",  # a sibling whose name starts the same
        "E:\\Users\\Me\\Project\\x.py",  # the same folders on another drive
        "\\\\server\\share\\Project\\x.py",
    ],
)
def test_windows_paths_outside_the_workspace_are_denied(raw: str) -> None:
    workspace = Workspace(
        [PureWindowsPath("C:/Users/Me/Project")],  # type: ignore[list-item]
        rules=WINDOWS,
        real=True,
    )
    assert workspace.normalize(raw) is None
    with pytest.raises(PathDenied, match="outside the workspace"):
        workspace._lexical(raw)


def test_a_windows_file_uri_round_trips_and_lies_in_the_workspace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(uris, "IS_WIN", True)
    path = "C:\\Users\\Me\\My Project\\src\\app.py"
    uri = uris.from_fs_path(path)
    assert uri == "file:///c:/Users/Me/My%20Project/src/app.py"
    back = uris.to_fs_path(uri)
    assert back is not None and ntpath.normcase(back) == ntpath.normcase(path)
    # VS Code writes the drive's colon escaped.
    sent = uris.to_fs_path("file:///c%3A/Users/Me/My%20Project/src/app.py")
    workspace = Workspace(
        [PureWindowsPath("C:/Users/Me/My Project")],  # type: ignore[list-item]
        rules=WINDOWS,
        real=True,
    )
    assert workspace.normalize(sent) == "src/app.py"


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("file:///C:/My%20Project/a.py", "C:\\My Project\\a.py"),
        ("file:///c%3A/Users/Me/a.py", "c:\\Users\\Me\\a.py"),
        ("file://server/share/a.py", "\\\\server\\share\\a.py"),
        ("file:a.py", None),
        ("https://example.com/a.py", None),
    ],
)
def test_acp_file_links_on_windows(uri: str, path: str | None) -> None:
    assert file_uri_path(uri, windows=True) == path


def test_an_atomic_write_skips_what_windows_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "notes.md"
    target.write_text("old\n")
    for name in ("fchmod", "fchown"):
        monkeypatch.delattr(os, name)
    atomic_write_text(target, "new\n", mode=0o600)
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.md"]


def test_a_file_is_read_in_ranges_without_pread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "pread")
    target = tmp_path / "app.py"
    target.write_text("".join(f"line {n}\n" for n in range(1, 11)))
    text = read_range(target, "app.py", LineRange(offset=3, limit=2), stop=Stop())
    assert "line 3" in text and "line 4" in text and "line 5" not in text
    assert "of 10" in text


@pytest.mark.slow  # it runs a Python that sleeps past the check's time
async def test_a_check_over_its_time_is_ended_without_process_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "killpg")
    check = CheckSetting("slow", (sys.executable, "-c", "import time; time.sleep(60)"), 0.5)
    result = await asyncio.wait_for(run_check(check, tmp_path), timeout=30)
    assert result.timed_out and result.exit_code is None


def test_stop_signals_reach_the_loop_where_it_has_no_signal_handlers() -> None:
    done = run_python(
        """
        import asyncio, os, signal
        from seri_lsp.signals import on_stop_signals

        def no_handlers(self, *args):
            raise NotImplementedError  # as Windows' proactor loop

        asyncio.AbstractEventLoop.add_signal_handler = no_handlers
        type(asyncio.new_event_loop()).add_signal_handler = no_handlers

        async def main():
            got = asyncio.get_running_loop().create_future()
            on_stop_signals(lambda name: got.done() or got.set_result(name))
            os.kill(os.getpid(), signal.SIGTERM)
            print(await asyncio.wait_for(got, 10))

        asyncio.run(main())
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "SIGTERM"
