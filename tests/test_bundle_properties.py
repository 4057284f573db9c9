"""Properties of exports, over any conversation (hypothesis, real seri.db files):

- exporting an imported bundle gives the same conversation (the round trip);
- no secret and no absolute path of the workspace is left in an export, JSON or markdown,
  wherever in the conversation they were.
"""

from __future__ import annotations

import functools
import json
import string
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seri_lsp.export.bundle import export_session, import_bundle, read_bundle
from seri_lsp.store.database import Database
from seri_lsp.store.messages import Message, Recap, ToolCall
from seri_lsp.store.sessions import SessionStore

ROOTS = ["/home/ana/work/app", "/Users/bo/Code/my-proj", "/srv/x y/repo (2)"]
ALNUM = string.ascii_letters + string.digits

words = st.text(max_size=30)
relative = st.from_regex(r"[a-z]{1,8}(/[a-z_]{1,8}){0,2}\.(py|md|txt)", fullmatch=True)
outside = st.sampled_from(["/etc/hosts", "/tmp/build/out.log", "/opt/tool/bin/run"])
configured_key = st.text(alphabet=string.ascii_uppercase + string.digits, min_size=8, max_size=24)
secret_shapes = st.one_of(
    st.text(alphabet=ALNUM, min_size=20, max_size=40).map(lambda s: "sk-" + s),
    st.text(alphabet=ALNUM, min_size=36, max_size=36).map(lambda s: "ghp_" + s),
    st.text(alphabet=string.ascii_uppercase + string.digits, min_size=16, max_size=16).map(
        lambda s: "AKIA" + s
    ),
    st.text(alphabet=ALNUM + "._-", min_size=8, max_size=40).map(lambda s: "Bearer " + s),
    st.lists(st.text(alphabet=ALNUM + "+/=", min_size=1, max_size=64), min_size=1).map(
        lambda lines: (
            "-----BEGIN RSA PRIVATE KEY-----\n"
            + "\n".join(lines)
            + "\n-----END RSA PRIVATE KEY-----"
        )
    ),
)


@st.composite
def texts(draw: st.DrawFn, root: str, secrets: list[str]) -> str:
    """Text with, among other words, paths inside and outside the workspace and secrets,
    each set off by spaces as they would be."""
    pieces = draw(
        st.lists(
            st.one_of(
                words,
                relative.map(lambda rel: f"{root}/{rel}"),
                st.just(root),
                relative.map(lambda rel: f"file://{root}/{rel}"),
                outside,
                secret_shapes.map(lambda s: _noted(secrets, s)),
                st.just("KEY"),  # stands for the configured key, filled in below
            ),
            max_size=6,
        )
    )
    return " ".join(pieces)


def _noted(secrets: list[str], secret: str) -> str:
    secrets.append(secret)
    return secret


@st.composite
def conversations(draw: st.DrawFn) -> dict[str, Any]:
    """A session's history: exchanges of a prompt, a reply with tool calls and their
    results (some unanswered), now and then a rule or check message, maybe a recap first."""
    root = draw(st.sampled_from(ROOTS))
    key = "K" + draw(configured_key)
    secrets: list[str] = []

    def text() -> str:
        return draw(texts(root, secrets)).replace("KEY", key)

    messages: list[Message] = []
    if draw(st.booleans()):
        recap = Recap(
            goal=text(),
            progress=text(),
            blockers=text(),
            next_steps=text(),
            read=tuple(draw(st.lists(relative, max_size=2))),
            modified=tuple(draw(st.lists(relative, max_size=2))),
            evicted=draw(st.integers(4, 40)),
        )
        messages.append(Message(role="user", content=recap.render(), kind="recap", recap=recap))
    call_number = 0
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from([None, None, None, "rule", "check"]))
        messages.append(Message(role="user", content=text(), kind=kind))
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            call_number += 1
            arguments = {"path": text(), "content": text()}
            name = draw(st.sampled_from(["read_file", "write_file", "edit", "grep"]))
            calls.append(ToolCall(f"call_{call_number}", name, json.dumps(arguments)))
        thinking = text() if draw(st.booleans()) else None
        messages.append(
            Message(role="assistant", content=text(), thinking=thinking, tool_calls=tuple(calls))
        )
        for call in calls:
            if draw(st.booleans()):
                messages.append(
                    Message(
                        role="tool",
                        content=text(),
                        tool_call_id=call.id,
                        is_error=draw(st.booleans()),
                    )
                )
    read = draw(st.lists(relative, max_size=3, unique=True))
    modified = draw(
        st.lists(relative, max_size=3, unique=True).map(lambda m: [p for p in m if p not in read])
    )
    return {
        "root": root,
        "key": key,
        "secrets": [*secrets, key],
        "messages": messages,
        "read": read,
        "modified": modified,
        "billed": draw(st.none() | st.integers(0, 10**6)),
    }


