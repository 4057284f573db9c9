"""The VS Code extension in the real workbench: code-server, Chromium, the real server.

One run of `editors/vscode/test/run.mjs` (which installs code-server, Chromium and the
node modules when missing, saying so) packages the extension, runs its unit suites, its
integration suites inside code-server's extension host, and its UI scenarios through
Playwright, against `python -m seri_lsp` and the scripted provider started here. The
tests below read that run's results, and check on this side what the provider received.
The work is split in three lanes, three runs at once (`vscode_run`, which packages the
extension and runs the unit and integration suites and a few UI scenarios, and
`vscode_ui` and `vscode_ui3`, the rest of the UI scenarios): in a parallel run each
lane's tests share one worker (tests/tiers.py groups the tests of a module-scoped
fixture), so each run happens once, first, beside the other tests.
Set SERI_SKIP_VSCODE_TESTS=1 to leave them out while working on the server alone, or
SERI_VSCODE_SUITES=ui (a comma-separated choice of unit, integration, ui) to run fewer;
SERI_TEST_GREP (a regular expression, `Deny|queued`) picks tests and scenarios by title.
Screenshots of the scenarios land in the run's folder under `screenshots/`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from seri_lsp.agent.command_gate import WorkspaceAgreements
from seri_lsp.mcp.config import Origin, parse_servers
from seri_lsp.mcp.servers import CONSENT_NAME, consent_lines
from seri_lsp.profile import DB_NAME
from seri_lsp.store.database import Database
from seri_lsp.store.messages import Message
from seri_lsp.store.sessions import SessionStore
from tests.ending_seeds import ENDINGS, seed_turn_endings
from tests.harness import seri
from tests.provider_control import ProviderControl
from tests.scripted_provider import ScriptedProvider, Text
from tests.warm_server import server_command

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = ROOT / "editors" / "vscode"
RUNNER = EXTENSION / "test" / "run.mjs"

# A cold run installs Chromium and code-server first; a warm one takes a few minutes.
pytestmark = pytest.mark.timeout(1800)

STORED = {
    "title": "Explain the tokenizer",
    "prompt": "Explain the tokenizer",
    "reply": "The tokenizer splits the source into words and symbols.",
    # Failing checks handed back to the model: a folded block, never the user's words.
    "checkHeading": "Checks failed: tests",
    "checkOutput": "FAILED tests/test_tokenizer.py::test_split",
}
COMPACT = {
    "reply": "Part one of the parser notes",
    "focus": "keep the parser decisions",
    "goal": "document the parser",
    "summary": (
        "Goal: document the parser\n"
        "Progress: the parser notes cover precedence and errors\n"
        "Blockers: none\n"
        "Next steps: write the README section"
    ),
}
# A session longer than the chat's first page (200 messages): paged in on scrolling up.
LONG = {
    "count": 250,
    "pageSize": 200,
    "first": "Message 001 of the long session",
    "last": "Message 250 of the long session",
}
# A session of a few screens, for the transcript that follows (and the queue after it).
FOLLOW = {"count": 40, "last": "Message 040 of the long session"}
# A session of two exchanges, forked from its first reply.
FORK = {
    "title": "Plan the parser",
    "first": "Plan the parser",
    "firstReply": "First, the grammar: expressions, then statements.",
    "second": "Now plan the lexer",
    "secondReply": "The lexer comes second: tokens and their positions.",
    "forkPrompt": "Instead, plan the error recovery",
    "forkReply": "Error recovery: synchronise on statement ends.",
}
AGENTS = "# Rules\n\n" + "Keep functions short. Test every parser rule.\n" * 4
NOTES = "# Parser notes\n\n" + "The parser recovers from errors at statement ends. " * 30 + "\n"
RESUME = {
    "otherTitle": "Tell me about the lexer",
    "otherReply": "The lexer turns characters into tokens.",
    "latestTitle": "Tell me about the parser",
    "latestReply": "The parser turns tokens into a tree.",
}
# Two sessions: the other is deleted from the resume picker's button, then the open one
# with Seri: Delete Session....
DELETE = {
    "otherTitle": "Sketch the cache layer",
    "otherReply": "The cache keeps the last hundred answers.",
    "latestTitle": "Sketch the retry policy",
    "latestReply": "Retries back off exponentially.",
}
# A long session with a rare word on its first page, and a short latest one; the other
# project's stored session is found only with "all projects".
SEARCH = {
    "title": "Port the tokenizer",
    "count": 250,
    "question": "Where does the tokenizer handle zeppelin escapes?",
    "answer": "The zeppelin escapes are decoded in src/lexer.py, before the tokens.",
    "secret": "Use the key sk-" + "a1b2c3d4e5" * 3 + " for the staging server.",
    "query": "zeppelin esc",
    "latestTitle": "Tell me about the parser",
    "latestReply": "The parser turns tokens into a tree.",
    "otherProjectQuery": "tokenizer splits",
    "renamed": "Tokenizer: zeppelin escapes",
    "bundle": "tokenizer-bundle.json",
}


@dataclass
class VSCodeRun:
    """What one run of the runner left: its exit code, results, and the provider's log."""

    returncode: int
    work: Path
    provider: ScriptedProvider
    suites: list[str]

    def results(self, suite: str) -> list[dict[str, Any]]:
        if suite not in self.suites:
            pytest.skip(f"SERI_VSCODE_SUITES leaves out {suite}")
        path = self.work / "results" / f"{suite}.json"
        if not path.exists():
            return []
        return json.loads(path.read_text())["tests"]

    def check_suite(self, suite: str, minimum: int) -> None:
        tests = self.results(suite)
        failed = [f"{t['title']}\n{t.get('error', '')}" for t in tests if t["state"] != "passed"]
        assert not failed, f"{suite} failures:\n" + "\n\n".join(failed)
        assert len(tests) >= minimum, (
            f"only {len(tests)} {suite} tests ran (runner exit {self.returncode}); "
            f"see the output above and {self.work}"
        )

    def check_scenario(self, title_start: str) -> None:
        matching = [t for t in self.results("ui") if t["title"].startswith(title_start)]
        # (a runner that stopped on an error, exit 2, ran nothing: that is no skip)
        if not matching and os.environ.get("SERI_TEST_GREP") and self.returncode != 2:
            pytest.skip("SERI_TEST_GREP leaves this scenario out")
        assert matching, f"the UI scenario '{title_start}...' did not run (exit {self.returncode})"
        scenario = matching[0]
        assert scenario["state"] == "passed", scenario.get("error")


