"""Properties of forks over generated sessions, on a real seri.db.

A source session is built from prompts (each with its checkpoint), replies with zero to
three tool calls and their results (paths noted, glob rules delivered after them), the
spend of every reply, and sometimes a compaction. It is forked at any of its messages,
and then anything is done in the fork: more steps, a compaction, a rewind, a new turn
budget, a subagent, a fork of the fork. Whatever happens, the source stays byte-for-byte
as it was, and the fork holds exactly the source's messages up to a point that never
splits a tool call from its results.
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seri_lsp.context.fork import fork_point, fork_title
from seri_lsp.errors import SeriError
from seri_lsp.store.checkpoints import CheckpointStore
from seri_lsp.store.database import Database
from seri_lsp.store.messages import Message, Recap, ToolCall
from seri_lsp.store.sessions import SessionStore
from seri_lsp.store.spend import Spend
from tests.agent_helpers import session_rows

PROPERTY = settings(max_examples=40, deadline=None)
PATHS = ("a.py", "b.md", "src/c.py")

# One exchange: a prompt, then replies; each reply's calls (a read or an edit of a path)
# and whether their results deliver a glob rule.
call = st.tuples(st.sampled_from(["read_file", "edit"]), st.sampled_from(PATHS))
reply = st.tuples(st.lists(call, max_size=3), st.booleans())
exchange = st.lists(reply, min_size=1, max_size=3)

# Things done in the fork afterwards.
action = st.sampled_from(["step", "compact", "rewind", "budget", "subagent", "fork", "touch"])


def build_source(store: SessionStore, checkpoints: CheckpointStore, exchanges: Any) -> str:
    """A session written step by step, as the agent loop writes it."""
    session_id = store.create("/project").id
    rule = 0
    for number, replies in enumerate(exchanges):
        checkpoints.take(session_id, f"prompt {number}")
        store.write_step(session_id, [Message(role="user", content=f"prompt {number}")])
        for calls, fires in replies:
            tool_calls = tuple(
                ToolCall(f"c{number}-{i}", name, f'{{"path": "{path}"}}')
                for i, (name, path) in enumerate(calls)
            )
            spend = Spend("turn", 100 + number, number, 10, 1, 0.001 if number % 2 else None)
            store.write_step(
                session_id,
                [Message(role="assistant", content="on it", tool_calls=tool_calls)],
                spend=spend,
            )
            for index, (tool, (name, path)) in enumerate(zip(tool_calls, calls, strict=True)):
                results = [Message(role="tool", content="ok", tool_call_id=tool.id)]
                rules: list[tuple[str, int]] = []
                if fires and index == len(calls) - 1:
                    rule += 1
                    # (the rule, and where its message is among the step's messages)
                    rules = [(f"rule-{rule}.md", len(results))]
                    results.append(Message(role="user", content=f"Rule {rule}", kind="rule"))
                store.write_step(
                    session_id,
                    results,
                    read=[path] if name == "read_file" else [],
                    modified=[path] if name == "edit" else [],
                    rules=rules,
                )
        store.write_step(session_id, [Message(role="assistant", content=f"done {number}")])
    return session_id


def compact(store: SessionStore, session_id: str) -> None:
    """Replace the history up to its last prompt by a recap, as compaction does."""
    history = store.messages(session_id)
    prompts = [i for i, m in enumerate(history) if m.role == "user" and m.kind is None]
    if not prompts or prompts[-1] == 0:  # (a fork of a recap alone has no prompt)
        return
    last_prompt = prompts[-1]
    recap = Recap("goal", "progress", "none", "next", read=("a.py",))
    store.replace_prefix(
        session_id,
        history[:last_prompt],
        Message(role="user", content=recap.render(), kind="recap", recap=recap),
    )


def act(
    store: SessionStore, checkpoints: CheckpointStore, fork_id: str, what: str, number: int
) -> None:
    """Do one thing in the fork."""
    if what == "step":
        checkpoints.take(fork_id, f"fork prompt {number}")
        store.write_step(
            fork_id,
            [
                Message(role="user", content=f"fork prompt {number}"),
                Message(role="assistant", content="fork reply"),
                Message(role="user", content="Rule 1", kind="rule"),
            ],
            read=["a.py"],
            modified=["b.md"],
            rules=[("rule-1.md", 2)],
            spend=Spend("turn", 5, 1, 2, 0, 0.5),
        )
    elif what == "compact":
        compact(store, fork_id)
    elif what == "rewind":
        data = checkpoints.session(fork_id)
        if data.checkpoints:
            checkpoints.truncate(fork_id, max(data.checkpoints), {})
    elif what == "budget":
        store.set_max_turns(fork_id, 7)
    elif what == "subagent":
        child = store.create("/project", parent_id=fork_id).id
        store.write_step(child, [Message(role="user", content="sub")], spend=Spend("subagent", 9))
    elif what == "fork":
        store.fork(fork_id, str(uuid.uuid4()), point=lambda o: len(o) - 1, title=fork_title)
    else:
        store.touch(fork_id)


@PROPERTY
@given(
    exchanges=st.lists(exchange, min_size=1, max_size=4),
    compacted=st.booleans(),
    where=st.integers(min_value=0),
    actions=st.lists(action, max_size=6),
)
def test_a_fork_copies_a_whole_prefix_and_never_changes_its_source(
    exchanges: Any, compacted: bool, where: int, actions: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Database.open(Path(folder) / "seri.db")
        try:
            store, checkpoints = SessionStore(db), CheckpointStore(db)
            source = build_source(store, checkpoints, exchanges)
            if compacted:
                compact(store, source)
            history = store.messages(source)
            asked = history[where % len(history)]
            before = session_rows(Path(folder), source)

            fork_id = str(uuid.uuid4())
            info, forked_at = store.fork(
                source,
                fork_id,
                point=lambda outline: fork_point(outline, asked.id, source),
                title=fork_title,
            )
            copied = store.messages(fork_id)
            end = next(i for i, m in enumerate(history) if m.id == forked_at)

            # A whole prefix, from the asked message on to where it is whole.
            assert end >= history.index(asked)
            assert [_content(m) for m in copied] == [_content(m) for m in history[: end + 1]]
            following = history[end + 1] if end + 1 < len(history) else None
            assert following is None or following.role != "tool"
            if history[end].role == "tool" and following is not None:
                assert following.kind != "rule"
            assert (info.forked_from, info.forked_at, info.parent_id) == (source, forked_at, None)
            assert info.message_count == len(copied)
            assert info.total_chars == sum(m.chars for m in copied)
            assert info.spend.calls == 0
            assert checkpoints.session(fork_id).checkpoints == {}

            for number, what in enumerate(actions):
                act(store, checkpoints, fork_id, what, number)
            assert session_rows(Path(folder), source) == before
        finally:
            db.close()


@PROPERTY
@given(exchanges=st.lists(exchange, min_size=1, max_size=4), where=st.integers(min_value=0))
def test_a_fork_keeps_the_paths_and_rules_of_the_part_it_copies(exchanges: Any, where: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Database.open(Path(folder) / "seri.db")
        try:
            store, checkpoints = SessionStore(db), CheckpointStore(db)
            source = build_source(store, checkpoints, exchanges)
            history = store.messages(source)
            asked = history[where % len(history)]
            fork_id = str(uuid.uuid4())
            store.fork(
                source,
                fork_id,
                point=lambda outline: fork_point(outline, asked.id, source),
                title=fork_title,
            )
            copied = store.messages(fork_id)
            read, modified = _paths_of(copied)
            paths = store.paths(fork_id)
            assert set(paths.modified) == modified
            assert set(paths.read) == read - modified
            fired = {
                m.content.replace("Rule ", "rule-") + ".md" for m in copied if m.kind == "rule"
            }
            assert store.fired_rules(fork_id) == fired
        finally:
            db.close()


def _content(message: Message) -> tuple[Any, ...]:
    return (message.role, message.content, message.tool_calls, message.kind, message.seq)


def _paths_of(messages: list[Message]) -> tuple[set[str], set[str]]:
    """Paths read and modified by the answered calls among `messages` (an oracle)."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    read: set[str] = set()
    modified: set[str] = set()
    for message in messages:
        for tool in message.tool_calls:
            if tool.id in answered:
                path = (tool.parsed_arguments() or {})["path"]
                (modified if tool.name == "edit" else read).add(path)
    return read, modified


def test_a_fork_of_a_session_without_messages_is_refused(tmp_path: Path) -> None:
    db = Database.open(tmp_path / "seri.db")
    try:
        store = SessionStore(db)
        source = store.create("/project").id
        with pytest.raises(SeriError, match="has no messages to fork"):
            store.fork(
                source,
                str(uuid.uuid4()),
                point=lambda outline: fork_point(outline, None, source),
                title=fork_title,
            )
        assert db.query_tuples("SELECT id FROM sessions") == [(source,)]
    finally:
        db.close()
