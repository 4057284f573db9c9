"""The LSP face's one converter: the engine's typed values -> the contract's JSON.

Field names go camelCase (`session_id` -> `sessionId`); the contract's optional fields
(`OPTIONAL`) are omitted while they hold their default, every other field is sent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

from seri_lsp.agent.code_merge import CodeMerge
from seri_lsp.context.compaction import CompactionResult
from seri_lsp.engine import PromptOutcome
from seri_lsp.events import Activity, Delta, TurnEnded
from seri_lsp.model_choice import ModelChoice, ModelEntry, ModelList
from seri_lsp.slash import SlashAnswer
from seri_lsp.store.legacy import FileReport
from seri_lsp.store.messages import EncodedMessages, Message
from seri_lsp.store.search import SearchHit
from seri_lsp.store.trajectories import Recorded, RecordingInfo, Trajectory

converter = cattrs.Converter(unstruct_collection_overrides={Sequence: list, tuple: list})


def camel(name: str) -> str:
    """`max_attempts` -> `maxAttempts`."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


# The contract's optional fields (`name?` in docs/protocol.md): absent, not null, while
# they hold their default. Every other field is always sent, null included.
OPTIONAL: dict[type, frozenset[str]] = {
    Delta: frozenset({"reset"}),
    TurnEnded: frozenset({"error"}),
    PromptOutcome: frozenset({"error"}),
    Activity: frozenset({"detail", "attempt", "max_attempts", "delay"}),
    SearchHit: frozenset({"kind"}),
    FileReport: frozenset({"reason"}),
    Trajectory: frozenset({"started_at", "updated_at", "note"}),
    ModelEntry: frozenset({"context_window"}),
    ModelList: frozenset({"error"}),
    ModelChoice: frozenset({"warning"}),
    Recorded: frozenset({"trajectory_id"}),
    CodeMerge: frozenset({"range"}),
}
# Fields the contract does not carry: a recording's header is listed by its model only.
UNSENT: dict[type, frozenset[str]] = {RecordingInfo: frozenset({"header"})}


def _dataclass_hook(cls: type) -> Callable[[Any], dict[str, Any]]:
    optional = OPTIONAL.get(cls, frozenset())
    unsent = UNSENT.get(cls, frozenset())
    overrides = {
        field.name: override(
            rename=camel(field.name),
            omit_if_default=field.name in optional,
            omit=field.name in unsent,
        )
        for field in dataclasses.fields(cls)
    }
    if cls is Activity:
        # Seconds to the millisecond: the editor shows a countdown, not float noise.
        overrides["delay"] = override(
            rename="delay", omit_if_default=True, unstruct_hook=lambda delay: round(delay, 3)
        )
    # mypy reads **overrides as possibly filling the bool parameters; all are overrides.
    return make_dict_unstructure_fn(cls, converter, **overrides)  # type: ignore[arg-type]


def _compaction(result: CompactionResult) -> dict[str, Any]:
    # `seri.compact`: whether it ran and how many messages went, then (when it ran) the
    # numbers of its `seri/compacted` notice, or (when it did not) the reason.
    wire: dict[str, Any] = {"compacted": result.compacted, "evicted": result.evicted}
    if result.notice is not None:
        wire.update(to_wire(result.notice))
    if result.message:
        wire["message"] = result.message
    return wire


def _slash_answer(answer: SlashAnswer) -> dict[str, Any]:
    # A slash command's fields sit beside its status and name.
    return {"status": answer.status, "command": answer.command, **to_wire(answer.fields)}


converter.register_unstructure_hook(CompactionResult, _compaction)
converter.register_unstructure_hook(SlashAnswer, _slash_answer)
converter.register_unstructure_hook(Message, lambda message: message.to_wire())
# Messages already encoded (a long history) are written as they are (lsp/protocol.py).
converter.register_unstructure_hook(EncodedMessages, lambda encoded: encoded)
converter.register_unstructure_hook_factory(dataclasses.is_dataclass, _dataclass_hook)


def to_wire(value: Any) -> Any:
    """`value` in the contract's JSON shape."""
    return converter.unstructure(value)
