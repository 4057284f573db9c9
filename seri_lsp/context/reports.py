"""`/cost` and `/context` in words: the answers of `seri.session.usage` and
`seri.session.context` as the text a chat (or a terminal) prints."""

from __future__ import annotations

from typing import Any

from seri_lsp.model_choice import ModelChoice, ModelList
from seri_lsp.store.spend import SpendTotals

BAR_WIDTH = 20


def money(cost: float | None) -> str:
    """A cost in USD as people read it (`$0.0123`, `$1.50`); `no cost reported` for None."""
    if cost is None:
        return "no cost reported"
    return f"${cost:,.2f}" if cost >= 1 else f"${cost:.4f}"


def spend_words(totals: SpendTotals) -> str:
    """A session's spend in a few words: its cost, else its tokens (`seri-lsp sessions`)."""
    if totals.cost is not None:
        return money(totals.cost)
    return f"{totals.input_tokens + totals.output_tokens:,} tok"


def cost_text(usage: dict[str, Any]) -> str:
    """`/cost`: the totals, the cache's share of the input, then a line per kind of call."""
    totals: SpendTotals = usage["totals"]
    calls = usage["calls"]
    plural = "s" if calls != 1 else ""
    lines = [f"Spend: {money(totals.cost)} over {calls:,} model call{plural}."]
    rate = usage["cacheHitRate"]
    written = totals.cache_write_tokens
    writes = f"; {written:,} written to the cache" if written else ""
    cached = (
        f" ({totals.cached_input_tokens:,} cached, {rate:.0%}{writes})" if rate is not None else ""
    )
    lines.append(
        f"Input {totals.input_tokens:,} tokens{cached}; output {totals.output_tokens:,}"
        f" (reasoning {totals.reasoning_tokens:,})."
    )
    by_kind: dict[str, SpendTotals] = usage["byKind"]
    for kind, entry in by_kind.items():
        if entry.calls:
            lines.append(
                f"  {kind:<10} {entry.calls:>5,} {'call ' if entry.calls == 1 else 'calls'}"
                f"  in {entry.input_tokens:>10,}"
                f"  out {entry.output_tokens:>8,}  {money(entry.cost)}"
            )
    return "\n".join(lines)


def bar(share: float, width: int = BAR_WIDTH) -> str:
    """A text bar `share` (0 to 1) full."""
    filled = min(width, max(0, round(share * width)))
    return "█" * filled + "░" * (width - filled)


def context_text(context: dict[str, Any]) -> str:
    """`/context`: the estimate against the window (a bar with `|` where compaction
    starts), then a bar per part, its tokens and its share of the local count."""
    window, local = context["contextWindow"], context["localTokens"]
    at = context["compactAt"]
    overall = bar(context["estimateTokens"] / window if window else 0, 2 * BAR_WIDTH)
    mark = min(len(overall) - 1, round(at / window * len(overall))) if window else 0
    lines = [
        f"Context: {context['estimateTokens']:,} of {window:,} tokens; compaction starts at "
        f"{at:,}.",
        f"[{overall[:mark]}|{overall[mark:]}]",
    ]
    billed = context["lastBilledTokens"]
    if billed is not None and billed > local:
        lines.append(
            f"(The last call was billed {billed:,} input tokens; counted here: {local:,}.)"
        )
    for part in context["parts"]:
        share = part["tokens"] / local if local else 0
        name = part["name"]
        if part["kind"] == "mcpTools":  # (outside the local count: sent with each request)
            name = f"MCP tools of {name} (each request)"
        lines.append(f"{bar(share)} {part['tokens']:>8,} {share:>4.0%}  {name}")
    return "\n".join(lines)


# The most models `/model` lists (a provider such as OpenRouter offers hundreds).
MODEL_LIST_LINES = 30


def model_list_text(listed: ModelList) -> str:
    """`/model`: the model of the next turn, then the provider's models with their
    context windows (the first MODEL_LIST_LINES)."""
    lines = [f"Model: {listed.current}"]
    if listed.error:
        lines.append(f"{listed.error}; /model NAME still takes an id.")
        return "\n".join(lines)
    lines.append(f"The provider offers {len(listed.models)} (/model NAME to use one):")
    for entry in listed.models[:MODEL_LIST_LINES]:
        window = f"  {entry.context_window:,} tokens" if entry.context_window else ""
        mark = "* " if entry.id == listed.current else "  "
        lines.append(f"{mark}{entry.id}{window}")
    if len(listed.models) > MODEL_LIST_LINES:
        lines.append(f"  ... and {len(listed.models) - MODEL_LIST_LINES} more")
    return "\n".join(lines)


def model_choice_text(chosen: ModelChoice) -> str:
    """`/model NAME`: the model this session uses from its next turn."""
    window = f" (context window {chosen.context_window:,} tokens)" if chosen.context_window else ""
    text = f"This session uses {chosen.model} from the next turn{window}."
    return f"{text}\n{chosen.warning}" if chosen.warning else text
