"""Which tests are in the fast tier, and which must share a worker in a parallel run.

`pytest -m fast` is the inner loop: the tests that start no process, so run in a
moment (the store, the context, the agent, in-process). Nobody keeps a list: a test is
in the fast tier unless it starts a process, and it starts one when its code, a fixture
it uses, or a function or class of this test suite that either calls names a way to
start one (`subprocess`, `asyncio.create_subprocess_exec`, `multiprocessing`, pytest-lsp's
`ClientServerConfig`, `os.fork`, ...). `@pytest.mark.slow` leaves a test out by hand.
A fast test that starts Python, Neovim or Node all the same (by a way this module does
not see) fails, saying so, rather than slowing the inner loop unnoticed.

The whole suite runs on every core (pytest-xdist): each test has its own profile root,
workspace and provider port, so tests cannot meet. A module-scoped fixture (the one
VS Code run that several tests read) is made once per module: the tests that use it get
one `xdist_group`, so they go to one worker, and that group, the largest, starts first.
The other tests go out in the order `order` gives: the few that take long on their own
(`@pytest.mark.early`) first, the fast tier last.
"""

from __future__ import annotations

import inspect
import os
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

import pytest

SUITE = __name__.partition(".")[0]
# Names (globals or attributes) that start a process when code uses them.
PROCESS_NAMES = frozenset(
    {
        "subprocess",
        "multiprocessing",
        "create_subprocess_exec",
        "create_subprocess_shell",
        "ClientServerConfig",  # pytest-lsp: the server under test
        "spawn_agent_process",  # the ACP SDK: the agent under test
        "fork",
        "forkpty",
        "posix_spawn",
        "posix_spawnp",
        "system",
        "popen",
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "spawnv",
        "spawnve",
    }
)
# What a fast test may not start: an interpreter or an editor takes a good part of a
# second each.
HEAVY_PROGRAMS = ("python", "nvim", "node", "code-server", "chromium")
FIXTURE_SCOPES_SHARED = frozenset({"module", "class", "package"})


def starts_processes(function: Callable[..., Any]) -> bool:
    """Whether `function` (or one of this suite's functions and classes it names, at any
    depth) names a way to start a process."""
    return _function_starts(function, set())


def _function_starts(function: Any, seen: set[types.CodeType]) -> bool:
    unwrapped = inspect.unwrap(function)  # (a decorator's wrapper has its module's globals)
    code = getattr(unwrapped, "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    return _code_starts(code, unwrapped.__globals__, seen)


def _code_starts(
    code: types.CodeType, namespace: dict[str, Any], seen: set[types.CodeType]
) -> bool:
    if PROCESS_NAMES.intersection(code.co_names):
        return True
    nested = (const for const in code.co_consts if isinstance(const, types.CodeType))
    if any(_code_starts(inner, namespace, seen) for inner in nested):
        return True
    return any(
        _function_starts(callee, seen)
        for name in code.co_names
        for callee in _suite_functions(namespace.get(name))
    )


def _in_suite(value: Any) -> bool:
    """Whether `value` (a function, a class) is defined in this test suite."""
    return str(getattr(value, "__module__", "")).partition(".")[0] == SUITE


def _suite_functions(value: Any) -> Iterable[Any]:
    """The functions of this test suite behind a global: itself, or a class's methods."""
    if not _in_suite(value):
        return ()
    if inspect.isfunction(value):
        return (value,)
    if inspect.isclass(value):
        return [member for member in vars(value).values() if inspect.isfunction(member)]
    return ()


def fixture_functions(item: pytest.Item) -> list[tuple[str, str, Any]]:
    """(name, scope, function) of every fixture the test uses, directly or not."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [
        (name, definitions[-1].scope, definitions[-1].func)
        for name, definitions in info.name2fixturedefs.items()
        if definitions
    ]


def classify(items: list[pytest.Item]) -> None:
    """Mark the fast tier, and group the tests that share a module-scoped fixture."""
    verdicts: dict[Any, bool] = {}

    def starts(function: Any) -> bool:
        if function not in verdicts:
            verdicts[function] = starts_processes(function)
        return verdicts[function]

    for item in items:
        fixtures = fixture_functions(item)
        own = [func for _, _, func in fixtures if _in_suite(func)]
        function = getattr(item, "function", None)
        in_process = not any(starts(func) for func in own) and not (
            function is not None and starts(function)
        )
        if in_process and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.fast)
        for name, scope, func in fixtures:
            if scope in FIXTURE_SCOPES_SHARED and _in_suite(func):
                item.add_marker(pytest.mark.xdist_group(f"{func.__module__}.{name}"))


def order(items: list[pytest.Item]) -> None:
    """Put the tests that take long first and the fast tier last (a stable sort: each
    group keeps its order), so that no worker starts a long test when the others are
    nearly done, and the run ends on tests of a moment that fill the workers evenly.

    pytest-xdist (`--dist loadgroup`) hands out the groups of several tests first (the
    VS Code lanes, largest first), then every other test in this order."""
    items.sort(key=_rank)


def _rank(item: pytest.Item) -> int:
    if item.get_closest_marker("early") is not None:
        return 0
    return 2 if item.get_closest_marker("fast") is not None else 1


def check_group(item: pytest.Item) -> None:
    """Fail a grouped test, before its fixtures run, if pytest-xdist did not tag its node
    id with its group (`...@group`) under `--dist loadgroup`: the group would be spread
    over the workers, and its fixture (the VS Code run) made in each."""
    marker = item.get_closest_marker("xdist_group")
    if marker is None or not getattr(item.config.option, "loadgroup", False):
        return
    if "@" not in item.nodeid:
        pytest.fail(
            f"pytest-xdist did not keep this test in its xdist_group ({marker.args[0]}), so "
            "the group's fixture would run on every worker; pytest 9.2 and later break it "
            "(pytest-xdist#1386). Install the versions pyproject.toml asks for: "
            ".venv/bin/pip install -e '.[test]'",
            pytrace=False,
        )


def heavy_program(event: str, args: tuple[Any, ...]) -> str | None:
    """The program a `subprocess.Popen` audit event starts, if it is one a fast test may
    not start."""
    if event != "subprocess.Popen":
        return None
    executable, argv = args[0], args[1]
    if executable is None:  # the program is the first word of the command
        words = argv.split() if isinstance(argv, str | bytes) else list(argv or ())
        executable = words[0] if words else ""
    program = os.fsdecode(executable)
    name = os.path.basename(program)
    if program == sys.executable or name.startswith(HEAVY_PROGRAMS):
        return program
    return None


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