def seed(
    provider: ScriptedProvider,
    profile: Path,
    workspace: Path,
    prompt: str,
    reply: str,
    *,
    new: bool,
) -> None:
    """Store an exchange the way a user of the terminal face would: `seri-lsp run`."""
    provider.script(Text(reply))
    args = ["run", prompt, "--profile-root", str(profile), "--workspace", str(workspace)]
    env = {"SERI_BASE_URL": provider.base_url, "SERI_MODEL": provider.model}
    done = seri(*args, *([] if new else ["--continue"]), cwd=workspace, env=env)
    assert done.returncode == 0, done.stderr


def seed_long_session(profile: Path, workspace: Path, count: int) -> None:
    """A session of `count` messages in the store, written directly (a run per exchange
    would take minutes)."""
    profile.mkdir(parents=True, exist_ok=True)
    db = Database.open(profile / DB_NAME)
    try:
        store = SessionStore(db)
        session = store.create(str(workspace))
        for number in range(1, count + 1):
            role = "user" if number % 2 else "assistant"
            text = f"Message {number:03d} of the long session"
            store.append(session.id, Message(role=role, content=text))
    finally:
        db.close()


def seed_search_session(profile: Path, workspace: Path) -> None:
    """A session of `SEARCH["count"]` messages whose rare words (and a key) are in its
    first page (the chat shows the newest 200 first), stored directly like the long one."""
    profile.mkdir(parents=True, exist_ok=True)
    db = Database.open(profile / DB_NAME)
    try:
        store = SessionStore(db)
        session = store.create(str(workspace), title=SEARCH["title"])
        special = {3: SEARCH["question"], 4: SEARCH["answer"], 5: SEARCH["secret"]}
        for number in range(1, SEARCH["count"] + 1):
            role = "user" if number % 2 else "assistant"
            text = special.get(number, f"Message {number:03d} of the tokenizer session")
            store.append(session.id, Message(role=role, content=text))
    finally:
        db.close()