@functools.cache
def shared_store() -> SessionStore:
    """One seri.db for every example (a fresh one each would make shrinking slow); each
    example has sessions of its own."""
    folder = tempfile.mkdtemp(prefix="seri-bundle-properties-")
    return SessionStore(Database.open(Path(folder) / "seri.db"))


def stored(store: SessionStore, conversation: dict[str, Any]) -> str:
    """The conversation stored as a session of its workspace; its id."""
    info = store.create(conversation["root"])
    for message in conversation["messages"]:
        store.write_step(info.id, [message])
    store.write_step(
        info.id,
        [],
        billed=conversation["billed"],
        read=conversation["read"],
        modified=conversation["modified"],
    )
    return info.id


def without_ids(bundle: dict[str, Any]) -> dict[str, Any]:
    rest = {k: v for k, v in bundle.items() if k not in ("sessionId", "project")}
    rest["messages"] = [{k: v for k, v in m.items() if k != "id"} for m in bundle["messages"]]
    return rest


def every_string(value: Any) -> list[str]:
    """Every string in a bundle, a tool call's arguments decoded too."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
            if "arguments" in item:
                stack.append(json.loads(item["arguments"]))
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            found.append(item)
    return found


PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.early  # 50 examples, several seconds
@PROPERTY
@given(conversations())
def test_exporting_an_imported_bundle_gives_the_same_conversation(
    conversation: dict[str, Any],
) -> None:
    store = shared_store()
    session_id = stored(store, conversation)
    secrets = [conversation["key"]]
    first = export_session(store, session_id, "json", secrets).text
    elsewhere = f"/imported/{uuid.uuid4()}"
    info, made = import_bundle(store, read_bundle(first), elsewhere)
    again = export_session(store, info.id, "json", secrets)
    assert made and info.project == elsewhere
    assert without_ids(json.loads(again.text)) == without_ids(json.loads(first))
    assert again.redactions == 0
    # The same bundle imported again is the same session.
    assert import_bundle(store, read_bundle(first), elsewhere) == (info, False)


@pytest.mark.early  # 50 examples, several seconds
@PROPERTY
@given(conversations())
def test_no_secret_and_no_absolute_path_of_the_workspace_leaves_in_an_export(
    conversation: dict[str, Any],
) -> None:
    root, secrets = conversation["root"], conversation["secrets"]
    store = shared_store()
    session_id = stored(store, conversation)
    bundle = export_session(store, session_id, "json", [conversation["key"]])
    markdown = export_session(store, session_id, "markdown", [conversation["key"]])
    assert bundle.redactions == markdown.redactions
    texts = [*every_string(json.loads(bundle.text)), markdown.text]
    for text in texts:
        assert root not in text
        for secret in secrets:
            assert secret not in text
            assert json.dumps(secret)[1:-1] not in text
    assert Path(root).name == json.loads(bundle.text)["project"]
