"""The model provider: OpenAI-compatible chat completions, through httpx.

OpenRouter is the default base URL. Replies stream as server-sent events; `usage` is read
from every response. One module per concern:

- `request`: what a call sends (headers, the JSON body: messages, tools, sampling knobs);
- `cache`: the prompt-cache breakpoints (which models need them, where they go);
- `reply`: reading the answer (streamed chunks or a whole body) into a `Reply`;
- `errors`: the typed errors, in the user's words;
- `retry`: which failures are sent again, with backoff and jitter;
- `models`: the context window (the setting, the provider's `/models`, the default);
- `client`: `Provider`, which ties them to the HTTP client of `agent/connection.py`.

Importers use the names re-exported here.
"""

from seri_lsp.agent.provider.client import Provider
from seri_lsp.agent.provider.errors import (
    ConnectionFailed,
    ContextTooLong,
    MalformedReply,
    MissingApiKey,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeout,
    ProviderUnreachable,
    SettingsBlocked,
    StreamTruncated,
)
from seri_lsp.agent.provider.models import Log, WindowSource
from seri_lsp.agent.provider.reply import DeltaCallback, Reply, Usage
from seri_lsp.agent.provider.request import is_local_url
from seri_lsp.agent.provider.retry import RetryCallback, RetryNotice

__all__ = [
    "ConnectionFailed",
    "ContextTooLong",
    "DeltaCallback",
    "Log",
    "MalformedReply",
    "MissingApiKey",
    "Provider",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderTimeout",
    "ProviderUnreachable",
    "Reply",
    "RetryCallback",
    "RetryNotice",
    "SettingsBlocked",
    "StreamTruncated",
    "Usage",
    "WindowSource",
    "is_local_url",
]
