"""Properties of compaction and tool-call pairing over generated session histories.

Each test states one rule of SPEC section 4 (or of the pairing repair that guards every
request) and checks it against histories built from user prompts, assistant messages with
zero, one or several parallel tool calls, their results (some failed, some far over the
elision limit, many with non-ASCII text), thinking, and optionally an existing recap in
front. Where a rule picks one answer (the cut), the test computes it with its own oracle.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from seri_lsp.context.compaction import (
    CompactionPlan,
    choose_cut,
    elide,
    evicted_paths,
    legal_cut_points,
    normalize_path,
    plan_compaction,
    summary_request,
    transcript,
)
from seri_lsp.context.pairing import INTERRUPTED, repair_tool_pairs
from seri_lsp.context.recap import Recap
from seri_lsp.store.messages import Message, ToolCall

ELIDE_BYTES = 96
"""A small elision limit, so that boundary payloads stay cheap to generate."""

HUGE_BYTES = 10 * ELIDE_BYTES
"""Huge payloads are at least this many UTF-8 bytes: far over the limit."""

HUGE_MARKER = "⟪huge payload⟫"
"""Leads every huge payload and no other generated text: all of them must be elided."""

PATHS = (
    "src/app.py",
    "./src/app.py",
    "src/util/../app.py",
    "README.md",
    "docs/guide-é.md",
    "lib/ü/数据.py",
    "tests/test_app.py",
)
"""A small pool, so that the same file is often read, written and edited in one history."""

MODIFY_TOOLS = ("write_file", "edit")

PROPERTY = settings(max_examples=60, deadline=None)
"""Modest, so that this file runs in about half a minute on two cores."""

short_text = st.text(max_size=30)
"""Prompts, replies, thinking and recap fields: arbitrary Unicode, under the limit."""

wide_char = st.sampled_from(["a", "é", "€", "😀", "数"])
"""Characters of 1 to 4 UTF-8 bytes."""


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


def estimated_tokens(messages: Sequence[Message]) -> int:
    """ceil(chars / 4) over text, thinking and tool arguments, computed independently."""
    chars = sum(
        len(m.content) + len(m.thinking or "") + sum(len(c.arguments) for c in m.tool_calls)
        for m in messages
    )
    return -(-chars // 4)


def recap_message(recap: Recap) -> Message:
    return Message(role="user", kind="recap", recap=recap, content=recap.render())


# --- strategies -------------------------------------------------------------------------


@st.composite
def boundary_texts(draw: st.DrawFn) -> str:
    """Text of exactly ELIDE_BYTES - 3 .. ELIDE_BYTES + 3 UTF-8 bytes, mostly wide chars."""
    char = draw(wide_char)
    target = ELIDE_BYTES + draw(st.integers(-3, 3))
    width = utf8_size(char)
    count = target // width
    return char * count + "x" * (target - count * width)


@st.composite
def huge_texts(draw: st.DrawFn) -> str:
    """Far over the limit: a drawn unit with a wide character, repeated."""
    unit = draw(st.text(min_size=1, max_size=12)) + draw(wide_char)
    return HUGE_MARKER + unit * (HUGE_BYTES // utf8_size(unit) + 1)


payloads = st.one_of(short_text, boundary_texts(), huge_texts())
"""Tool arguments and results: small, right at the limit, or far over it."""

paths = st.sampled_from(PATHS)

arguments_by_tool = {
    "read_file": st.fixed_dictionaries({"path": paths}, optional={"offset": st.integers(0, 99)}),
    "write_file": st.fixed_dictionaries({"path": paths, "content": payloads}),
    "edit": st.one_of(
        st.fixed_dictionaries({"path": paths, "old_string": payloads, "new_string": payloads}),
        # A non-string argument value: it is measured as its JSON text.
        st.fixed_dictionaries(
            {
                "path": paths,
                "edits": st.lists(
                    st.fixed_dictionaries({"old": short_text, "new": payloads}),
                    min_size=1,
                    max_size=3,
                ),
            }
        ),
    ),
    "grep": st.fixed_dictionaries({"pattern": short_text}, optional={"path": paths}),
    "task": st.fixed_dictionaries({"prompt": payloads}),
}

tool_calls = st.one_of(
    st.tuples(st.just(name), arguments, st.booleans())
    for name, arguments in arguments_by_tool.items()
).map(
    # The id is a placeholder; `histories` numbers the calls so that ids are unique.
    lambda drawn: ToolCall(
        id="", name=drawn[0], arguments=json.dumps(drawn[1], ensure_ascii=drawn[2])
    )
)

recaps = st.builds(
    Recap,
    goal=short_text,
    progress=short_text,
    blockers=short_text,
    next_steps=short_text,
    read=st.lists(paths, max_size=3, unique=True).map(tuple),
    modified=st.lists(paths, max_size=3, unique=True).map(tuple),
    evicted=st.integers(0, 50),
)

thinking = st.none() | st.text(max_size=60)
failed = st.sampled_from([False, False, False, True])
result_order = st.lists(st.integers(0, 3), min_size=3, max_size=3)


@st.composite
def histories(draw: st.DrawFn, *, with_recap: bool | None = None) -> list[Message]:
    """A well-paired history: every call is answered right after its assistant message."""
    ids = itertools.count()
    messages: list[Message] = []
    if with_recap is None:
        with_recap = draw(st.booleans())
    if with_recap:
        messages.append(recap_message(draw(recaps)))
    for _ in range(draw(st.integers(0, 5))):
        messages.append(Message(role="user", content=draw(short_text)))
        for _ in range(draw(st.integers(0, 3))):
            calls = [
                replace(c, id=f"call_{next(ids)}") for c in draw(st.lists(tool_calls, max_size=3))
            ]
            messages.append(
                Message(
                    role="assistant",
                    content=draw(short_text),
                    thinking=draw(thinking),
                    tool_calls=tuple(calls),
                )
            )
            # Parallel results may come back in any order.
            order = draw(result_order)
            for _, call in sorted(zip(order, calls, strict=False), key=lambda pair: pair[0]):
                messages.append(
                    Message(
                        role="tool",
                        content=draw(payloads),
                        tool_call_id=call.id,
                        is_error=draw(failed),
                    )
                )
    return messages


@st.composite
def stray_histories(draw: st.DrawFn) -> list[Message]:
    """A history with unanswered calls and orphaned or duplicated results mixed in."""
    kept = st.sampled_from([True, True, False])
    messages = [m for m in draw(histories()) if m.role != "tool" or draw(kept)]
    known = [call.id for m in messages for call in m.tool_calls]
    for n in range(draw(st.integers(0, 4))):
        pick = draw(st.integers(0, len(known)))
        call_id = known[pick] if pick < len(known) else f"stray_{n}"
        orphan = Message(role="tool", content=draw(short_text), tool_call_id=call_id)
        messages.insert(draw(st.integers(0, len(messages))), orphan)
    return messages


@st.composite
def budgeted(draw: st.DrawFn, history: st.SearchStrategy[list[Message]]) -> tuple:
    """A history and a keep budget anywhere from nothing to more than the whole of it."""
    messages = draw(history)
    total = estimated_tokens(messages)
    return messages, draw(st.integers(0, total + 5))


# --- oracles ----------------------------------------------------------------------------


def oracle_cut(messages: Sequence[Message], keep_tokens: int) -> int | None:
    """The rule written out directly: earliest legal fitting point, else the last legal."""
    legal = [
        i
        for i, m in enumerate(messages)
        if i > 0 and m.role in ("user", "assistant") and m.kind != "recap"
    ]
    fitting = [i for i in legal if estimated_tokens(messages[i:]) <= keep_tokens]
    if fitting:
        return fitting[0]
    return legal[-1] if legal else None


def owner_index(messages: Sequence[Message], tool_index: int) -> int:
    """The assistant message whose call a (well-paired) tool result answers."""
    call_id = messages[tool_index].tool_call_id
    return next(
        i
        for i in range(tool_index - 1, -1, -1)
        if any(call.id == call_id for call in messages[i].tool_calls)
    )


def orphan_results(messages: Sequence[Message]) -> list[int]:
    """Tool messages that do not answer an open call of the closest assistant message."""
    orphans = []
    pending: set[str] = set()
    for i, message in enumerate(messages):
        if message.role == "tool":
            if message.tool_call_id in pending:
                pending.discard(message.tool_call_id)
            else:
                orphans.append(i)
        else:
            pending = {call.id for call in message.tool_calls}
    return orphans


def unanswered_calls(messages: Sequence[Message]) -> list[str]:
    """Call ids with no result before the next non-tool message (or the end)."""
    unanswered = []
    pending: list[str] = []
    for message in [*messages, Message(role="user")]:
        if message.role == "tool":
            if message.tool_call_id in pending:
                pending.remove(message.tool_call_id)
            continue
        unanswered.extend(pending)
        pending = [call.id for call in message.tool_calls]
    return unanswered


def payload_size(value: Any) -> int:
    """UTF-8 size of an argument value: a string itself, anything else as its JSON text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return utf8_size(text)


