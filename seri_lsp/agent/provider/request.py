"""What a chat completion sends: the headers, and the JSON body (model, messages, tools,
sampling knobs, reasoning effort, OpenRouter's provider pin, streaming).

The body is encoded as compact UTF-8 JSON; everything around the messages is encoded
once for a given set of tools and kept, and a message already encoded (bytes) is sent as
it is, so a long conversation is not encoded again at every call.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

from seri_lsp import __version__
from seri_lsp.agent.provider.cache import marked_message, marked_tools, marker
from seri_lsp.settings import ProviderSettings
from seri_lsp.store.messages import request_json

JSON_BODY = {"Content-Type": "application/json"}
# Host names that stay on this machine or the local network: no API key is needed there.
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, Tailscale
# Encoded frames kept at most (one per set of tools offered).
_MAX_FRAMES = 8


def is_local_url(url: str) -> bool:
    """Whether `url` points at this machine or a private network (no API key expected)."""
    host = (urlparse(url).hostname or "").rstrip(".")
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or host.endswith(_LOCAL_SUFFIXES) or "." not in host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address in _SHARED_ADDRESS_SPACE
    )


def is_openrouter(url: str) -> bool:
    """Whether the base URL is OpenRouter's (it spells reasoning effort its own way)."""
    return (urlparse(url).hostname or "").endswith("openrouter.ai")


def headers(settings: ProviderSettings) -> dict[str, str]:
    """The headers every call sends (the API key, when there is one)."""
    sent = {
        "User-Agent": f"seri-lsp/{__version__}",
        "Accept-Encoding": "identity",
        "HTTP-Referer": "https://github.com/seriora/seri-lsp",
        "X-Title": "seri",
    }
    if settings.api_key:
        sent["Authorization"] = f"Bearer {settings.api_key}"
    return sent


def request_body(
    settings: ProviderSettings,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None,
    *,
    session: str | None = None,
    mark: bool = False,
) -> dict[str, Any]:
    """The exact JSON body sent for a completion. `session` names the seri session on
    OpenRouter (its routing then stays with the provider that holds the cache); `mark`
    puts the prompt-cache breakpoint on the last tool (the messages' breakpoints are
    `BodyEncoder`'s)."""
    body: dict[str, Any] = {"model": settings.model, "messages": list(messages)}
    if tools:
        body["tools"] = marked_tools(tools, marker(settings)) if mark else list(tools)
    body.update(settings.sampling)
    openrouter = is_openrouter(settings.base_url)
    if settings.reasoning_effort:
        if openrouter:
            body["reasoning"] = {"effort": settings.reasoning_effort}
        else:
            body["reasoning_effort"] = settings.reasoning_effort
    if settings.provider is not None:
        body["provider"] = settings.provider
    if openrouter and session is not None:
        body["session_id"] = session
    body["stream"] = settings.stream
    if settings.stream:
        body["stream_options"] = {"include_usage": True}
    return body


class BodyEncoder:
    """Encodes `request_body` for one provider configuration, keeping what surrounds the
    messages for each set of tools and session."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        # Encoded request bodies around their messages, by the tools offered, the
        # session named and whether the breakpoints are marked.
        self._frames: dict[tuple[Any, ...], tuple[bytes, bytes, tuple[Any, ...]]] = {}
        # The last system message marked: (as given, marked), for it is the same on
        # every call of a session.
        self._system: tuple[bytes, bytes] | None = None

    def encode(
        self,
        messages: Sequence[dict[str, Any] | bytes],
        tools: Sequence[dict[str, Any]] | None,
        *,
        session: str | None = None,
        mark: bool = False,
    ) -> bytes:
        """The body `request_body` describes, encoded as compact UTF-8 JSON. A message
        given as bytes is already encoded. With `mark`, the prompt-cache breakpoints go
        on the last tool, the system message and the newest message (see `cache.py`)."""
        key = (tuple(id(tool) for tool in tools or ()), session, mark)
        frame = self._frames.get(key)
        if frame is None:
            encoded = request_json(
                request_body(self.settings, [], tools, session=session, mark=mark)
            )
            marker_bytes = b'"messages":[]'
            assert encoded.count(marker_bytes) == 1
            head, tail = encoded.split(marker_bytes)
            if len(self._frames) >= _MAX_FRAMES:
                self._frames.clear()
            # The tools are kept with their frame, so no other object can take their ids.
            frame = (head + b'"messages":[', b"]" + tail, tuple(tools or ()))
            self._frames[key] = frame
        pieces = [m if isinstance(m, bytes) else request_json(m) for m in messages]
        if mark:
            self._mark(messages, pieces)
        return b"".join((frame[0], b",".join(pieces), frame[1]))

    def _mark(self, messages: Sequence[dict[str, Any] | bytes], pieces: list[bytes]) -> None:
        """Put the breakpoints on the system message and the newest message that has
        text (in `pieces`, the encoded `messages`)."""
        mark = marker(self.settings)
        first = 0
        if pieces and self._system is not None and self._system[0] == pieces[0]:
            pieces[0], first = self._system[1], 1
        elif pieces and _message(messages[0]).get("role") == "system":
            marked = marked_message(_message(messages[0]), mark)
            self._system = (pieces[0], pieces[0] if marked is None else request_json(marked))
            pieces[0], first = self._system[1], 1
        for index in range(len(pieces) - 1, first - 1, -1):
            marked = marked_message(_message(messages[index]), mark)
            if marked is not None:
                pieces[index] = request_json(marked)
                return


def _message(message: dict[str, Any] | bytes) -> dict[str, Any]:
    """A message as a dict (decoded when given encoded)."""
    return json.loads(message) if isinstance(message, bytes) else message
