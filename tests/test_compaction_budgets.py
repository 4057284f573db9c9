"""Compaction and budgets, end to end through the real server.

- no fixed cap on compactions per task: a long task in a small window compacts as often
  as it needs, and loops are impossible by construction (a compaction needs messages
  added since the last one, and must shrink the history);
- every summariser request fits the model's window: oversized texts are elided and a
  prefix too long for one request is summarised in chunks;
- a failed automatic compaction is shown to the user once per task.

The planner of summariser requests also has property tests at the end of this file.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from seri_lsp.context.compaction import (
    CompactionPlan,
    SummaryPlanner,
    provider_entry,
    request_chars,
    summary_budget,
)
from seri_lsp.store.messages import Message, Recap, ToolCall
from tests.agent_helpers import events, messages, prompt
from tests.harness import stop_server, wait_until
from tests.scripted_provider import Calls, Error, Respond, ScriptedProvider, Text, usage

WINDOW = 4000  # tokens; the trigger is at 2000


def summary(progress: str) -> Text:
    return Text(
        f"Goal: read the project files\nProgress: {progress}\nBlockers: none\n"
        "Next steps: keep reading"
    )


def is_summary(body: dict[str, Any]) -> bool:
    """Summariser requests offer the turns' tools with `tool_choice: "none"`."""
    return body.get("tool_choice") == "none"


def request_tokens(body: dict[str, Any]) -> int:
    """The local estimate, ceil(chars / 4), over a request's messages."""
    return math.ceil(sum(len(m.get("content") or "") for m in body["messages"]) / 4)