def expected_elision(value: Any, size: int) -> Any:
    return {"elided": True, "originalBytes": size} if size > ELIDE_BYTES else value


def whole_plan(messages: Sequence[Message]) -> CompactionPlan:
    """A plan evicting the whole history, the recap in front (if any) as the earlier one."""
    previous = messages[0] if messages and messages[0].is_recap else None
    evicted = tuple(m for m in messages if not m.is_recap)
    return CompactionPlan(cut=len(messages), evicted=evicted, previous=previous)


# --- where to cut -----------------------------------------------------------------------


@PROPERTY
@given(budgeted(st.one_of(histories(), stray_histories())))
def test_the_cut_sits_before_a_user_or_assistant_message_that_is_not_the_recap(case) -> None:
    messages, keep = case
    cut = choose_cut(messages, keep)
    if cut is not None:
        assert 0 < cut < len(messages)
        assert messages[cut].role in ("user", "assistant")
        assert not messages[cut].is_recap


@PROPERTY
@given(budgeted(st.one_of(histories(), stray_histories())))
def test_the_cut_never_sits_immediately_before_a_tool_result(case) -> None:
    messages, keep = case
    cut = choose_cut(messages, keep)
    if cut is not None:
        assert messages[cut].role != "tool"


@PROPERTY
@given(budgeted(histories()))
def test_the_cut_keeps_every_tool_result_on_the_same_side_as_its_call(case) -> None:
    messages, keep = case
    cut = choose_cut(messages, keep)
    if cut is not None:
        for i, message in enumerate(messages):
            if message.role == "tool":
                assert (owner_index(messages, i) < cut) == (i < cut)