def seed_check_failure(profile: Path, workspace: Path, output: str) -> None:
    """Append a `kind: "check"` message, as the checks store one, to the latest session."""
    db = Database.open(profile / DB_NAME)
    try:
        store = SessionStore(db)
        session = store.latest(str(workspace))
        assert session is not None
        text = (
            "The checks failed after your changes (round 1 of 3):\n\n"
            f"tests: `pytest -q` exited with 1 after 0.4 s.\n```\n{output}\n```\n\n"
            "Fix what they report. They run again when you finish after changing files."
        )
        store.append(session.id, Message(role="user", content=text, kind="check"))
    finally:
        db.close()


def make_workspace(
    root: Path,
    name: str,
    settings: dict[str, Any] | None = None,
    files: dict[str, str] | None = None,
) -> Path:
    folder = root / name
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.py").write_text('print("hello")\n')
    for relative, text in (files or {}).items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    if settings:
        (folder / ".vscode").mkdir()
        (folder / ".vscode" / "settings.json").write_text(json.dumps(settings, indent=2))
    return Path(os.path.realpath(folder))


# The MCP servers of the integration workspace (src/test/suite/13_mcp.test.ts): our test
# server, and one whose command does not exist.
INTEGRATION_MCP = {
    "probe": {
        "command": sys.executable,
        "args": [str(Path(__file__).parent / "mcp_servers" / "seri_test_server.py")],
    },
    "broken": {"command": "/nonexistent/seri-mcp-server"},
}


def agree_to_mcp_servers(profile: Path, workspace: Path, servers: dict[str, Any]) -> None:
    """Keep "Allow" for the MCP servers a workspace's own settings configure."""
    configs = parse_servers(servers, Origin.WORKSPACE, "the test", [], os.environ)
    profile.mkdir(parents=True, exist_ok=True)
    WorkspaceAgreements(profile, CONSENT_NAME).agree(
        str(workspace), consent_lines(list(configs.values()))
    )


# The UI scenarios run in three lanes at once, each a run of its own (its code-server,
# browser, profile and provider), so the longest chain of the suite is about a third as
# long. The first lane also packages the extension and runs the unit and integration
# suites (about as long as the UI scenarios of one lane), so it keeps only the folders in
# neither set below. A scenario that searches every project finds `stored`'s session, so
# the two share a lane. Balanced by the scenarios' durations (each lane's ui.json).
SECOND_LANE = frozenset(
    {"stored", "long", "tools", "compact", "resume", "ask", "deny", "search", "context"}
)
THIRD_LANE = frozenset(
    {
        "run",
        "status",
        "attach",
        "links",
        "follow",
        "retry",
        "endings",
        "keys",
        "questions",
        "bundled",
        "fork",
        "delete",
    }
)


LANES = 3  # (tests/conftest.py starts a worker more for each)


def lane_of(folder: str) -> int:
    """The lane (1, 2 or 3) that runs the UI scenarios of `folder`."""
    return 2 if folder in SECOND_LANE else 3 if folder in THIRD_LANE else 1


@pytest.fixture(scope="module")
def vscode_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VSCodeRun]:
    """The first lane: the package, the unit and integration suites, and the UI scenarios
    of the folders in no other lane."""
    yield from run_lane(request, tmp_path_factory, number=1)


@pytest.fixture(scope="module")
def vscode_ui(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VSCodeRun]:
    """The second lane: the UI scenarios of the SECOND_LANE folders."""
    yield from run_lane(request, tmp_path_factory, number=2)


