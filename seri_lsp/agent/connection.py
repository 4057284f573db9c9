"""The provider's HTTP client: one `httpx.AsyncClient`, set up as seri promises.

- **Kept alive**: one client per provider configuration serves every call of every task;
  an idle connection is dropped after KEEP_ALIVE_SECONDS, less than the 5 s after which
  common gateways (uvicorn, Node) close theirs, so a call rarely races that close (and a
  call that does is retried, see `provider/retry.py`).
- **Proxies** from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, upper or
  lower case; on macOS and Windows the system's settings when the environment names
  none): `http://`, `https://` (TLS to the proxy, its certificate checked like a
  server's), and `socks5://` / `socks5h://` through httpx's SOCKS extra. `NO_PROXY` is
  read as curl reads it (networks such as `10.0.0.0/8` included), and this machine's own
  names and addresses never go through a proxy.
- **TLS** (`tls.py`): the operating system's trust store through truststore (as pip
  does), so a company's authority installed in the system is trusted; `SSL_CERT_FILE`
  and `SSL_CERT_DIR` add theirs, and certifi's bundle is trusted too.

The provider speaks HTTP only through the client made here; its TLS settings come from
`tls.py`.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from seri_lsp.agent.tls import tls_context, tls_failure

# Shorter than the 5 s idle timeout of uvicorn and Node's http server.
KEEP_ALIVE_SECONDS = 4.0
# A host name's parts (RFC 1035): each label 1 to 63 characters, the name at most 253.
_MAX_LABEL = 63
_MAX_NAME = 253


class BadBaseUrl(ValueError):
    """The base URL cannot be called; the message says why, in words."""


class BadProxy(ValueError):
    """The environment names a proxy seri cannot use; the message says why."""


@dataclass(frozen=True)
class Target:
    """Where the provider's requests go, checked: the base URL and its host."""

    url: httpx.URL
    host: str
    params: httpx.QueryParams

    @classmethod
    def parse(cls, base_url: str) -> Target:
        """The base URL as httpx will call it; BadBaseUrl when it cannot be called."""
        try:
            url = httpx.URL(base_url.strip())
        except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
            raise BadBaseUrl(str(exc) or "it cannot be parsed") from exc
        if url.scheme not in ("http", "https"):
            raise BadBaseUrl("it must start with http:// or https://")
        host = url.host
        if not host:
            raise BadBaseUrl("it names no host")
        if url.port is not None and not 0 < url.port < 65536:
            raise BadBaseUrl(f"the port {url.port} is not a port number (1 to 65535)")
        if _address(host) is None:
            problem = host_name_problem(url.raw_host.decode("ascii", "replace"))
            if problem is not None:
                raise BadBaseUrl(problem)
        # Every call's path is relative to the base URL's (httpx joins them), and the
        # base URL's query (`?api-version=...`) goes with every call.
        base = url.copy_with(path=url.path.rstrip("/") + "/", query=None)
        return cls(base, host, url.params)


def host_name_problem(name: str) -> str | None:
    """Why a (punycode) host name cannot be looked up, or None when it can."""
    labels = name.rstrip(".").split(".")
    if len(name.rstrip(".")) > _MAX_NAME:
        return f"the host name is longer than {_MAX_NAME} characters"
    for label in labels:
        if not label:
            return f"the host name {name!r} has an empty part (two dots in a row, or a dot first)"
        if len(label) > _MAX_LABEL:
            return (
                f"the host name part {label[:20]}... is {len(label)} characters long "
                f"(at most {_MAX_LABEL})"
            )
    return None


@dataclass(frozen=True)
class Client:
    """The httpx client of one provider configuration, and where it connects (host:port
    of the provider, and of the proxy when there is one), for messages."""

    http: httpx.AsyncClient
    origin: str
    proxy: str | None