@PROPERTY
@given(budgeted(st.one_of(histories(), stray_histories())))
def test_the_cut_is_the_earliest_legal_point_whose_suffix_fits_else_the_last(case) -> None:
    messages, keep = case
    assert choose_cut(messages, keep) == oracle_cut(messages, keep)


@PROPERTY
@given(budgeted(st.one_of(histories(), stray_histories())))
def test_there_is_no_cut_exactly_when_there_is_no_legal_point(case) -> None:
    messages, keep = case
    assert (choose_cut(messages, keep) is None) == (legal_cut_points(messages) == [])


# --- whether to cut ---------------------------------------------------------------------


@PROPERTY
@given(budgeted(st.one_of(histories(), stray_histories())))
def test_a_plan_exists_exactly_when_at_least_four_messages_besides_the_recap_can_go(
    case,
) -> None:
    messages, keep = case
    cut = oracle_cut(messages, keep)
    evictable = 0 if cut is None else sum(1 for m in messages[:cut] if not m.is_recap)
    assert (plan_compaction(messages, keep) is None) == (cut is None or evictable < 4)


@PROPERTY
@given(budgeted(st.one_of(histories(), stray_histories())))
def test_a_plan_evicts_exactly_the_messages_before_the_cut_except_the_recap(case) -> None:
    messages, keep = case
    plan = plan_compaction(messages, keep)
    if plan is not None:
        assert plan.cut == oracle_cut(messages, keep)
        assert list(plan.evicted) == [m for m in messages[: plan.cut] if not m.is_recap]


@PROPERTY
@given(budgeted(histories()))
def test_a_plan_hands_over_the_existing_recap_as_the_previous_one(case) -> None:
    messages, keep = case
    plan = plan_compaction(messages, keep)
    if plan is not None:
        expected = messages[0] if messages[0].is_recap else None
        assert plan.previous is expected
        assert plan.replaced == ((expected,) if expected else ()) + plan.evicted


