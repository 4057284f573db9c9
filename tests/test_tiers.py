"""tests/tiers.py: a test is in the fast tier unless it starts a process, found by reading
its code and the code of the suite's functions it names; module-scoped fixtures keep
their tests on one worker."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests import tiers

# Sample code is compiled from text, so that reading this module's tests finds no
# process start in them (they are fast tests themselves).
HELPERS = """
import asyncio, subprocess

def runs_a_command():
    return subprocess.run(["true"])

async def starts_the_server():
    return await asyncio.create_subprocess_exec("python", "-m", "seri_lsp")

def pure():
    return 1 + 1

class Server:
    def start(self):
        return runs_a_command()
"""


def compiled(source: str) -> Callable[..., Any]:
    """The function `f` of `source`, with the helpers above beside it, as if this suite's."""
    namespace: dict[str, Any] = {"__name__": "tests.sample"}
    exec(compile(HELPERS + source, "<sample>", "exec"), namespace)
    for value in namespace.values():
        if callable(value) and hasattr(value, "__module__"):
            value.__module__ = "tests.sample"
    return namespace["f"]


@pytest.mark.parametrize(
    "source, starts",
    [
        ("def f():\n    return pure()\n", False),
        ("def f():\n    return runs_a_command()\n", True),
        ("async def f():\n    await starts_the_server()\n", True),
        ("def f():\n    return Server().start()\n", True),
        ("def f():\n    return [lambda: runs_a_command()]\n", True),
        ("def f():\n    import multiprocessing\n    return multiprocessing.Pool\n", True),
        # Through decorated helpers (a decorator's wrapper has its own module's globals).
        (
            "import contextlib\n"
            "@contextlib.asynccontextmanager\n"
            "async def g():\n    yield await starts_the_server()\n"
            "@contextlib.asynccontextmanager\n"
            "async def f():\n    async with g() as server:\n        yield server\n",
            True,
        ),
    ],
)
def test_a_process_start_is_found_through_the_suites_own_calls(source: str, starts: bool) -> None:
    assert tiers.starts_processes(compiled(source)) is starts


def test_a_function_of_another_package_is_not_read() -> None:
    # json.dumps is no function of this suite: what it calls is not followed.
    function = compiled("import json\ndef f():\n    return json.dumps(1)\n")
    assert tiers.starts_processes(function) is False


@pytest.mark.parametrize(
    "argv, heavy",
    [
        ([sys.executable, "-m", "seri_lsp"], True),
        (["/usr/bin/nvim", "--headless"], True),
        (["node", "test/run.mjs"], True),
        (["sh", "-c", "true"], False),
        (["openssl", "req"], False),
        ("python3 -c pass", True),
    ],
)
def test_a_fast_test_may_start_small_programs_but_no_interpreter_or_editor(
    argv: Any, heavy: bool
) -> None:
    program = tiers.heavy_program("subprocess.Popen", (None, argv, None, None))
    assert (program is not None) is heavy
    assert tiers.heavy_program("os.system", (b"python",)) is None


def test_the_suite_is_split_as_the_tiers_say(request: pytest.FixtureRequest) -> None:
    names = {
        "store": "test_store.py::test_a_blank_database_is_migrated_to_the_latest_schema",
        "server": "test_sessions.py::test_new_session_is_listed_and_fetched[neovim]",
        "vscode": "test_vscode.py::test_unit_suites_pass",
    }
    found = {
        key: item
        for item in request.session.items
        for key, name in names.items()
        if item.nodeid.partition("@")[0].endswith(name)  # xdist adds @group
    }
    if len(found) < len(names):
        pytest.skip("the run leaves out a test this one reads (-m, -k or a path)")
    assert found["store"].get_closest_marker("fast")
    assert not found["server"].get_closest_marker("fast")
    assert not found["vscode"].get_closest_marker("fast")
    group = found["vscode"].get_closest_marker("xdist_group")
    assert group is not None and group.args == ("tests.test_vscode.vscode_run",)
