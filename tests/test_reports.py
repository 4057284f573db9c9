"""`/cost` in words: counts agree with their nouns ("1 call", not "1 calls")."""

from __future__ import annotations

from seri_lsp.context.reports import cost_text
from seri_lsp.store.spend import SpendTotals


def test_a_kind_with_one_call_says_call_and_others_calls() -> None:
    one = SpendTotals(input_tokens=200, output_tokens=60, cost=0.0031, calls=1)
    two = SpendTotals(input_tokens=400, output_tokens=90, cost=0.0052, calls=2)
    totals = SpendTotals(input_tokens=600, output_tokens=150, cost=0.0083, calls=3)
    usage = {
        "totals": totals,
        "calls": 3,
        "cacheHitRate": None,
        "byKind": {"turn": two, "compaction": one, "subagent": SpendTotals()},
    }
    lines = cost_text(usage).splitlines()
    assert lines[0] == "Spend: $0.0083 over 3 model calls."
    turn, compaction = lines[2:]
    assert " 2 calls " in turn
    assert " 1 call " in compaction and "calls" not in compaction
    # The columns stay aligned: both rows put "in" at the same place.
    assert turn.index(" in ") == compaction.index(" in ")
