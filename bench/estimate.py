"""Benchmark: the pre-call token estimate does not grow with the history.

Run on demand: `python bench/estimate.py`. For histories of growing length it times
`Conversation.estimate_tokens()` (running totals) against a baseline measured in the same
run: re-counting every message's characters, which is what the estimate would cost if
it re-scanned the history. Figures are ratios, so they hold on any machine.
"""

from __future__ import annotations

import timeit
from pathlib import Path
from typing import Any

from seri_lsp.context.conversation import Conversation
from seri_lsp.context.prompt_files import freeze
from seri_lsp.store.messages import Message, ToolCall, count_chars, tokens_for_chars
from seri_lsp.store.sessions import SessionInfo


def history(length: int) -> list[Message]:
    messages: list[Message] = []
    for index in range(length // 3):
        call = ToolCall(id=f"c{index}", name="read_file", arguments='{"path": "src/app.py"}')
        messages += [
            Message(role="assistant", content="Let me look.", tool_calls=(call,)),
            Message(role="tool", content="x = 1\n" * 200, tool_call_id=call.id),
            Message(role="user", content=f"prompt {index}"),
        ]
    return messages


def rescan_estimate(conversation: Conversation) -> int:
    chars = conversation.frozen.chars + sum(count_chars(m) for m in conversation.messages)
    return max(conversation.last_billed or 0, tokens_for_chars(chars))


def rows(lengths: tuple[int, ...] = (30, 300, 3000, 30000)) -> list[tuple[int, float, float]]:
    """(messages, running-total seconds, re-scan seconds) for each history length."""
    frozen = freeze(None, Path("/nonexistent-profile"))
    info = SessionInfo("bench", "/bench", "", "", "", None, None, None, 0)
    results = []
    for length in lengths:
        # Only the running totals are timed: no store is written.
        no_store: Any = None
        conversation = Conversation(
            info, frozen, set(), store=no_store, io=no_store, emit=print, messages=history(length)
        )
        assert conversation.estimate_tokens() == rescan_estimate(conversation)
        runs = 2000
        ours = timeit.timeit(conversation.estimate_tokens, number=runs) / runs
        baseline = timeit.timeit(lambda c=conversation: rescan_estimate(c), number=20) / 20
        results.append((length, ours, baseline))
    return results


def render(results: list[tuple[int, float, float]]) -> str:
    lines = [f"{'messages':>9} {'running total (us)':>19} {'re-scan (us)':>13} {'ratio':>8}"]
    for length, ours, baseline in results:
        lines.append(
            f"{length:>9} {ours * 1e6:>19.2f} {baseline * 1e6:>13.1f} {baseline / ours:>7.0f}x"
        )
    return "\n".join(lines)


def main() -> None:
    print(render(rows()))


if __name__ == "__main__":
    main()
