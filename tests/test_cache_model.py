"""The bench's model of Anthropic's prompt cache (`bench/cache.py`) follows its rules."""

from __future__ import annotations

from typing import Any

import pytest

from bench.cache import CacheModel, blocks, measure

MARK = {"type": "ephemeral", "ttl": "5m"}
BIG = "x" * 8000  # 2,000 tokens: over the smallest prefix cached


def message(text: str, marked: bool = False) -> dict[str, Any]:
    if not marked:
        return {"role": "user", "content": text}
    return {"role": "user", "content": [{"type": "text", "text": text, "cache_control": MARK}]}


def body(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"messages": list(messages)}


def tokens(*messages: dict[str, Any]) -> int:
    """The tokens of these messages' blocks, as the model counts them."""
    return sum(block.tokens for block in blocks(body(*messages)))


BIG_TOKENS = tokens(message(BIG))


def test_a_marked_prefix_is_read_by_the_next_request_and_an_unmarked_one_never() -> None:
    first = body(message(BIG, marked=True))
    second = body(message(BIG), message("more " * 10, marked=True))
    outcome = measure([first, second])
    assert outcome.read == BIG_TOKENS
    assert outcome.written == BIG_TOKENS + tokens(message("more " * 10))
    assert measure([body(message(BIG)), body(message(BIG), message("more"))]).read == 0


def test_a_read_looks_back_at_most_20_blocks_from_a_breakpoint() -> None:
    first = body(message(BIG, marked=True))
    near = [message(f"m{n}") for n in range(19)]
    far = [message(f"m{n}") for n in range(20)]
    assert (
        measure([first, body(message(BIG), *near, message("end", marked=True))]).read == BIG_TOKENS
    )
    assert measure([first, body(message(BIG), *far, message("end", marked=True))]).read == 0


def test_nothing_under_1024_tokens_is_written() -> None:
    small = body(message("x" * 4000, marked=True))
    assert measure([small, small]).read == 0


def test_a_string_and_one_marked_text_part_are_the_same_block() -> None:
    outcome = measure([body(message(BIG, marked=True)), body(message(BIG, marked=True))])
    assert outcome.read == outcome.common == BIG_TOKENS


def test_a_fifth_breakpoint_fails_the_model() -> None:
    with pytest.raises(AssertionError, match="5 breakpoints"):
        CacheModel().send(body(*(message(f"m{n}", marked=True) for n in range(5))))
