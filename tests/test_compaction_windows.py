"""Compaction at every window size: the keep budget in force is min(keepTokens, window / 4).

Property tests over windows from 4k to 1M tokens (after a compaction the history is under
the trigger whenever a legal cut allows it), and the server end to end with a 16k window
and the default keepTokens: automatic compaction runs, `/compact` works, the context view
and `seri.info` show the budget in force, and the messages that say compaction could not
make room name `keepTokens`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from seri_lsp.context.compaction import (
    MIN_EVICTABLE,
    NOT_ENOUGH,
    compaction_threshold,
    keep_budget,
    keep_note,
    legal_cut_points,
    plan_compaction,
)
from seri_lsp.context.recap import Recap
from seri_lsp.store.messages import Message, ToolCall, tokens_for_chars
from tests.agent_helpers import prompt
from tests.harness import command, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text, usage

PROPERTY = settings(max_examples=60, deadline=None)
SUMMARY = (
    "Goal: port the parser\nProgress: the lexer is done\nBlockers: none\nNext steps: the grammar"
)


def recap_message(chars: int) -> Message:
    recap = Recap(goal="g" * max(1, chars - 60), progress="p", blockers="b", next_steps="n")
    return Message(role="user", content=recap.render(), kind="recap", recap=recap)


@st.composite
def windowed_histories(draw: st.DrawFn) -> tuple[int, int, int, list[Message], int]:
    """(window, keepTokens, system chars, a history at or past the trigger, new recap
    chars): messages of at most 1/32 of the window each, in turns of a prompt, tool calls
    with their results, and a reply; an earlier recap in front sometimes; the system
    prompt at most 1/16 of the window and the new recap at most 1/8 of it."""
    window = draw(st.integers(4_000, 1_000_000))
    keep = draw(st.one_of(st.just(20_000), st.integers(1, 2_000_000)))
    unit = window * 4 // 32  # characters: 1/32 of the window in tokens
    system = draw(st.integers(0, window * 4 // 16))
    # The many sizes come from one seeded generator: drawn one by one they would make the
    # smallest example huge.
    rnd = random.Random(draw(st.integers(0, 2**32)))

    def size() -> int:
        return rnd.randint(1, unit)

    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(recap_message(rnd.randint(200, unit)))
    chars = system + sum(m.chars for m in messages)
    goal = compaction_threshold(window) * 4 + draw(st.integers(0, window * 4))
    turn = 0
    while chars < goal:
        turn += 1
        messages.append(Message(role="user", content="u" * size()))
        for index in range(rnd.randint(0, 2)):
            call = ToolCall(id=f"c{turn}_{index}", name="read_file", arguments='{"path":"a"}')
            messages.append(Message(role="assistant", content="", tool_calls=(call,)))
            messages.append(Message(role="tool", content="t" * size(), tool_call_id=call.id))
        messages.append(Message(role="assistant", content="a" * size()))
        chars = system + sum(m.chars for m in messages)
    recap = draw(st.integers(100, window * 4 // 8))
    return window, keep, system, messages, recap


def after(messages: Sequence[Message], cut: int, system: int, recap: int) -> int:
    """Tokens of the history once the prefix before `cut` is a recap of `recap` chars."""
    return tokens_for_chars(system + recap + sum(m.chars for m in messages[cut:]))


def allows(messages: Sequence[Message], system: int, recap: int, window: int) -> bool:
    """Whether some legal cut evicting at least four messages leaves the history under
    the trigger."""
    for cut in legal_cut_points(messages):
        evictable = sum(1 for m in messages[:cut] if not m.is_recap)
        if evictable >= MIN_EVICTABLE and after(messages, cut, system, recap) < (
            compaction_threshold(window)
        ):
            return True
    return False


def test_the_budget_in_force_is_keep_tokens_at_most_a_quarter_of_the_window() -> None:
    assert keep_budget(20_000, 16_000) == 4_000
    assert keep_budget(20_000, 200_000) == 20_000
    assert keep_budget(3_000, 16_000) == 3_000
    assert keep_note(20_000, 200_000) is None
    note = keep_note(20_000, 16_000)
    assert note is not None and "keepTokens" in note and "4000" in note


@PROPERTY
@given(windowed_histories())
def test_after_a_compaction_the_history_is_under_the_trigger_whenever_a_cut_allows_it(
    case,
) -> None:
    window, keep, system, messages, recap = case
    plan = plan_compaction(messages, keep_budget(keep, window))
    if not allows(messages, system, recap, window):
        return
    assert plan is not None
    assert after(messages, plan.cut, system, recap) < compaction_threshold(window)


@PROPERTY
@given(windowed_histories())
def test_a_configured_keep_tokens_never_keeps_more_than_a_quarter_of_the_window(case) -> None:
    window, keep, _, messages, _ = case
    plan = plan_compaction(messages, keep_budget(keep, window))
    assert plan is not None  # these histories are past the trigger in small messages
    kept = tokens_for_chars(sum(m.chars for m in messages[plan.cut :]))
    last = legal_cut_points(messages)[-1]
    assert kept <= window // 4 or plan.cut == last


# --- end to end: a 16k window with the default keepTokens ------------------------------

WINDOW = 16_000
FILLER = "y" * 200


async def sixteen_k(agent, **extra):
    return await agent(provider_extra={"contextWindow": WINDOW, **extra})


async def build_history(
    client, provider: ScriptedProvider, last_usage: int, prompts: int = 18
) -> None:
    """`prompts` prompts (18: 72 messages, about 4,700 tokens), each: the prompt, a
    read_file call, its result and a reply."""
    for index in range(prompts):
        billed = last_usage if index == prompts - 1 else 500
        provider.script(
            Calls([(f"call_{index}", "read_file", {"path": "notes.txt"})], usage=usage(400)),
            Text(f"reply {index} {FILLER}", usage=usage(billed)),
        )
        assert (await prompt(client, f"prompt {index} {FILLER}"))["status"] == "done"


async def test_a_16k_window_compacts_automatically_and_on_request(
    agent, provider: ScriptedProvider, workspace
) -> None:
    (workspace / "notes.txt").write_text("n" * 600)
    client = await sixteen_k(agent)
    # Within the 20,000 tokens keepTokens would keep: the whole history.
    await build_history(client, provider, last_usage=8_000)
    session = await command(client, "seri.session.get", {})
    assert len(session["messages"]) == 72

    context = await command(client, "seri.session.context", {})
    assert (context["keepTokens"], context["keepTokensSetting"]) == (4_000, 20_000)

    provider.script(Text(SUMMARY), Text("answered"))
    assert (await prompt(client, "prompt 18"))["status"] == "done"
    compacted = await wait_until(lambda: client.seri["seri/compacted"])
    assert compacted[0]["trigger"] == "auto" and compacted[0]["evicted"] >= MIN_EVICTABLE
    assert compacted[0]["tokensAfter"] < compaction_threshold(WINDOW)

    await build_history(client, provider, last_usage=500, prompts=6)
    provider.script(Text(SUMMARY))
    result = await command(client, "seri.compact", {})
    assert result["compacted"] is True and result["trigger"] == "manual"


async def test_info_notes_a_keep_tokens_the_window_cuts(agent, provider: ScriptedProvider) -> None:
    client = await sixteen_k(agent, keepTokens=20_000)
    info = await command(client, "seri.info", {})
    assert info["notes"] == [keep_note(20_000, WINDOW)]
    roomy = await agent(provider_extra={"contextWindow": 200_000})
    assert "notes" not in await command(roomy, "seri.info", {})


async def test_not_enough_history_names_keep_tokens_when_the_budget_is_why(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent(provider_extra={"contextWindow": 200_000})
    for index in range(4):
        provider.script(Text(f"reply {index}"))
        assert (await prompt(client, f"prompt {index}"))["status"] == "done"
    result = await command(client, "seri.compact", {})
    assert result["compacted"] is False
    assert result["message"].startswith(NOT_ENOUGH) and "provider.keepTokens" in result["message"]
    assert "the newest 20,000 tokens" in result["message"]
