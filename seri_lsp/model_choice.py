"""The model a session uses, as the contract shows it: the provider's model list
(`seri.models`) and a session's choice (`seri.session.model`)."""

from __future__ import annotations

from dataclasses import dataclass

from seri_lsp.store.sessions import Session


@dataclass(frozen=True)
class ModelEntry:
    """One model of the provider's list: its id and, when the list gives it, its
    context window."""

    id: str
    context_window: int | None = None


@dataclass(frozen=True)
class ModelList:
    """`seri.models`: the provider's models in its order (empty when the list could not
    be read: `error` says why), `current` the model of the open session's next turn."""

    models: list[ModelEntry]
    current: str
    error: str | None = None


@dataclass(frozen=True)
class ModelChoice:
    """`seri.session.model`: the session with its model (used from its next turn), the
    context window read for it, and a warning when the model could not be checked
    against the provider's list."""

    session: Session
    model: str
    context_window: int | None
    warning: str | None = None
