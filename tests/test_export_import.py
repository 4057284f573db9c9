"""Carrying sessions: `seri.session.export` (JSON bundle, markdown), `seri.session.import`,
and `seri-lsp export` / `seri-lsp import`.

An export names no absolute path of the workspace and carries no secret; an import makes
a new session of the project it is made in, once per bundle; a bad bundle is refused
naming what is wrong, and nothing is written.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from pytest_lsp import LanguageClient

from seri_lsp.export.markdown import RESULT_CHARS
from tests.agent_helpers import prompt
from tests.harness import command, seri, stop_server
from tests.scripted_provider import Calls, ScriptedProvider, Text, usage
from tests.session_helpers import assert_index_agrees, invalid, search
from tests.trajectory_helpers import rows

API_KEY = "my-configured-key-0123456789"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5" * 4
OPENAI_KEY = "sk-proj-" + "Zy9Xw8Vu7T" * 3
BIG = "line of the big file\n" * 200  # over RESULT_CHARS


async def carried_session(
    agent: Any, provider: ScriptedProvider, workspace: Path
) -> tuple[LanguageClient, str]:
    """A session whose history names the workspace by its absolute path, a file outside
    it, and secrets: in a tool call's arguments, a tool result, and the replies."""
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text(
        f'DATA = "{workspace}/data"  # token {GITHUB_TOKEN}\nHOSTS = "/etc/hosts"\n'
    )
    (workspace / "big.txt").write_text(BIG)
    provider.script(
        Calls(
            [
                ("c1", "read_file", {"path": f"{workspace}/src/app.py"}),
                ("c2", "read_file", {"path": "big.txt"}),
            ],
            usage=usage(1200),
        ),
        Text(f"DATA sits in {workspace}/data. Your key {API_KEY} and {OPENAI_KEY} leaked."),
    )
    client = await agent(provider_extra={"apiKey": API_KEY})
    result = await prompt(client, f"What does {workspace}/src/app.py point at?")
    assert result["status"] == "done"
    return client, result["sessionId"]


async def export(client: LanguageClient, export_format: str, **args: Any) -> dict[str, Any]:
    return await command(client, "seri.session.export", {"format": export_format, **args})


def without_ids(bundle: dict[str, Any]) -> dict[str, Any]:
    """A bundle's conversation: all of it but the session's and the messages' ids and the
    project's name."""
    rest = {k: v for k, v in bundle.items() if k not in ("sessionId", "project")}
    rest["messages"] = [{k: v for k, v in m.items() if k != "id"} for m in bundle["messages"]]
    return rest


