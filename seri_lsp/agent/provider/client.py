"""`Provider`: one OpenAI-compatible endpoint and model, called through httpx.

It ties the package's parts together: the request (`request.py`) is sent through the
configuration's client (`connection.py`: one `AsyncClient`, kept alive across turns and
tasks, so the next call skips the TCP and TLS handshakes), its reply read
(`reply.py`), a failure worded (`errors.py`) and, when worth it, retried (`retry.py`);
the context window comes from `models.py`. `provider.timeout` is a deadline over each
whole attempt: keep-alive comments and trickled bytes do not extend it. Nothing is
built before it is needed: the client (and its TLS context) is made at the first call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import httpx

from seri_lsp.agent.connection import BadBaseUrl, BadProxy, Client, make_client
from seri_lsp.agent.provider.cache import marks_wanted, refuses_markers
from seri_lsp.agent.provider.errors import (
    MissingApiKey,
    ProviderHTTPError,
    ProviderUnreachable,
    SettingsBlocked,
    StreamTruncated,
    call_failure,
    http_error,
)
from seri_lsp.agent.provider.models import (
    ContextWindow,
    Log,
    WindowSource,
    model_entries,
    read_model_list,
)
from seri_lsp.agent.provider.reply import (
    DeltaCallback,
    Reply,
    finish_body,
    read_body,
    read_stream,
    read_whole,
)
from seri_lsp.agent.provider.request import (
    JSON_BODY,
    BodyEncoder,
    headers,
    is_local_url,
    with_tool_choice,
)
from seri_lsp.agent.provider.retry import RetryCallback, retrying
from seri_lsp.limits import clean_text
from seri_lsp.model_choice import ModelEntry
from seri_lsp.settings import ProviderSettings

# The most seconds connecting may take (less when `provider.timeout` is shorter).
CONNECT_SECONDS = 15.0


class Provider:
    """A client for one OpenAI-compatible endpoint and model.

    `log` (if given) receives one line when the context window in use is settled or
    changes, saying where it came from.
    """

    def __init__(self, settings: ProviderSettings, log: Log | None = None) -> None:
        self.settings = settings
        self._connection: Client | None = None
        self._connecting: asyncio.Lock | None = None
        self._log = log
        self._bodies = BodyEncoder(settings)
        self._window = ContextWindow(settings, log)
        # Sessions whose provider refused the prompt-cache breakpoints: sent none since.
        self._unmarked: set[str | None] = set()
        # Clients of settings replaced since (a call may still use one), closed at the end.
        self._retired: list[Client] = []

    def reconfigure(self, settings: ProviderSettings) -> None:
        """Use `settings` from the next call on: a new client (made at that call), the
        context window and the prompt-cache refusals learnt again."""
        self.settings = settings
        self._bodies = BodyEncoder(settings)
        self._window = ContextWindow(settings, self._log)
        self._unmarked.clear()
        if self._connection is not None:
            self._retired.append(self._connection)
            self._connection = None

    async def _client(self) -> Client:
        """The HTTP client with its connection pool, made at the first call (off the
        event loop: the TLS context reads certificate files). A base URL or a proxy that
        cannot be used is a ProviderUnreachable naming it."""
        if self._connection is None:
            if self._connecting is None:
                self._connecting = asyncio.Lock()
            async with self._connecting:
                if self._connection is None:
                    self._connection = await asyncio.to_thread(self._make_client)
        return self._connection

    def _make_client(self) -> Client:
        url = self.settings.base_url
        try:
            # Only connecting has its own timeout; `provider.timeout` is a deadline over
            # each whole attempt (see `_attempt`), so a stream that keeps the connection
            # busy with keep-alive comments or single bytes cannot outlive it.
            return make_client(
                url, headers=headers(self.settings), connect_timeout=self._connect_seconds
            )
        except BadBaseUrl as exc:
            raise ProviderUnreachable(
                f"provider.baseUrl {clean_text(url)!r} is not a URL seri can call: {exc}. "
                "Correct it in the settings."
            ) from exc
        except BadProxy as exc:
            raise ProviderUnreachable(f"Could not reach the provider at {url}: {exc}.") from exc

    @property
    def _connect_seconds(self) -> float:
        return min(self.settings.timeout, CONNECT_SECONDS)

    @property
    def missing_key(self) -> str | None:
        """Why a call cannot be sent for want of an API key; None when it can."""
        if self.settings.api_key or is_local_url(self.settings.base_url):
            return None
        return f"No API key for {self.settings.base_url}: {self.settings.key_advice()}."

    @property
    def refusal(self) -> str | None:
        """Why nothing may be sent (a wrong setting, no key); None when calls may go."""
        return self.settings.blocked() or self.missing_key

    async def complete(
        self,
        messages: Sequence[dict[str, Any] | bytes],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        tool_choice: str | None = None,
        reply: Reply | None = None,
        on_delta: DeltaCallback | None = None,
        on_retry: RetryCallback | None = None,
        on_thinking: DeltaCallback | None = None,
        session: str | None = None,
    ) -> Reply:
        """Send one chat completion and return the model's reply.

        `session` is the id of the seri session the call is for (a subagent's own): named
        to OpenRouter, and where the provider refused the prompt-cache breakpoints, no
        more are sent for it (see `cache.py`).

        `reply` (if given) is filled as the stream arrives, so a caller that cancels
        this coroutine still has the text received so far. `on_delta` and `on_thinking`
        receive the reply's text and its thinking as they stream. `on_retry` is awaited
        before a failed attempt is retried, so the caller can drop what that attempt
        streamed.
        """
        blocked = self.settings.blocked()
        if blocked is not None:
            # Not even to the default provider: a wrong setting must not send work elsewhere.
            raise SettingsBlocked(blocked)
        if self.missing_key is not None:
            # A provider on the internet refuses a call without a key anyway; saying so
            # before sending names the setting instead of the provider's own wording.
            raise MissingApiKey(self.missing_key)
        mark = marks_wanted(self.settings) and session not in self._unmarked

        async def send(marked: bool) -> Reply:
            body = self._bodies.encode(messages, tools, session=session, mark=marked)
            if tool_choice is not None:
                body = with_tool_choice(body, tool_choice)

            async def attempt() -> Reply:
                target = reply if reply is not None else Reply()
                target.reset()
                try:
                    return await self._attempt(body, target, on_delta, on_thinking)
                except StreamTruncated as exc:
                    # The message is in plain words; what the wire showed is for the log.
                    if self._log is not None and exc.detail:
                        self._log("warning", f"{exc} ({exc.detail})")
                    raise

            return await retrying(attempt, self.settings, on_retry)

        try:
            return await send(mark)
        except ProviderHTTPError as exc:
            if not (mark and refuses_markers(exc)):
                raise
            # A gateway or model that does not take the breakpoints: the turn goes on
            # without them, and the session sends none from now on.
            self._unmarked.add(session)
            if self._log is not None:
                self._log(
                    "warning",
                    f"The provider refused the prompt-cache breakpoints (cache_control) of "
                    f"{self.settings.model} ({exc}); this session sends none from now on. "
                    "Set provider.promptCache to off to stop sending them.",
                )
            return await send(False)

    async def _attempt(
        self,
        body: bytes,
        reply: Reply,
        on_delta: DeltaCallback | None,
        on_thinking: DeltaCallback | None = None,
    ) -> Reply:
        client = await self._client()
        answered = False
        try:
            async with (
                asyncio.timeout(self.settings.timeout) as deadline,
                client.http.stream(
                    "POST", "chat/completions", content=body, headers=JSON_BODY
                ) as response,
            ):
                answered = True
                if response.status_code >= 400:
                    text = (await read_body(response)).decode("utf-8", "replace")
                    raise http_error(response, text, self.settings)
                if self.settings.stream:
                    rest = await read_stream(response, reply, on_delta, on_thinking)
                    # The reply is complete: the deadline no longer applies to it, and
                    # the body's end lets the connection serve the next call.
                    deadline.reschedule(None)
                    await finish_body(rest)
                else:
                    read_whole(await read_body(response), reply)
        except (TimeoutError, httpx.TransportError, UnicodeEncodeError) as exc:
            raise call_failure(
                exc,
                answered=answered,
                client=client,
                settings=self.settings,
                connect_seconds=self._connect_seconds,
            ) from exc
        return reply

    def known_context_window(self) -> int | None:
        """The window if it is known without asking the provider (None: not yet)."""
        return self._window.known()

    @property
    def window_source(self) -> WindowSource:
        """Where the window `context_window()` last gave came from: the `contextWindow`
        setting, the provider's model list, or the default."""
        return self._window.source

    async def context_window(self) -> int:
        """contextWindow from settings, else the provider's model list (OpenRouter's
        `context_length`, LiteLLM's `max_input_tokens`, vLLM's `max_model_len` of the
        configured model), else 128000."""
        return await self._window.tokens(self._client, may_ask=self.refusal is None)

    async def models(self) -> list[ModelEntry] | None:
        """The provider's models (`GET /models`, read now, each with its context window
        when the list gives it); None when the list cannot be read."""
        models = await read_model_list(self._client)
        return None if models is None else model_entries(models)

    async def aclose(self) -> None:
        """Close the HTTP connection pools (if a call ever opened one)."""
        for client in [*self._retired, self._connection]:
            if client is not None:
                await client.http.aclose()