def make_client(
    base_url: str,
    *,
    headers: Mapping[str, str],
    connect_timeout: float,
    environ: Mapping[str, str] = os.environ,
) -> Client:
    """The client for one provider configuration (BadBaseUrl, BadProxy when it cannot be
    made). It reads certificate files: call it off the event loop."""
    target = Target.parse(base_url)
    tls = tls_context(environ)
    proxy_url = proxy_for(target)
    proxy = None
    if proxy_url is not None:
        try:
            # TLS to an https:// proxy trusts what TLS to the provider trusts.
            https = proxy_url.lower().startswith("https://")
            proxy = httpx.Proxy(proxy_url, ssl_context=tls if https else None)
        except (httpx.InvalidURL, ValueError) as exc:
            raise BadProxy(
                f"the proxy {_shown(proxy_url)} named in the environment is not one seri can "
                "use (it must be an http://, https://, socks5:// or socks5h:// URL)"
            ) from exc
    http = httpx.AsyncClient(
        base_url=target.url,
        params=target.params,
        headers=dict(headers),
        verify=tls,
        proxy=proxy,
        # The environment was read above, once; netrc is not for model APIs.
        trust_env=False,
        # Only connecting has its own limit; the caller bounds each whole call.
        timeout=httpx.Timeout(None, connect=connect_timeout),
        limits=httpx.Limits(keepalive_expiry=KEEP_ALIVE_SECONDS),
    )
    return Client(http, _authority(target.url), _authority(proxy.url) if proxy else None)


def proxy_for(target: Target) -> str | None:
    """The proxy URL the environment (or the system) names for `target`, unless it is
    bypassed."""
    proxies = urllib.request.getproxies()
    url = proxies.get(target.url.scheme) or proxies.get("all")
    if not url or bypasses_proxy(target.host, proxies.get("no", "")):
        return None
    return url if "://" in url else "http://" + url


def bypasses_proxy(host: str, no_proxy: str) -> bool:
    """Whether requests to `host` go straight, not through the proxy.

    This machine's own names and addresses (localhost, 127.0.0.0/8, ::1) always do: a
    proxy cannot reach them. Otherwise `NO_PROXY` decides, read as curl reads it: `*`
    for every host; a name for itself and the names below it (`example.com` and
    `.example.com` both cover `api.example.com`); an address; a network (`10.0.0.0/8`).
    A `:port` after a name or an IPv4 address is ignored.
    """
    host = host.lower().rstrip(".")
    address = _address(host)
    if host == "localhost" or host.endswith(".localhost"):
        return True
    if address is not None and address.is_loopback:
        return True
    for entry in no_proxy.lower().split(","):
        entry = entry.strip()
        if entry == "*":
            return True
        if entry.startswith("["):  # [IPv6] or [IPv6]:port
            entry = entry[1:].partition("]")[0]
        elif entry.count(":") == 1:  # name:port or IPv4:port
            entry = entry.partition(":")[0]
        entry = entry.lstrip("*").lstrip(".").rstrip(".")
        if not entry:
            continue
        if "/" in entry:
            try:
                network = ipaddress.ip_network(entry, strict=False)
            except ValueError:
                continue
            if address is not None and address in network:
                return True
        elif (entry_address := _address(entry)) is not None:
            if address == entry_address:
                return True
        elif host == entry or host.endswith("." + entry):
            return True
    return False


def connect_failure(exc: BaseException, target: str, proxy: str | None) -> tuple[str, bool]:
    """Why a connection could not be made, in words, and whether trying again may help
    (not for a certificate or TLS problem). `target` is host:port, `proxy` the proxy in
    use (if any)."""
    cause = _root_cause(exc)
    tls = tls_failure(cause, f"{target} or the proxy at {proxy}" if proxy else target)
    if tls is not None:
        return tls, False
    if isinstance(cause, ConnectionRefusedError):
        return f"{proxy or target} refused the connection", True
    if isinstance(cause, OSError) and type(cause).__name__ == "gaierror":
        name = (proxy or target).rsplit(":", 1)[0]
        return f"the name {name} could not be resolved ({cause.strerror or cause})", True
    text = str(exc).strip() or str(cause).strip()
    return text or type(exc).__name__, True


def _root_cause(exc: BaseException) -> BaseException:
    seen = {id(exc)}
    while True:
        following = exc.__cause__ or exc.__context__
        if following is None or id(following) in seen:
            return exc
        seen.add(id(following))
        exc = following


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


def _authority(url: httpx.URL) -> str:
    """host:port of a URL (the scheme's port when it names none)."""
    port = url.port or {"https": 443, "http": 80, "socks5": 1080, "socks5h": 1080}[url.scheme]
    host = url.host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _shown(url: str) -> str:
    """A proxy URL without its password."""
    scheme, sep, rest = url.partition("://")
    if "@" in rest:
        rest = rest.rpartition("@")[2]
    return f"{scheme}{sep}{rest}"