async def test_a_json_bundle_carries_the_conversation_but_no_workspace_path_or_secret(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client, session_id = await carried_session(agent, provider, workspace)
    result = await export(client, "json")
    assert (result["format"], result["redactions"]) == ("json", 3)
    text = result["text"]
    for leak in (str(workspace), API_KEY, GITHUB_TOKEN, OPENAI_KEY):
        assert leak not in text
    bundle = json.loads(text)
    view = await command(client, "seri.session.get", {"sessionId": session_id})
    session = view["session"]
    assert {k: bundle[k] for k in ("format", "version", "sessionId", "project", "title")} == {
        "format": "seri-session",
        "version": 1,
        "sessionId": session_id,
        "project": workspace.name,
        "title": "What does src/app.py point at?",
    }
    assert (bundle["createdAt"], bundle["updatedAt"]) == (
        session["createdAt"],
        session["updatedAt"],
    )
    assert bundle["paths"] == {"read": ["src/app.py", "big.txt"], "modified": []}
    assert bundle["usage"]["lastInputTokens"] == 1200
    assert bundle["outsidePaths"] == ["/etc/hosts"]
    # The messages as seri.session.get gives them, but for what was filtered.
    assert [(m["id"], m["role"]) for m in bundle["messages"]] == [
        (m["id"], m["role"]) for m in view["messages"]
    ]
    user, call, app, big, answer = bundle["messages"]
    assert user["content"] == "What does src/app.py point at?"
    assert json.loads(call["tool_calls"][0]["arguments"]) == {"path": "src/app.py"}
    assert app["content"] == 'DATA = "data"  # token [redacted]\nHOSTS = "/etc/hosts"\n'
    assert big["content"] == BIG
    assert answer["content"] == "DATA sits in data. Your key [redacted] and [redacted] leaked."


async def test_a_markdown_export_is_a_transcript_for_people(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client, _ = await carried_session(agent, provider, workspace)
    result = await export(client, "markdown")
    assert (result["format"], result["redactions"]) == ("markdown", 3)
    text = result["text"]
    for leak in (str(workspace), API_KEY, GITHUB_TOKEN, OPENAI_KEY):
        assert leak not in text
    lines = text.splitlines()
    assert lines[0] == "# What does src/app.py point at?"
    assert f"project `{workspace.name}`; model `test/model`" in lines[2]
    assert lines.count("## You") == 1 and lines.count("## seri") == 2
    assert "<summary><code>read_file src/app.py</code></summary>" in lines
    assert "<summary><code>read_file big.txt</code></summary>" in lines
    assert f"Result (the first {RESULT_CHARS:,} of {len(BIG):,} characters):" in lines
    assert lines.count("</details>") == 2
    assert "DATA sits in data. Your key [redacted] and [redacted] leaked." in lines


async def test_the_recap_is_exported_as_a_block(agent, provider: ScriptedProvider) -> None:
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    for n in range(3):
        provider.script(Text(f"reply {n} " + "x" * 400, usage=usage(100)))
        assert (await prompt(client, f"prompt {n}"))["status"] == "done"
    provider.script(Text("Goal: test\nProgress: exported\nBlockers: none\nNext steps: import it"))
    assert (await prompt(client, "/compact"))["compacted"] is True
    bundle = json.loads((await export(client, "json"))["text"])
    assert bundle["messages"][0]["kind"] == "recap"
    assert bundle["messages"][0]["recap"]["progress"] == "exported"
    markdown = (await export(client, "markdown"))["text"]
    assert "> **Recap of the earlier conversation**" in markdown
    assert "> Progress:\n> exported" in markdown


async def test_export_arguments_are_checked(lsp, workspace: Path) -> None:
    client = await lsp(init_options={"resumeOnOpen": False})
    message, field = await invalid(client, "seri.session.export", {"format": "json"})
    assert field == "sessionId" and "No session is open" in message
    await command(client, "seri.session.new")
    message, field = await invalid(client, "seri.session.export", {"format": "pdf"})
    assert (field, message) == ("format", 'format must be "markdown" or "json", got \'pdf\'')
    assert (await invalid(client, "seri.session.export", {}))[1] == "format"
    args = {"format": "json", "sessionId": "nope"}
    assert (await invalid(client, "seri.session.export", args))[1] == "sessionId"


async def test_an_import_is_a_new_session_here_and_importing_it_again_answers_that_one(
    agent, provider: ScriptedProvider, workspace: Path, tmp_path: Path, profile_root: Path
) -> None:
    client, _ = await carried_session(agent, provider, workspace)
    text = (await export(client, "json"))["text"]
    await stop_server(client)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = await agent(workspace=elsewhere, init_options={"resumeOnOpen": False})
    imported = await command(other, "seri.session.import", {"text": text})
    session = imported["session"]
    assert imported["alreadyImported"] is False
    assert session["project"] == str(elsewhere.resolve())
    assert session["title"] == "What does src/app.py point at?"
    assert other.seri["seri/sessionChanged"] == []  # made, not opened
    again = await command(other, "seri.session.import", {"text": text})
    assert (again["session"]["id"], again["alreadyImported"]) == (session["id"], True)
    listed = (await command(other, "seri.session.list"))["sessions"]
    assert [s["id"] for s in listed] == [session["id"]]
    # Indexed for search as it was stored.
    [hit] = (await search(other, "leaked"))["hits"]
    assert hit["sessionId"] == session["id"]
    assert_index_agrees(profile_root)
    # Exporting it gives the same conversation.
    round_trip = json.loads((await export(other, "json", sessionId=session["id"]))["text"])
    assert without_ids(round_trip) == without_ids(json.loads(text))
    # And the model sees it when the session goes on.
    await command(other, "seri.session.resume", {"sessionId": session["id"]})
    provider.script(Text("Still data."))
    assert (await prompt(other, "and now?"))["status"] == "done"
    sent = provider.chat_requests(with_tools=True)[-1]["messages"]
    assert sent[1]["content"] == "What does src/app.py point at?"
    assert sent[-1]["content"] == "and now?"


def _bundle(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "format": "seri-session",
        "version": 1,
        "sessionId": "s",
        "project": "p",
        "title": "t",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "name": "read_file", "arguments": "{}"}],
            },
            {"role": "tool", "content": "ok", "tool_call_id": "c1"},
        ],
    }
    return {**copy.deepcopy(base), **changes}