# --- pairing repair ---------------------------------------------------------------------


@PROPERTY
@given(histories())
def test_repair_leaves_well_paired_messages_unchanged(messages) -> None:
    assert repair_tool_pairs(messages) == (messages, [])


@PROPERTY
@given(stray_histories())
def test_repair_leaves_no_result_without_an_open_call_of_the_closest_assistant(
    messages,
) -> None:
    repaired, _ = repair_tool_pairs(messages)
    assert orphan_results(repaired) == []


@PROPERTY
@given(stray_histories())
def test_repair_leaves_no_call_without_exactly_one_result(messages) -> None:
    repaired, _ = repair_tool_pairs(messages)
    for i, message in enumerate(repaired):
        results = list(itertools.takewhile(lambda m: m.role == "tool", repaired[i + 1 :]))
        for call in message.tool_calls:
            assert sum(1 for r in results if r.tool_call_id == call.id) == 1


@PROPERTY
@given(stray_histories())
def test_repair_keeps_every_user_and_assistant_message_in_order(messages) -> None:
    repaired, _ = repair_tool_pairs(messages)
    assert [m for m in repaired if m.role != "tool"] == [m for m in messages if m.role != "tool"]


@PROPERTY
@given(stray_histories())
def test_repair_only_drops_results_or_adds_interrupted_errors_and_logs_each(
    messages,
) -> None:
    repaired, repairs = repair_tool_pairs(messages)
    kept = [m for m in repaired if any(m is original for original in messages)]
    added = [m for m in repaired if not any(m is original for original in messages)]
    dropped = len(messages) - len(kept)
    assert all(m.role == "tool" and m.content == INTERRUPTED and m.is_error for m in added)
    assert len(repairs) == dropped + len(added)


@PROPERTY
@given(stray_histories())
def test_repair_is_idempotent(messages) -> None:
    once, _ = repair_tool_pairs(messages)
    assert repair_tool_pairs(once) == (once, [])


@PROPERTY
@given(budgeted(histories()))
def test_a_compacted_request_of_a_well_paired_history_needs_no_repair(case) -> None:
    messages, keep = case
    plan = plan_compaction(messages, keep)
    if plan is not None:
        request = [recap_message(Recap("g", "p", "b", "n")), *messages[plan.cut :]]
        assert repair_tool_pairs(request) == (request, [])


@PROPERTY
@given(budgeted(stray_histories()))
def test_a_compacted_request_is_repaired_to_whole_pairs(case) -> None:
    messages, keep = case
    plan = plan_compaction(messages, keep)
    if plan is not None:
        request = [recap_message(Recap("g", "p", "b", "n")), *messages[plan.cut :]]
        repaired, _ = repair_tool_pairs(request)
        assert orphan_results(repaired) == []
        assert unanswered_calls(repaired) == []


# --- paths of the recap -----------------------------------------------------------------


def successful_paths(messages: Sequence[Message], names: Sequence[str]) -> set[str]:
    """Normalised paths of calls named `names` whose result is present and not an error."""
    ok = {m.tool_call_id for m in messages if m.role == "tool" and not m.is_error}
    return {
        normalize_path(json.loads(call.arguments)["path"])
        for m in messages
        for call in m.tool_calls
        if call.name in names and call.id in ok
    }


@PROPERTY
@given(histories(with_recap=False))
def test_every_successful_modification_is_listed_as_modified(messages) -> None:
    _, modified = evicted_paths(messages)
    assert set(modified) == successful_paths(messages, MODIFY_TOOLS)


@PROPERTY
@given(histories(with_recap=False))
def test_every_successful_read_is_listed_as_read_unless_also_modified(messages) -> None:
    read, _ = evicted_paths(messages)
    expected = successful_paths(messages, ["read_file"]) - successful_paths(messages, MODIFY_TOOLS)
    assert set(read) == expected


@PROPERTY
@given(histories(with_recap=False))
def test_read_and_modified_paths_are_disjoint_and_listed_once(messages) -> None:
    read, modified = evicted_paths(messages)
    assert not set(read) & set(modified)
    assert len(set(read)) == len(read)
    assert len(set(modified)) == len(modified)


