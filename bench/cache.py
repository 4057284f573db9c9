"""The prompt cache: how much of a long task's input a provider that caches as Anthropic
does reads from its cache, and what the input then costs.

A scripted long task runs through the real engine (`Engine.prompt`) against the scripted
provider of the tests (`tests/scripted_provider.py`), with an Anthropic model name so
that seri marks its breakpoints: an AGENTS.md of 120 rules, 60 tool turns across two
prompts (file reads and edits), a glob rule that fires at the first source file read,
and a subagent. Every request body the provider received is then fed, in order, to a
model of Anthropic's cache rules (`CacheModel`):

- a request is a sequence of blocks: each tool, then each text part of each message
  (a string content is one part) and each tool call;
- a write happens only at a breakpoint (a `cache_control` marker), of the prefix that
  ends there; a read is the longest prefix written earlier that ends at a block boundary
  at most 20 blocks before a breakpoint; nothing under 1024 tokens is written or read;
  at most 4 breakpoints in a request (more is the provider's 400: the model fails);
- tokens are characters / 4; no entry expires (the task runs well within 5 minutes).

The figures: the share of input tokens read from the cache, with a 200k window and with
a 24k window (where compaction runs; every other setting at its default);
that share against the longest-common-prefix share (each request's longest block prefix
that any earlier request sent: the best any cache could do); and, with no target, the
input cost relative to sending it uncached at Anthropic's prices (a read 0.1x, a write
1.25x an input token).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.measure import Figure
from seri_lsp.engine import Engine
from seri_lsp.host import Host
from seri_lsp.settings import load_settings
from tests.scripted_provider import Calls, Respond, ScriptedProvider, Text

MODEL = "anthropic/claude-sonnet-4.5"
RULES = 120
TOOL_TURNS = (30, 30)  # per prompt
SUBAGENT_READS = 3
# Anthropic's rules, as the model applies them.
LOOKBACK_BLOCKS = 20
MIN_CACHED_TOKENS = 1024
MAX_BREAKPOINTS = 4
READ_PRICE = 0.1
WRITE_PRICE = 1.25
SUMMARY = (
    "Goal: tidy the modules of src/ as AGENTS.md asks\n"
    "Progress: read and edited the modules up to the last one named below\n"
    "Blockers: none\n"
    "Next steps: go on with the next module"
)
# The windows measured, each with its targets (read share, share of the LCP share).
WINDOWS = {200_000: (0.90, 0.95), 24_000: (0.80, 0.95)}


def tokens(chars: int) -> int:
    return (chars + 3) // 4


def make_workspace(root: Path) -> Path:
    """The project: AGENTS.md of 120 rules, a glob rule for src/, docs and modules."""
    workspace = root / "cache-workspace"
    (workspace / "src").mkdir(parents=True)
    (workspace / "docs").mkdir()
    (workspace / ".seri" / "rules").mkdir(parents=True)
    rules = [
        f"{n}. Rule {n}: when you touch code of area {n % 17}, keep its names, its error "
        f"messages and its tests in the style of that area, and say why in the commit."
        for n in range(1, RULES + 1)
    ]
    (workspace / "AGENTS.md").write_text("# Project rules\n\n" + "\n".join(rules) + "\n")
    (workspace / ".seri" / "rules" / "python.md").write_text(
        '---\nglobs: "src/**/*.py"\n---\nEvery function in src/ has type hints and a docstring.\n'
    )
    for index in range(3):
        (workspace / "docs" / f"guide{index}.md").write_text(f"# Guide {index}\n" + "Text.\n" * 300)
    for index in range(64):
        body = "".join(
            f"def handler_{index}_{n}(request):\n    return respond(request, {n})\n\n"
            for n in range(50)
        )
        (workspace / "src" / f"mod{index}.py").write_text(f"# module {index}\n" + body)
    return workspace


def parent_turns() -> Iterator[list[Any]]:
    """The main session's replies, prompt by prompt: reads of docs then modules (the
    glob rule fires at the first), an edit after every third read, a subagent."""
    module = 0
    for prompt, count in enumerate(TOOL_TURNS):
        replies: list[Any] = []
        for turn in range(count):
            call_id = f"p{prompt}t{turn}"
            if prompt == 0 and turn < 3:
                call = (call_id, "read_file", {"path": f"docs/guide{turn}.md"})
            elif prompt == 0 and turn == 12:
                call = (call_id, "task", {"prompt": "Summarise docs/guide0.md to guide2.md."})
            elif turn % 3 == 2:
                path = f"src/mod{module - 1}.py"
                old = f"    return respond(request, {turn})\n"
                new = f"    return respond(request, {turn}, strict=True)\n"
                call = (call_id, "edit", {"path": path, "old_text": old, "new_text": new})
            else:
                call = (call_id, "read_file", {"path": f"src/mod{module}.py"})
                module += 1
            replies.append(Calls([call], text="Next, as AGENTS.md asks."))
        replies.append(Text(f"Done with part {prompt + 1}."))
        yield replies


def subagent_turns() -> list[Any]:
    calls = [
        Calls([(f"s{n}", "read_file", {"path": f"docs/guide{n}.md"})])
        for n in range(SUBAGENT_READS)
    ]
    return [*calls, Text("The guides say: keep handlers small.")]


def script(provider: ScriptedProvider) -> None:
    """Answer every request by who sent it: the summariser (its tools not callable:
    `tool_choice` none), the subagent (no `task` tool), the main session."""
    parent: deque[Any] = deque(reply for replies in parent_turns() for reply in replies)
    child: deque[Any] = deque(subagent_turns())

    def decide(body: dict[str, Any]) -> Any:
        if summarising(body):
            return Text(SUMMARY)
        names = [tool["function"]["name"] for tool in body.get("tools") or []]
        return (parent if "task" in names else child).popleft()

    provider.script(*(Respond(decide) for _ in range(1000)))


def summarising(body: dict[str, Any]) -> bool:
    """A compaction's summariser request: the turns' tools, none of them callable."""
    return body.get("tool_choice") == "none" or not body.get("tools")


def run_task(root: Path, window: int) -> tuple[list[dict[str, Any]], int]:
    """The request bodies the task sent with this context window, in order, and the
    compactions it ran (the summariser's requests)."""
    folder = root / f"cache-{window}"
    folder.mkdir()
    workspace = make_workspace(folder)
    provider = ScriptedProvider(model=MODEL).start()
    try:
        script(provider)
        options = {
            "provider": {
                "baseUrl": provider.base_url,
                "model": MODEL,
                "apiKey": "bench",
                "contextWindow": window,
            },
            "permissions": {"write": "allow"},
            "resumeOnOpen": False,
        }
        profile = folder / "profile"
        settings, problems = load_settings(profile, options)
        assert not problems, problems
        asyncio.run(_run(profile, workspace, settings))
        bodies = list(provider.requests)
        return bodies, sum(1 for body in bodies if summarising(body))
    finally:
        provider.stop()


async def _run(profile: Path, workspace: Path, settings: Any) -> None:
    engine = Engine.open(
        profile_root=profile,
        settings=settings,
        project=str(workspace.resolve()),
        workspace_roots=[workspace.resolve()],
        host=Host(),
    )
    try:
        await engine.new_session()
        for text in ("Tidy the modules of src/, part one.", "Go on with part two."):
            outcome = await engine.prompt(text)
            assert outcome.status == "done", outcome
    finally:
        await engine.close()


@dataclass
class Block:
    """One block of a request, as the cache sees it."""

    key: bytes
    tokens: int
    marked: bool


def blocks(body: dict[str, Any]) -> list[Block]:
    """A request's blocks in the provider's order: the tools, then the messages' parts and
    tool calls. A marker is no part of a block's identity."""
    found: list[Block] = []

    def add(value: Any, marked: bool) -> None:
        key = json.dumps(value, ensure_ascii=False).encode()
        found.append(Block(key, tokens(len(key)), marked))

    for tool in body.get("tools") or []:
        add({k: v for k, v in tool.items() if k != "cache_control"}, "cache_control" in tool)
    for message in body["messages"]:
        content = message.get("content")
        parts = [content] if isinstance(content, str) and content else content or []
        for part in parts:
            text = part if isinstance(part, str) else part.get("text")
            marked = isinstance(part, dict) and "cache_control" in part
            add([message["role"], message.get("tool_call_id"), text], marked)
        for call in message.get("tool_calls") or []:
            add([message["role"], call], False)
    return found


@dataclass
class Outcome:
    """Input tokens of all requests: in all, read from the cache, written to it, and the
    longest common prefix with an earlier request."""

    total: int = 0
    read: int = 0
    written: int = 0
    common: int = 0
    most_breakpoints: int = 0
    # The compaction summariser's requests (summarising): input, and read.
    summariser_total: int = 0
    summariser_read: int = 0

    @property
    def read_share(self) -> float:
        return self.read / self.total

    @property
    def common_share(self) -> float:
        return self.common / self.total

    @property
    def turns_read_share(self) -> float:
        """The read share of the turns' requests alone (the summariser's left out)."""
        return (self.read - self.summariser_read) / (self.total - self.summariser_total)

    @property
    def cost(self) -> float:
        """Input cost against no cache."""
        plain = self.total - self.read - self.written
        return (plain + READ_PRICE * self.read + WRITE_PRICE * self.written) / self.total


class CacheModel:
    """Anthropic's cache rules (see the module's docstring), fed requests in order."""

    def __init__(self) -> None:
        self.written: set[bytes] = set()
        self.seen: set[bytes] = set()
        self.outcome = Outcome()

    def send(self, body: dict[str, Any]) -> None:
        found = blocks(body)
        chain: list[bytes] = []
        ends: list[int] = []  # tokens of the prefix that ends at each block
        digest, total = b"", 0
        for block in found:
            digest = hashlib.blake2b(digest + block.key, digest_size=16).digest()
            total += block.tokens
            chain.append(digest)
            ends.append(total)
        breakpoints = [index for index, block in enumerate(found) if block.marked]
        assert len(breakpoints) <= MAX_BREAKPOINTS, f"{len(breakpoints)} breakpoints"
        read = 0
        for point in breakpoints:
            for index in range(point, max(-1, point - LOOKBACK_BLOCKS - 1), -1):
                if chain[index] in self.written and ends[index] >= MIN_CACHED_TOKENS:
                    read = max(read, ends[index])
                    break
        written = 0
        for point in breakpoints:
            if ends[point] >= MIN_CACHED_TOKENS:
                self.written.add(chain[point])
                written = max(written, ends[point] - read)
        common = 0
        for index, digest in enumerate(chain):
            if digest not in self.seen:
                break
            common = ends[index]
        self.seen.update(chain)
        outcome = self.outcome
        outcome.total += total
        outcome.read += read
        outcome.written += written
        outcome.common += common
        outcome.most_breakpoints = max(outcome.most_breakpoints, len(breakpoints))
        if summarising(body):
            outcome.summariser_total += total
            outcome.summariser_read += read


def measure(bodies: list[dict[str, Any]]) -> Outcome:
    model = CacheModel()
    for body in bodies:
        model.send(body)
    return model.outcome


def cache_figures(root: Path) -> list[Figure]:
    """The figures of each window."""
    figures = []
    for window, (share_target, lcp_target) in WINDOWS.items():
        bodies, compactions = run_task(root, window)
        outcome = measure(bodies)
        where = f"{window // 1000}k window, {len(bodies)} requests, {compactions} compactions"
        ratio = outcome.read_share / outcome.common_share
        figures += [
            Figure(
                f"input tokens read from the prompt cache, a 60-tool-turn task ({where})",
                outcome.read_share,
                0,
                "",
                f">= {share_target:g}",
                outcome.read_share >= share_target,
                text=f"{outcome.read_share:.3f} ({outcome.read:,} of {outcome.total:,})",
            ),
            Figure(
                f"the same / the longest-common-prefix share ({outcome.common_share:.3f}, the"
                " best any cache could do)",
                ratio,
                0,
                "",
                f">= {lcp_target:g}",
                ratio >= lcp_target,
                text=f"{ratio:.3f}",
            ),
            Figure(
                "(no target) the read share of the turns' requests alone (the summariser's"
                " requests:"
                f" {outcome.summariser_total / outcome.total:.1%} of the input,"
                f" {outcome.summariser_read:,} tokens of it read)",
                outcome.turns_read_share,
                0,
                "",
                "-",
                None,
                text=f"{outcome.turns_read_share:.3f}",
            ),
            Figure(
                "(no target) input cost with the cache / without (a read 0.1x, a write 1.25x;"
                f" {outcome.written:,} tokens written, at most {outcome.most_breakpoints}"
                " breakpoints a request)",
                outcome.cost,
                0,
                "",
                "-",
                None,
                text=f"{outcome.cost:.3f}x",
            ),
        ]
    return figures
