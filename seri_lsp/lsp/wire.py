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

from seri_lsp.events import Activity
from seri_lsp.store.messages import Message

converter = cattrs.Converter(unstruct_collection_overrides={Sequence: list, tuple: list})


def camel(name: str) -> str:
    """`max_attempts` -> `maxAttempts`."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def _dataclass_hook(cls: type) -> Callable[[Any], dict[str, Any]]:
    renames = {field.name: override(rename=camel(field.name)) for field in dataclasses.fields(cls)}
    if cls is Activity:
        # Seconds to the millisecond: the editor shows a countdown, not float noise.
        renames["delay"] = override(rename="delay", unstruct_hook=lambda delay: round(delay, 3))
    # mypy reads **renames as possibly filling the bool parameters; they are all overrides.
    return make_dict_unstructure_fn(
        cls,
        converter,
        _cattrs_omit_if_default=True,
        **renames,  # type: ignore[arg-type]
    )


converter.register_unstructure_hook(Message, lambda message: message.to_wire())
converter.register_unstructure_hook_factory(dataclasses.is_dataclass, _dataclass_hook)


def to_wire(value: Any) -> Any:
    """`value` in the contract's JSON shape."""
    return converter.unstructure(value)