def summary_transcript(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The evicted messages, as the summariser request carries them: between the system
    message (and a later chunk's recap of the chunks before it) and the instructions."""
    sent = body["messages"][:-1]
    if sent and sent[0]["role"] == "system":
        sent = sent[1:]
    if sent and (sent[0]["content"] or "").startswith("This is a recap"):
        sent = sent[1:]
    # A chunk that splits a call from its results says so in its own messages: read
    # them back as the results they stand for.
    out = []
    for entry in sent:
        content = entry.get("content") or ""
        if entry["role"] == "tool" and content == "(Its result comes in the next part.)":
            continue
        if entry["role"] == "user" and content.startswith("(The result of tool call "):
            head, text = content.split("\n", 1)
            call = head.removeprefix("(The result of tool call ").split(", from")[0]
            entry = {"role": "tool", "content": text, "tool_call_id": call}
        out.append(entry)
    return out


def marker(text: str) -> dict[str, Any]:
    """An elision marker the request carries as text."""
    return json.loads(text)


def assert_pairs_intact(body: dict[str, Any]) -> None:
    """Every tool call is followed by exactly its results, and every result has its call."""
    sent = body["messages"]
    index = 0
    while index < len(sent):
        message = sent[index]
        assert message["role"] != "tool", f"a result without its call at {index}"
        index += 1
        calls = [call["id"] for call in message.get("tool_calls") or []]
        results = []
        while index < len(sent) and sent[index]["role"] == "tool":
            results.append(sent[index]["tool_call_id"])
            index += 1
        assert results == calls, f"calls {calls} answered by {results}"


def warnings_shown(client) -> list[str]:
    return [
        m.message
        for m in client.messages
        if m.type == types.MessageType.Warning and "compaction" in m.message.lower()
    ]


def compaction_logs(client) -> list[str]:
    return [m.message for m in client.log_messages if "Automatic compaction failed" in m.message]


async def test_a_long_task_compacts_many_times_and_finishes_done(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    files = [f"f{index}.txt" for index in range(5)]
    for index, name in enumerate(files):
        (workspace / name).write_text(f"file {index}\n" + f"line of {name}\n" * 130)
    turns_wanted = 40
    state = {"turns": 0, "summaries": 0}

    def decide(body: dict[str, Any]) -> Any:
        if is_summary(body):
            state["summaries"] += 1
            return summary(f"compaction {state['summaries']}")
        turn = state["turns"]
        state["turns"] += 1
        if turn == turns_wanted:
            return Text("read them all")
        return Calls([(f"call{turn}", "read_file", {"path": files[turn % len(files)]})])

    provider.script(*(Respond(decide) for _ in range(200)))
    client = await agent(provider_extra={"contextWindow": WINDOW, "keepTokens": 600})
    result = await prompt(client, "read every file, one at a time, many times")
    assert result["status"] == "done" and result["turns"] == turns_wanted + 1

    summaries = [body for body in provider.requests if is_summary(body)]
    assert len(summaries) >= 8, f"only {len(summaries)} compactions"
    await wait_until(lambda: len(client.seri["seri/compacted"]) >= len(summaries))
    compacted = client.seri["seri/compacted"]
    assert len(compacted) == len(summaries)
    assert all(c["trigger"] == "auto" for c in compacted)
    assert [e["summaryRequests"] for e in events(profile_root, "compaction")] == [1] * len(
        summaries
    )

    # Each compaction updates the recap before it, and each recap is in place for the
    # turns that follow it; no request ever separates a call from its result.
    recap = 0
    for body in provider.requests:
        if is_summary(body):
            recap += 1
            assert request_tokens(body) <= WINDOW
            if recap > 1:
                earlier = body["messages"][1]["content"]
                assert earlier.startswith("This is a recap")
                assert f"compaction {recap - 1}" in earlier
                assert "Update that recap" in body["messages"][-1]["content"]
            continue
        assert_pairs_intact(body)
        if recap:
            first = body["messages"][1]
            assert first["role"] == "user" and first["content"].startswith("This is a recap")
            assert f"Progress:\ncompaction {recap}\n" in first["content"]
    assert not events(profile_root, "repair")
    assert not events(profile_root, "compaction_failed")
    assert not warnings_shown(client)

    history = await messages(client)
    assert history[0]["kind"] == "recap"
    assert sorted(history[0]["recap"]["read"]) == files
    assert history[-1]["content"] == "read them all"


async def test_a_user_prompt_larger_than_the_window_is_elided_for_the_summariser(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (workspace / name).write_text(f"{name}: " + "data " * 80)
    huge = "GOAL-START: port the parser to Rust. " + "lorem ipsum dolor " * 5000
    assert math.ceil(len(huge) / 4) > WINDOW  # larger than the whole window
    reads = iter(["a.txt", "b.txt", "c.txt"])

    def decide(body: dict[str, Any]) -> Any:
        if is_summary(body):
            return Text(
                "Goal: port the parser to Rust\nProgress: read a.txt and b.txt\n"
                "Blockers: none\nNext steps: read c.txt"
            )
        name = next(reads, None)
        if name is None:
            return Text("ported")
        return Calls([(f"read-{name}", "read_file", {"path": name})])

    provider.script(*(Respond(decide) for _ in range(20)))
    client = await agent(provider_extra={"contextWindow": WINDOW, "keepTokens": 150})
    result = await prompt(client, huge)
    assert result["status"] == "done"

    summaries = [body for body in provider.requests if is_summary(body)]
    assert summaries, "the huge prompt was never compacted"
    for body in summaries:
        assert request_tokens(body) <= WINDOW - WINDOW // 4  # room left for the reply
        assert huge not in json.dumps(body)
    first = summary_transcript(summaries[0])[0]
    assert first["role"] == "user"
    elided = marker(first["content"])
    assert elided["elided"] is True
    assert elided["originalBytes"] == len(huge.encode("utf-8"))
    assert elided["contentStart"].startswith("GOAL-START: port the parser to Rust.")
    assert "Do not guess or invent" in summaries[0]["messages"][-1]["content"]

    history = await messages(client)
    assert history[0]["kind"] == "recap"
    assert history[0]["recap"]["read"] == ["a.txt", "b.txt"]  # from the evicted calls
    assert all(m["content"] != huge for m in history)
    assert history[-1]["content"] == "ported"
    [compaction] = events(profile_root, "compaction")
    assert compaction["elidedTexts"] >= 1
    assert not warnings_shown(client)


async def test_a_prefix_too_long_for_one_summariser_call_is_summarised_in_chunks(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "notes.md").write_text("notes\n")
    # A long history built under a large window...
    client = await agent(provider_extra={"contextWindow": 100_000})
    provider.script(
        Calls([("r", "read_file", {"path": "notes.md"})], usage=usage(100)),
        Calls([("w", "write_file", {"path": "out.md", "content": "result\n"})], usage=usage(100)),
        Text("wrote out.md", usage=usage(100)),
    )
    assert (await prompt(client, "copy the notes"))["status"] == "done"
    texts = []
    for index in range(10):
        question = f"question {index}: " + "why " * 750
        texts.append(question)
        provider.script(Text(f"answer {index}: " + "because " * 375, usage=usage(100)))
        assert (await prompt(client, question))["status"] == "done"
    await stop_server(client)

    # ...then the same session on a model with a small window: the evicted prefix is
    # several windows long, though every message alone fits in a summariser request.
    parts = {"count": 0}

    def decide(body: dict[str, Any]) -> Any:
        if is_summary(body):
            parts["count"] += 1
            return summary(f"part {parts['count']}")
        return Text("went on")

    provider.script(*(Respond(decide) for _ in range(40)))
    small = await agent(provider_extra={"contextWindow": WINDOW, "keepTokens": 150})
    result = await prompt(small, "go on")
    assert result["status"] == "done"

    summaries = [body for body in provider.requests if is_summary(body)]
    assert len(summaries) > 1
    for number, body in enumerate(summaries, start=1):
        assert request_tokens(body) <= WINDOW - WINDOW // 4
        text = body["messages"][1]["content"]
        if number > 1:  # each chunk updates the recap of the chunks before it
            assert text.startswith("This is a recap") and f"part {number - 1}" in text
            assert "Update that recap" in body["messages"][-1]["content"]
    # Every evicted message went to the summariser once, in order, and whole.
    sent = [entry for body in summaries for entry in summary_transcript(body)]
    contents = [entry["content"] or "" for entry in sent]
    assert all(isinstance(content, str) for content in contents)
    assert [c for c in contents if c.startswith("question")] == texts
    assert contents[0] == "copy the notes"

    history = await messages(small)
    recap = history[0]
    assert recap["kind"] == "recap" and f"part {len(summaries)}" in recap["content"]
    # Paths come from the evicted calls of the first chunk, kept across the chunks.
    assert recap["recap"]["read"] == ["notes.md"] and recap["recap"]["modified"] == ["out.md"]
    [compaction] = events(profile_root, "compaction")
    assert compaction["summaryRequests"] == len(summaries)
    assert history[-1]["content"] == "went on"


async def test_a_failed_automatic_compaction_is_shown_once_per_task(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await agent(
        provider_extra={"contextWindow": WINDOW, "keepTokens": 150, "maxRetries": 0}
    )
    for index in range(3):
        provider.script(Text(f"reply {index} " + "x" * 400, usage=usage(2500)))
        assert (await prompt(client, f"prompt {index}"))["status"] == "done"
    # Before each turn of this task the compaction fails: shown once, logged each time.
    before = len(warnings_shown(client))
    provider.script(
        Text("I will not use your sections."),
        Calls([("l", "list_dir", {"path": "."})], usage=usage(3000)),
        Error(500, {"error": {"message": "summariser down"}}),
        Text("done anyway", usage=usage(3000)),
    )
    result = await prompt(client, "go on")
    assert result["status"] == "done"
    shown = await wait_until(lambda: warnings_shown(client)[before:])
    logged = await wait_until(lambda: len(compaction_logs(client)) >= 2 and compaction_logs(client))
    assert len(shown) == 1
    assert "Automatic compaction failed" in shown[0]
    assert "the summary has no Goal:" in shown[0]  # the reason
    assert "goes on uncompacted" in shown[0]
    assert "summariser down" in logged[1]  # the second failure is logged, not shown
    assert len(warnings_shown(client)[before:]) == 1
    failures = events(profile_root, "compaction_failed")
    assert [f["trigger"] for f in failures] == ["auto", "auto"]
    assert all(m.get("kind") != "recap" for m in await messages(client))

    # A new task: its first failure is shown again.
    provider.script(Text("still no sections"), Text("fine", usage=usage(3000)))
    assert (await prompt(client, "and again"))["status"] == "done"
    await wait_until(lambda: len(warnings_shown(client)[before:]) == 2)


async def test_an_overflow_right_after_a_compaction_fails_the_turn_without_looping(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await agent(provider_extra={"contextWindow": WINDOW, "keepTokens": 150})
    for index in range(3):
        billed = 3000 if index == 2 else 100
        provider.script(Text(f"reply {index} " + "x" * 400, usage=usage(billed)))
        assert (await prompt(client, f"prompt {index}"))["status"] == "done"
    before = len(provider.requests)
    too_long = Error(
        400, {"error": {"message": "maximum context length is 4000 tokens", "code": "x"}}
    )
    provider.script(summary("replied to prompts 0 and 1"), too_long, too_long, too_long)
    result = await prompt(client, "prompt 3")
    assert result["status"] == "failed"
    assert "rejected the request as too long" in result["error"]
    assert "nothing has been added since" in result["error"]
    assert "provider.keepTokens" in result["error"]
    # One compaction (automatic), one call, and no second summariser call.
    kinds = ["summary" if is_summary(r) else "turn" for r in provider.requests[before:]]
    assert kinds == ["summary", "turn"]
    assert [e["trigger"] for e in events(profile_root, "compaction")] == ["auto"]


# --- the summariser requests, as properties -------------------------------------------

sizes = st.sampled_from([0, 5, 300, 2_500, 9_000, 40_000])
"""Text lengths: empty, short, a few k, about a window of 4000 tokens, several windows."""


def sized_text(size: int, char: str) -> str:
    return (char + "x" * 9) * (size // 10) + char * (size % 10)


@st.composite
def evicted_prefixes(draw: st.DrawFn) -> tuple[Message, ...]:
    """User texts, assistant texts (with thinking, tool calls) and their results."""
    messages: list[Message] = []
    char = draw(st.sampled_from(["a", "é", "数", "\n", '"']))
    for index in range(draw(st.integers(1, 12))):
        messages.append(Message(role="user", content=sized_text(draw(sizes), char)))
        calls = tuple(
            ToolCall(f"c{index}-{n}", "write_file", json.dumps({"path": "p", "content": "y" * s}))
            for n, s in enumerate(draw(st.lists(sizes, max_size=3)))
        )
        messages.append(
            Message(
                role="assistant",
                content=sized_text(draw(sizes), char),
                thinking=sized_text(draw(sizes), char) or None,
                tool_calls=calls,
            )
        )
        for call in calls:
            content = sized_text(draw(sizes), char)
            messages.append(Message(role="tool", content=content, tool_call_id=call.id))
    return tuple(messages)


@st.composite
def planned(draw: st.DrawFn) -> tuple[SummaryPlanner, CompactionPlan, int, list[dict[str, str]]]:
    evicted = draw(evicted_prefixes())
    previous = None
    if draw(st.booleans()):
        recap = Recap(*(sized_text(draw(sizes), "r") for _ in range(4)))
        previous = Message(role="user", kind="recap", recap=recap, content=recap.render())
    plan = CompactionPlan(cut=len(evicted), evicted=evicted, previous=previous)
    window = draw(st.sampled_from([1_500, 4_000, 16_000]))
    budget = summary_budget(window)
    focus = sized_text(draw(sizes), "f") or None
    replies = [
        {
            "goal": sized_text(draw(sizes), "g"),
            "progress": sized_text(draw(sizes), "p"),
            "blockers": "none",
            "next_steps": "go on",
        }
        for _ in range(len(evicted))
    ]
    return SummaryPlanner(plan, focus, 8192, budget), plan, budget, replies


def run_planner(planner: SummaryPlanner, replies: list[dict[str, str]]) -> list[list[dict]]:
    requests = []
    while not planner.done:
        requests.append(planner.next_request())
        planner.update(replies[len(requests) - 1])
    return requests


PROPERTY = settings(max_examples=40, deadline=None)


@PROPERTY
@given(planned())
def test_every_summariser_request_fits_its_budget(case) -> None:
    planner, _, budget, replies = case
    for request in run_planner(planner, replies):
        assert request_chars(request) <= budget


@PROPERTY
@given(planned())
def test_every_evicted_message_reaches_the_summariser_once_in_order(case) -> None:
    planner, plan, _, replies = case
    requests = run_planner(planner, replies)
    sent = [entry for request in requests for entry in summary_transcript({"messages": request})]
    whole = [provider_entry(m, 8192) for m in plan.evicted]
    assert [entry["role"] for entry in sent] == [m.role for m in plan.evicted]
    for entry, original in zip(sent, whole, strict=True):
        if entry != original:  # shrunk to fit: elided with its size, never rewritten
            assert '\\"elided\\": true' in json.dumps(entry)


@PROPERTY
@given(planned())
def test_a_call_and_its_results_reach_the_same_request_when_they_fit(case) -> None:
    planner, _, _, replies = case
    chunks = [summary_transcript({"messages": r}) for r in run_planner(planner, replies)]
    for before, after in itertools.pairwise(chunks):
        if after[0]["role"] == "tool":
            # Split inside a group only when the group (its call first) had a request
            # to itself and still did not fit.
            assert before[0]["role"] == "assistant"
            assert all(entry["role"] == "tool" for entry in before[1:])
