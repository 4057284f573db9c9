"""The context window: the `contextWindow` setting, else the configured model's entry in
the provider's model list (`GET /models`: OpenRouter's `context_length`, LiteLLM's
`max_input_tokens`, vLLM's `max_model_len`), else 128000.

The list is read once; when it cannot be read, the default serves and the list is asked
again only after MODELS_RETRY_SECONDS, so an offline editor does not wait on the network
at every call.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import httpx

from seri_lsp.agent.connection import Client
from seri_lsp.agent.provider.errors import ProviderError
from seri_lsp.agent.provider.reply import read_body
from seri_lsp.host import Level
from seri_lsp.model_choice import ModelEntry
from seri_lsp.settings import DEFAULT_CONTEXT_WINDOW, ProviderSettings
from seri_lsp.waits import Wait

MODELS_RETRY_SECONDS = 300.0
# The whole /models answer must arrive within this (it only sizes the window).
MODELS_SECONDS = Wait("MODELS_SECONDS", 5.0)
# Where the context window came from (`seri.session.get`'s `usage.contextWindowSource`).
WindowSource = Literal["setting", "provider", "default"]
# The fields of a model-list entry that give its context window: OpenRouter's, LiteLLM's,
# vLLM's.
WINDOW_FIELDS = ("context_length", "max_input_tokens", "max_model_len")

# Where the provider writes a line for the user's log (the host's `log`).
Log = Callable[[Level, str], None]


class ContextWindow:
    """The window of one provider configuration, settled at most once from the model
    list. `log` (if given) receives one line when the window in use is settled or
    changes, saying where it came from."""

    def __init__(self, settings: ProviderSettings, log: Log | None = None) -> None:
        self.settings = settings
        self._log = log
        self._tokens: int | None = settings.context_window
        self._source: WindowSource = "setting" if settings.context_window else "default"
        self._field = ""  # the model list's field that gave the window
        self._logged: tuple[int, str] | None = None
        self._retry_at = 0.0
        self._unread = False  # the model list could not be read (the last time it was asked)

    def known(self) -> int | None:
        """The window if it is known without asking the provider (None: not yet)."""
        return self._tokens

    @property
    def source(self) -> WindowSource:
        """Where the window `tokens()` last gave came from."""
        return self._source

    async def tokens(self, client: Callable[[], Awaitable[Client]], may_ask: bool) -> int:
        """The window in use; the model list is read through `client` when the window is
        not known yet, `may_ask` (a call can be sent) and the last failure is old enough."""
        if self._tokens is None and time.monotonic() >= self._retry_at and may_ask:
            found = await self._from_models(client)
            self._unread = found is None
            if found is not None:
                self._tokens, self._field = found
                self._source = "provider" if self._field else "default"
        tokens = self._tokens or DEFAULT_CONTEXT_WINDOW
        self._note(tokens)
        return tokens

    async def _from_models(self, client: Callable[[], Awaitable[Client]]) -> tuple[int, str] | None:
        """(window, the field that gave it) for the configured model from `GET /models`;
        (the default, "") when the list does not give it; None when the list cannot be
        read (then it is asked again only after MODELS_RETRY_SECONDS)."""
        models = await read_model_list(client)
        if models is None:
            # Unreachable or no model list: the default for now, asked again later.
            self._retry_at = time.monotonic() + MODELS_RETRY_SECONDS
            return None
        return _window_of(models, self.settings.model)

    def _note(self, tokens: int) -> None:
        """Log the window in use and its source, once (and again if it changes)."""
        if self._log is None or self._logged == (tokens, self._source):
            return
        self._logged = (tokens, self._source)
        where = {
            "setting": "the provider.contextWindow setting",
            "provider": f"the provider's model list ({self._field})",
            "default": (
                "the default (the provider's model list could not be read: it is asked "
                f"again in {MODELS_RETRY_SECONDS:g} s)"
                if self._unread
                else "the default (the provider's model list did not give one)"
            ),
        }[self._source]
        self._log(
            "info", f"Context window of {self.settings.model}: {tokens:,} tokens, from {where}."
        )


async def read_model_list(client: Callable[[], Awaitable[Client]]) -> list[Any] | None:
    """The entries of the provider's `GET /models` as it sent them; None when the list
    cannot be read (unreachable, not 200, not a list, too slow)."""
    try:
        made = await client()
        # A deadline for the whole answer, not only for each read: a server that
        # trickles its model list must not hold up the first call.
        async with (
            asyncio.timeout(MODELS_SECONDS.seconds()),
            made.http.stream("GET", "models") as response,
        ):
            raw = await read_body(response)
        data = json.loads(raw) if response.status_code == 200 else None
        models = data.get("data", []) if isinstance(data, dict) else None
    except (
        ProviderError,
        httpx.HTTPError,
        TimeoutError,
        ValueError,
        RecursionError,
        UnicodeError,
    ):
        return None
    return models if isinstance(models, list) else None


def model_entries(models: list[Any]) -> list[ModelEntry]:
    """The list's models with an id, in the provider's order, each with its window."""
    entries: list[ModelEntry] = []
    seen: set[str] = set()
    for model in models:
        if not isinstance(model, dict):
            continue
        model_id = model.get("id")
        if not isinstance(model_id, str) or not model_id or model_id in seen:
            continue
        seen.add(model_id)
        window, field = _window_of([model], model_id)
        entries.append(ModelEntry(model_id, window if field else None))
    return entries


def _window_of(models: list[Any], model_id: str) -> tuple[int, str]:
    """(window, the field that gave it) of `model_id` in a model list; (the default, "")
    when the list does not give it."""
    for model in models:
        if isinstance(model, dict) and model.get("id") == model_id:
            for name in WINDOW_FIELDS:
                length = model.get(name)
                if isinstance(length, int) and not isinstance(length, bool) and length > 0:
                    return length, name
            break
    return DEFAULT_CONTEXT_WINDOW, ""