@PROPERTY
@given(histories(with_recap=False))
def test_failed_or_denied_calls_contribute_no_paths(messages) -> None:
    failed = [replace(m, is_error=True) if m.role == "tool" else m for m in messages]
    assert evicted_paths(failed) == ((), ())


@PROPERTY
@given(histories(with_recap=False))
def test_calls_whose_result_was_not_evicted_contribute_no_paths(messages) -> None:
    assert evicted_paths([m for m in messages if m.role != "tool"]) == ((), ())


# --- what the summariser sees -----------------------------------------------------------


@PROPERTY
@given(st.text(alphabet=wide_char, max_size=80), st.integers(0, 200))
def test_elide_replaces_exactly_the_values_over_the_limit_by_their_utf8_size(value, limit) -> None:
    size = utf8_size(value)
    expected = {"elided": True, "originalBytes": size} if size > limit else value
    assert elide(value, limit) == expected


@PROPERTY
@given(histories())
def test_the_transcript_has_one_entry_per_message_in_order(messages) -> None:
    entries = transcript(messages, ELIDE_BYTES)
    assert [e["role"] for e in entries] == [m.role for m in messages]


@PROPERTY
@given(histories())
def test_every_tool_result_over_the_limit_is_elided_with_its_utf8_size_and_no_other(
    messages,
) -> None:
    for message, entry in zip(messages, transcript(messages, ELIDE_BYTES), strict=True):
        if message.role == "tool":
            expected = expected_elision(message.content, utf8_size(message.content))
            assert entry["content"] == expected


@PROPERTY
@given(histories())
def test_every_tool_argument_over_the_limit_is_elided_with_its_utf8_size_and_no_other(
    messages,
) -> None:
    for message, entry in zip(messages, transcript(messages, ELIDE_BYTES), strict=True):
        for call, sent in zip(message.tool_calls, entry.get("tool_calls", []), strict=True):
            arguments = json.loads(call.arguments)
            expected = {k: expected_elision(v, payload_size(v)) for k, v in arguments.items()}
            assert sent == {"id": call.id, "name": call.name, "arguments": expected}


@PROPERTY
@given(histories())
def test_user_and_assistant_text_reaches_the_summariser_unchanged(messages) -> None:
    for message, entry in zip(messages, transcript(messages, ELIDE_BYTES), strict=True):
        if message.role != "tool":
            assert entry["content"] == message.content
            assert entry.get("thinking") == (message.thinking or None)


@PROPERTY
@given(histories(with_recap=True), st.none() | short_text)
def test_the_summary_request_carries_every_field_of_the_earlier_recap(messages, focus) -> None:
    plan = whole_plan(messages)
    earlier = plan.previous.recap
    request = summary_request(plan, focus, ELIDE_BYTES)
    # The earlier recap leads the conversation as the turns carried it, and the
    # instructions ask for it to be updated.
    assert request[0] == plan.previous.to_provider()
    assert "Update that recap" in request[-1]["content"]
    for title, value in [
        ("Goal", earlier.goal),
        ("Progress", earlier.progress),
        ("Blockers", earlier.blockers),
        ("Next steps", earlier.next_steps),
    ]:
        assert f"{title}:\n{value.strip() or '(none)'}" in request[0]["content"]


@PROPERTY
@given(histories(with_recap=False))
def test_the_summary_request_without_an_earlier_recap_asks_for_no_update(messages) -> None:
    request = summary_request(whole_plan(messages), None, ELIDE_BYTES)
    assert "Update that recap" not in request[-1]["content"]


@PROPERTY
@given(histories(), st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1))
def test_the_summary_request_carries_the_focus_words(messages, focus) -> None:
    request = summary_request(whole_plan(messages), focus, ELIDE_BYTES)
    assert focus in request[-1]["content"]


@PROPERTY
@given(histories())
def test_the_summary_request_contains_no_original_text_of_an_elided_payload(messages) -> None:
    plan = whole_plan(messages)
    text = json.dumps(summary_request(plan, "focus", ELIDE_BYTES), ensure_ascii=False)
    assert HUGE_MARKER not in text