BAD_BUNDLES = [
    ("not json", "it is not valid JSON"),
    ("# A transcript\n\n## You\n", "markdown transcript"),
    ("[1, 2]", "it is not a JSON object"),
    (json.dumps(_bundle(format="other")), 'its "format" is \'other\', not "seri-session"'),
    (json.dumps(_bundle(version=2)), 'its "version" is 2; this seri-lsp reads version 1'),
    (json.dumps(_bundle(messages="many")), '"messages" must be a list'),
    (json.dumps(_bundle(messages=[{"role": "system", "content": "x"}])), "message 1 has the role"),
    (json.dumps(_bundle(messages=[{"role": "user", "content": 5}])), "message 1: content"),
    (
        json.dumps(_bundle(messages=[{"role": "tool", "content": "x", "tool_call_id": "c9"}])),
        "message 1 is the result of tool call 'c9', which the assistant message before it",
    ),
    (
        json.dumps(_bundle(messages=[*_bundle()["messages"], _bundle()["messages"][2]])),
        "message 4 answers tool call 'c1' a second time",
    ),
    (
        json.dumps(_bundle(messages=[{"role": "user", "content": "x", "createdAt": "today"}])),
        "message 1: createdAt is 'today', not an ISO-8601 time",
    ),
    (json.dumps(_bundle(paths={"read": [1]})), '"paths.read" must be a list of strings'),
    (
        json.dumps(
            _bundle(messages=[{"role": "user", "kind": "recap", "recap": {"toolCalls": "2"}}])
        ),
        "message 1: recap.toolCalls must be a whole number",
    ),
    (
        json.dumps(
            _bundle(messages=[{"role": "user", "kind": "recap", "recap": {"tokensAfter": -1}}])
        ),
        "message 1: recap.tokensAfter must be a whole number or null",
    ),
]


async def test_a_bad_bundle_is_refused_naming_what_is_wrong_and_nothing_is_written(
    lsp, profile_root: Path
) -> None:
    client = await lsp(init_options={"resumeOnOpen": False})
    for text, words in BAD_BUNDLES:
        message, field = await invalid(client, "seri.session.import", {"text": text})
        assert field == "text"
        assert message.startswith("This is not a seri session bundle that can be imported: ")
        assert words in message, (text, message)
    assert (await command(client, "seri.session.list"))["sessions"] == []
    assert rows(profile_root, "SELECT COUNT(*) FROM messages") == [(0,)]
    assert rows(profile_root, "SELECT COUNT(*) FROM session_imports") == [(0,)]
    # The same shapes, whole, import fine.
    made = await command(client, "seri.session.import", {"text": json.dumps(_bundle())})
    assert made["session"]["messageCount"] == 3


async def test_the_command_line_exports_and_imports(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path, tmp_path: Path
) -> None:
    client, session_id = await carried_session(agent, provider, workspace)
    by_command = await export(client, "json")
    await stop_server(client)
    root = ("--profile-root", str(profile_root))
    env = {"SERI_API_KEY": API_KEY}
    out = tmp_path / "carried.json"
    written = seri("export", session_id[:8], "-o", str(out), *root, cwd=workspace, env=env)
    assert written.returncode == 0, written.stderr
    assert written.stderr == "seri-lsp: 3 secret(s) replaced by [redacted].\n"
    assert json.loads(out.read_text()) == json.loads(by_command["text"])
    transcript = seri("export", session_id, *root, cwd=workspace, env=env)
    assert transcript.stdout.startswith("# What does src/app.py point at?\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = seri("import", str(out), *root, cwd=elsewhere)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("Imported as session ")
    new_id = first.stdout.split()[3]
    again = seri("import", str(out), *root, cwd=elsewhere)
    assert again.stdout.startswith(f"Already imported: session {new_id} ")
    listed = json.loads(seri("sessions", "--json", *root, cwd=elsewhere).stdout)
    assert [s["id"] for s in listed] == [new_id]

    markdown = tmp_path / "carried.md"
    markdown.write_text(transcript.stdout)
    refused = seri("import", str(markdown), *root, cwd=elsewhere)
    assert refused.returncode == 1 and "markdown transcript" in refused.stderr
    huge = tmp_path / "huge.json"
    with huge.open("wb") as handle:
        handle.truncate(64 * 2**20 + 1)
    too_big = seri("import", str(huge), *root, cwd=elsewhere)
    assert too_big.returncode == 1 and "at most 64 MiB can be imported" in too_big.stderr


async def test_an_import_next_to_its_source_gets_a_distinct_title(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    """Imported into the project it came from, the copy is marked "(imported)" (then
    numbered), so the pickers do not show two identical rows; elsewhere it keeps its
    title (see the import test above)."""
    client, _ = await carried_session(agent, provider, workspace)
    bundle = json.loads((await export(client, "json"))["text"])
    title = "Where DATA points"
    await command(client, "seri.session.rename", {"title": title})
    bundle["title"] = title
    titles = []
    for n in range(2):
        bundle["messages"][0]["content"] += f" {n}"  # another bundle, not the same again
        imported = await command(client, "seri.session.import", {"text": json.dumps(bundle)})
        titles.append(imported["session"]["title"])
    assert titles == [f"{title} (imported)", f"{title} (imported 2)"]