@pytest.fixture(scope="module")
def vscode_ui3(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[VSCodeRun]:
    """The third lane: the UI scenarios of the THIRD_LANE folders."""
    yield from run_lane(request, tmp_path_factory, number=3)


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this test session that every pytest-xdist worker shares."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return Path(os.path.realpath(shared)) / "vscode-shared"


def run_lane(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, *, number: int
) -> Iterator[VSCodeRun]:
    """One run of the runner; the lanes share the .vsix (the first to need it packages it)."""
    if os.environ.get("SERI_SKIP_VSCODE_TESTS"):
        pytest.skip("SERI_SKIP_VSCODE_TESTS is set")
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("The VS Code tests need Node.js 20 and npm on PATH.")
    suites = os.environ.get("SERI_VSCODE_SUITES", "unit,integration,ui").split(",")
    if number != 1:
        suites = [suite for suite in suites if suite == "ui"]
        if not suites:
            pytest.skip("SERI_VSCODE_SUITES leaves out ui")
    work = Path(os.path.realpath(tmp_path_factory.mktemp(f"vscode-lane{number}")))
    provider = ScriptedProvider().start()
    control = ProviderControl(provider).start()
    try:
        # The carried server's scenario needs a PATH whose python3 has no seri-lsp.
        path = os.pathsep.join(
            folder
            for folder in os.environ.get("PATH", "").split(os.pathsep)
            if folder and not (Path(folder) / "seri-lsp").exists()
        )
        bare = subprocess.run(
            ["python3", "-c", "import seri_lsp"],
            env={**os.environ, "PATH": path},
            cwd=work,
            capture_output=True,
            check=False,
        )
        assert bare.returncode != 0, "python3 on PATH (less seri-lsp's folders) has seri_lsp"
        profile = work / "profile"
        folders = work / "workspaces"
        workspaces = {
            "integration": make_workspace(
                folders,
                "integration",
                {"seri.provider.keepTokens": 40, "seri.mcpServers": INTEGRATION_MCP},
            ),
            "stored": make_workspace(folders, "stored"),
            "tools": make_workspace(folders, "tools"),
            "compact": make_workspace(
                folders,
                "compact",
                {"seri.provider.contextWindow": 4000, "seri.provider.keepTokens": 150},
            ),
            "resume": make_workspace(folders, "resume"),
            "long": make_workspace(folders, "long"),
            "ask": make_workspace(
                folders, "ask", {"seri.permissions.write": "ask"}, {"README.md": "# Ask\n"}
            ),
            "deny": make_workspace(folders, "deny", {"seri.permissions.write": "ask"}),
            "run": make_workspace(folders, "run"),
            "status": make_workspace(folders, "status"),
            "attach": make_workspace(folders, "attach", files={"docs/guide.md": "# Guide\n"}),
            "links": make_workspace(folders, "links"),
            "follow": make_workspace(folders, "follow"),
            "retry": make_workspace(folders, "retry"),
            "endings": make_workspace(folders, "endings"),
            "keys": make_workspace(folders, "keys"),
            "questions": make_workspace(
                folders, "questions", {"seri.permissions.write": "ask"}, {"README.md": "# App\n"}
            ),
            # No server command of its own: the one the extension carries.
            "bundled": make_workspace(folders, "bundled", {"seri.server.command": []}),
            "fork": make_workspace(folders, "fork"),
            "delete": make_workspace(folders, "delete"),
            "mcp": make_workspace(folders, "mcp", {"seri.mcpServers": INTEGRATION_MCP}),
            "search": make_workspace(
                folders, "search", files={"notes/other.json": '{"format": "notes", "items": []}\n'}
            ),
            "context": make_workspace(
                folders,
                "context",
                {"seri.provider.contextWindow": 4000},
                {"AGENTS.md": AGENTS, "docs/notes.md": NOTES},
            ),
        }
        lane = {name for name in workspaces if lane_of(name) == number}
        if "stored" in lane:
            seed(
                provider, profile, workspaces["stored"], STORED["prompt"], STORED["reply"], new=True
            )
            seed_check_failure(profile, workspaces["stored"], STORED["checkOutput"])
        if "compact" in lane:
            for index, topic in enumerate(["precedence", "errors", "recovery"]):
                reply = f"{COMPACT['reply']}, on {topic}: " + "rules and their reasons. " * 60
                prompt = f"Write notes on {topic}"
                seed(provider, profile, workspaces["compact"], prompt, reply, new=index == 0)
        if "fork" in lane:
            seed(provider, profile, workspaces["fork"], FORK["first"], FORK["firstReply"], new=True)
            seed(
                provider,
                profile,
                workspaces["fork"],
                FORK["second"],
                FORK["secondReply"],
                new=False,
            )
        if "long" in lane:
            seed_long_session(profile, workspaces["long"], LONG["count"])
        if "search" in lane:
            seed_search_session(profile, workspaces["search"])
            latest = SEARCH["latestTitle"], SEARCH["latestReply"]
            seed(provider, profile, workspaces["search"], *latest, new=True)
        if "follow" in lane:
            seed_long_session(profile, workspaces["follow"], FOLLOW["count"])
        if "endings" in lane:
            seed_turn_endings(profile, workspaces["endings"])
        if "resume" in lane:
            other = RESUME["otherTitle"], RESUME["otherReply"]
            seed(provider, profile, workspaces["resume"], *other, new=True)
            latest = RESUME["latestTitle"], RESUME["latestReply"]
            seed(provider, profile, workspaces["resume"], *latest, new=True)

        if "integration" in lane:
            # Its settings' MCP servers are the workspace's own: agreed to already, as
            # "Allow" keeps it (the UI lane's `mcp` workspace asks in the chat).
            agree_to_mcp_servers(profile, workspaces["integration"], INTEGRATION_MCP)
        if "delete" in lane:
            for title, reply in [("otherTitle", "otherReply"), ("latestTitle", "latestReply")]:
                seed(
                    provider, profile, workspaces["delete"], DELETE[title], DELETE[reply], new=True
                )

        config = {
            "serverCommand": server_command(),
            "python": sys.executable,
            "providerUrl": provider.base_url,
            "controlUrl": control.url,
            "profileRoot": str(profile),
            "workDir": str(work),
            "workspaces": {name: str(path) for name, path in workspaces.items()},
            "scenarioWorkspaces": sorted(lane),
            "ui": {
                "stored": STORED,
                "compact": COMPACT,
                "resume": RESUME,
                "long": LONG,
                "follow": FOLLOW,
                "fork": FORK,
                "search": SEARCH,
                "endings": ENDINGS,
                "delete": DELETE,
            },
        }
        config_file = work / "config.json"
        config_file.write_text(json.dumps(config, indent=2))
        # The runner says what it installs and how each suite went: let that reach the
        # terminal as it happens rather than only when a test fails. On stderr: a
        # pytest-xdist worker's stdout goes nowhere.
        capture = request.config.pluginmanager.getplugin("capturemanager")
        live = capture.global_and_fixture_disabled() if capture else contextlib.nullcontext()
        with live:
            command = ["node", str(RUNNER), "--config", str(config_file)]
            command += [
                "--suites",
                ",".join(suites),
                "--shared",
                str(shared_folder(tmp_path_factory)),
            ]
            done = subprocess.run(command, cwd=EXTENSION, stdout=sys.stderr, timeout=1700)
        yield VSCodeRun(done.returncode, work, provider, suites)
    finally:
        control.stop()
        provider.stop()


def test_the_extension_packages_as_a_vsix_that_carries_its_server(vscode_run: VSCodeRun) -> None:
    vsix = vscode_run.work / "seri-vscode.vsix"
    assert vsix.exists(), f"vsce package made no .vsix (runner exit {vscode_run.returncode})"
    # The limit of scripts/package.mjs (MAX_VSIX_BYTES): the MCP SDK's wheels made it 27 MB.
    assert vsix.stat().st_size < 35 * 1024 * 1024
    names = set(zipfile.ZipFile(vsix).namelist())
    wheels = [n.rsplit("/", 1)[1] for n in names if n.startswith("extension/bundled/wheels/")]
    assert any(n.startswith("seri_lsp-") for n in wheels)
    # The dependencies with native code, for every Python the extension supports.
    for python in ("cp311", "cp312", "cp313", "cp314"):
        for package in ("regex-", "pydantic_core-", "pyyaml-"):
            assert any(n.lower().startswith(package) and f"-{python}-" in n for n in wheels), (
                package,
                python,
            )
    assert "extension/bundled/manifest.json" in names
    assert any(n.startswith("extension/bundled/pip/pip-") for n in names)
    for name in [
        "extension/package.json",
        "extension/dist/extension.js",
        "extension/dist/webview/main.js",
        "extension/dist/webview/main.css",
        "extension/media/icon.png",
        "extension/readme.md",
    ]:
        assert name in names
    assert not any(name.startswith("extension/node_modules/") for name in names)


def test_unit_suites_pass(vscode_run: VSCodeRun) -> None:
    vscode_run.check_suite("unit", minimum=10)


def test_integration_suites_pass_inside_the_extension_host(vscode_run: VSCodeRun) -> None:
    vscode_run.check_suite("integration", minimum=20)


def test_a_stored_session_is_shown_in_the_chat_on_open(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("a stored session is shown in the chat")


def test_a_long_session_pages_in_earlier_messages_on_scrolling_up(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("a long session shows its newest page")


def test_a_prompt_with_a_tool_call_streams_and_shows_the_tool_row(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("a prompt with a tool call")
    prompts = [
        message["content"]
        for request in vscode_ui.provider.requests
        for message in request.get("messages", [])
        if message["role"] == "user"
    ]
    assert "What does src/app.py do?\nBe brief." in prompts


def test_rewind_from_the_palette_puts_the_prompt_back_in_the_chat_input(
    vscode_ui: VSCodeRun,
) -> None:
    vscode_ui.check_scenario("Rewind... from the palette")


def test_compact_from_the_palette_shows_the_recap_and_lowers_the_percentage(
    vscode_ui: VSCodeRun,
) -> None:
    vscode_ui.check_scenario("Compact Context... from the palette")
    # The summariser's request is the turns' prefix, its tools kept but not to be called.
    summaries = [r for r in vscode_ui.provider.requests if r.get("tool_choice") == "none"]
    assert any(COMPACT["focus"] in json.dumps(r["messages"]) for r in summaries)


def test_resume_from_the_quickpick_shows_the_other_session(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("Resume Session... from the QuickPick")


def user_prompts(vscode_run: VSCodeRun) -> list[str]:
    """The last user message of every chat request the provider received."""
    prompts = []
    for request in vscode_run.provider.requests:
        users = [m["content"] for m in request.get("messages", []) if m["role"] == "user"]
        if users:
            prompts.append(users[-1])
    return prompts


def test_a_write_is_asked_in_the_chat_and_allowed_from_its_card(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("a write is asked in the chat")
    edited = vscode_ui.work / "workspaces" / "ask" / "src" / "app.py"
    assert edited.read_text() == 'print("hello, world")\n'


def test_a_deny_with_a_note_reaches_the_model(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("a Deny with a note")
    results = [
        m["content"]
        for request in vscode_ui.provider.requests
        for m in request.get("messages", [])
        if m["role"] == "tool" and m.get("tool_call_id") == "call-deny"
    ]
    assert "Denied: the user denied this write: keep the greeting as it is." in results
    untouched = vscode_ui.work / "workspaces" / "deny" / "src" / "app.py"
    assert untouched.read_text() == 'print("hello")\n'


def test_a_question_whose_task_is_stopped_leaves_the_chat(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("a question whose task is stopped leaves the chat")
    assert not (vscode_ui.work / "workspaces" / "deny" / "notes.md").exists()


def test_the_working_line_says_what_the_task_waits_for(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("the working line says what the task waits for")


def test_attached_context_reaches_the_prompt(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("the selection, a picked file and the buffer")
    assert (
        "Explain these\n\n"
        "Attached: @docs/guide.md, @src/app.py\n\n"
        '<context path="src/app.py" lines="1">\nprint("hello")\n</context>'
    ) in user_prompts(vscode_ui3)


def test_file_names_open_files_and_code_is_highlighted(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("file names in a reply open the file")


def test_a_reply_is_drawn_the_same_while_it_streams_and_after(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("a reply is drawn the same while it streams")


def test_the_transcript_follows_new_output(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("the transcript follows new output")


def test_a_prompt_sent_while_busy_is_queued_then_answered(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("a prompt sent while a task runs is queued")
    prompts = user_prompts(vscode_ui3)
    assert "Second question" in prompts
    assert "Never mind this one" not in prompts


def test_a_failed_task_is_retried_from_the_chat(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("a failed task says why in the chat")
    assert user_prompts(vscode_ui3).count("Summarise everything") == 2
    # The retry's request holds the prompt once: the failed try, which stored nothing
    # after it, was rewound first.
    tries = [
        [m["content"] for m in request.get("messages", []) if m["role"] == "user"]
        for request in vscode_ui3.provider.requests
    ]
    retried = [users for users in tries if users and users[-1] == "Summarise everything"][-1]
    assert retried == ["Summarise everything"]


def test_a_reopened_chat_says_how_each_turn_ended(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("a reopened chat says how each turn ended")


def test_the_carried_server_installs_itself_and_the_chat_works(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("the server the extension carries installs itself")
    assert "What does src/app.py do?" in user_prompts(vscode_ui3)
    # The output channel said what it did and how long it took.
    logs = vscode_ui3.work / "code-server" / "user" / "logs"
    said = "\n".join(p.read_text() for p in logs.rglob("Seri.log"))
    assert "Installing the seri server 0.1.0 that this extension carries into " in said
    assert re.search(r"Installed the seri server 0\.1\.0 in \d+\.\d s", said), said[-2000:]


def test_the_key_bindings_work_and_clash_with_no_default(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("the key bindings focus the chat")


def test_a_long_task_asks_three_times_and_each_answer_holds(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("a long task asks three times")
    folder = vscode_ui3.work / "workspaces" / "questions"
    assert (folder / "src" / "app.py").read_text().startswith("def main():\n")
    assert (folder / "tests" / "test_app.py").exists()
    assert "Tests run with pytest -q" in (folder / ".seri" / "memory.md").read_text()


def test_a_command_streams_its_output_under_its_row_and_stop_ends_it(
    vscode_ui3: VSCodeRun,
) -> None:
    vscode_ui3.check_scenario("a command is asked about with its line and folder")
    results = [
        m["content"]
        for request in vscode_ui3.provider.requests
        for m in request.get("messages", [])
        if m.get("role") == "tool" and m.get("tool_call_id") in ("call-lines", "call-sleep")
    ]
    assert any(r.startswith("exit code 0") and "line5" in r for r in results), results
    assert any(r.startswith("stopped by the user\nbegun") for r in results), results


def test_fork_from_a_message_continues_from_there(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("Fork from Here on a message")
    asked = [
        [(m["role"], m["content"]) for m in request.get("messages", [])[1:]]
        for request in vscode_ui3.provider.requests
        if any(m.get("content") == FORK["forkPrompt"] for m in request.get("messages", []))
    ]
    assert asked == [
        [
            ("user", FORK["first"]),
            ("assistant", FORK["firstReply"]),
            ("user", FORK["forkPrompt"]),
        ]
    ]


def test_the_context_bar_shows_its_parts_and_the_spend(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("the context bar is a segment per part")


def test_search_sessions_opens_the_hit_in_an_earlier_page(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("Search Sessions... searches as you type")


def test_rename_session_shows_the_new_title_in_the_header(vscode_ui: VSCodeRun) -> None:
    vscode_ui.check_scenario("Rename Session... shows the new title")


def test_export_then_import_makes_a_new_session_with_the_conversation(
    vscode_ui: VSCodeRun,
) -> None:
    vscode_ui.check_scenario("Export Session... to a .json file, then Import Session...")
    bundle = json.loads((vscode_ui.work / "workspaces" / "search" / SEARCH["bundle"]).read_text())
    assert bundle["format"] == "seri-session"
    assert bundle["title"] == SEARCH["renamed"]
    assert len(bundle["messages"]) == SEARCH["count"]
    assert "sk-a1b2" not in json.dumps(bundle), "the key left in the bundle"


def test_mcp_servers_quick_pick_shows_status_and_restarts(vscode_run: VSCodeRun) -> None:
    vscode_run.check_scenario("Seri: MCP Servers: the workspace")


def test_delete_session_from_the_picker_and_the_palette(vscode_ui3: VSCodeRun) -> None:
    vscode_ui3.check_scenario("Delete Session... and the picker's delete button")
    store = SessionStore(Database.open(vscode_ui3.work / "profile" / DB_NAME))
    try:
        titles = [
            info.title for info in store.recent(str(vscode_ui3.work / "workspaces" / "delete"))
        ]
    finally:
        store.db.close()
    assert titles == [""], "only the new session the deletion opened is left"
