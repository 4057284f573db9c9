"""A small HTTP/1.1 client on asyncio streams, for the one endpoint a provider talks to.

The model provider makes one request per turn to one origin and reads a stream of
server-sent events from it. A general-purpose client spends more of a turn on its own
layers (URL and header models, protocol state machines, a compatibility layer over event
loops) than seri spends on everything else; this one does what that request needs and
nothing more, on the event loop's own streams:

- one keep-alive connection per concurrent request, kept in a small pool and reused;
  an idle connection the server has closed (or one idle longer than KEEP_ALIVE_SECONDS)
  is never reused;
- replies framed by Content-Length, chunked transfer coding, or the end of the
  connection (then the connection is not reused); gzip and deflate bodies are
  decoded, though `Accept-Encoding: identity` asks for none;
- TLS with the system's certificate store (`SSL_CERT_FILE` / `SSL_CERT_DIR` honoured)
  plus certifi's bundle when it is installed;
- the proxy the environment names (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, with
  `NO_PROXY` read as curl reads it; loopback never goes through one), an `http://`
  proxy or an `https://` one (TLS to the proxy itself): a CONNECT tunnel for https
  (TLS inside the proxy's TLS, for an https proxy), the absolute URL for http,
  `user:password@` in the proxy URL as Basic proxy authorization.

Timeouts other than connecting are the caller's (`asyncio.timeout` around the call).
Every failure is an `HttpError` subclass whose message says what happened in words.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import socket
import ssl
import time
import urllib.request
import zlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

# An idle connection older than this is closed rather than reused: servers close theirs
# after a few seconds of quiet, and a request must not race that close.
KEEP_ALIVE_SECONDS = 5.0
MAX_IDLE_CONNECTIONS = 8
# A reply's head (status line and headers), and a body read whole, are at most this big.
MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
_READ_SIZE = 64 * 1024
# Characters a URL's path and query keep as they are (the rest is percent-encoded).
_URL_SAFE = "/%:@!$&'()*+,;=-._~"


class HttpError(Exception):
    """A request that could not be made or whose reply could not be read."""


class BadUrl(HttpError):
    """The URL is not one this client can call (http:// or https:// with a host)."""


class BadHeader(HttpError):
    """A header name or value cannot be carried in HTTP (not plain ASCII, or a line break)."""


class ConnectFailed(HttpError):
    """No connection: the name does not resolve, the server refuses, TLS fails, a proxy
    refuses the tunnel."""


class ConnectTimedOut(ConnectFailed):
    """No connection within the connect timeout."""


class ConnectionLost(HttpError):
    """The connection closed or broke, or the server broke the protocol, mid-exchange."""


@dataclass(frozen=True)
class Origin:
    """Where requests go: scheme, host and port, and the path they all start with."""

    scheme: str
    host: str
    port: int
    base_path: str
    query: str

    @classmethod
    def parse(cls, url: str) -> Origin:
        """The origin of an http(s) URL; BadUrl for anything else."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise BadUrl(str(exc)) from exc
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise BadUrl(f"unsupported scheme {parts.scheme!r}" if scheme else "no scheme")
        host = parts.hostname
        if not host:
            raise BadUrl("no host")
        if not host.isascii():  # an internationalised name goes out in its ASCII form
            try:
                host = host.encode("idna").decode("ascii")
            except UnicodeError as exc:
                raise BadUrl(f"the host name {host!r} is not a valid name") from exc
        # What the URL holds beyond ASCII (or spaces) goes out percent-encoded.
        path = quote(parts.path.rstrip("/"), safe=_URL_SAFE)
        default = 443 if scheme == "https" else 80
        return cls(scheme, host, port or default, path, quote(parts.query, safe=_URL_SAFE + "?"))

    @property
    def authority(self) -> str:
        """host[:port] as the Host header spells it (no port when it is the default)."""
        default = 443 if self.scheme == "https" else 80
        return self._host if self.port == default else self.address

    @property
    def address(self) -> str:
        """host:port as a CONNECT line spells it."""
        return f"{self._host}:{self.port}"

    @property
    def _host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    def target(self, path: str) -> str:
        """The request target (origin form) of `path`, relative to the base path."""
        target = f"{self.base_path}/{path.lstrip('/')}"
        return f"{target}?{self.query}" if self.query else target


@dataclass(frozen=True)
class Proxy:
    """An http:// or https:// proxy, and the Proxy-Authorization it wants (if any)."""

    origin: Origin
    authorization: str | None

    @classmethod
    def for_origin(cls, origin: Origin) -> Proxy | None:
        """The proxy the environment (or the system's settings, on macOS and Windows)
        names for `origin`, if any and not bypassed."""
        proxies = urllib.request.getproxies()
        url = proxies.get(origin.scheme) or proxies.get("all")
        if not url or bypasses_proxy(origin.host, proxies.get("no", "")):
            return None
        if "://" not in url:
            url = "http://" + url
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https"):
            raise ConnectFailed(
                f"the proxy {parts.scheme}://{parts.hostname} from the environment is not an "
                "http:// or https:// proxy; seri speaks to those only"
            )
        authorization = None
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
        return cls(Origin.parse(url), authorization)


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


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None


class Connection:
    """One open connection and the streams over it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def usable(self, now: float) -> bool:
        """Whether an idle connection may take another request."""
        return (
            not self.writer.transport.is_closing()
            and not self.reader.at_eof()
            and now - self.idle_since < KEEP_ALIVE_SECONDS
        )

    def close(self) -> None:
        """Close without waiting (safe while a task is being cancelled)."""
        self.writer.transport.abort()


class Response:
    """A reply's status and headers; its body read as it arrives, once."""

    def __init__(self, status: int, headers: dict[str, str], body: _Body) -> None:
        self.status_code = status
        self.headers = headers  # names in lower case; repeated headers joined with ", "
        self._body = body

    async def aread(self) -> bytes:
        """The whole body (at most MAX_BODY_BYTES)."""
        parts: list[bytes] = []
        size = 0
        async for data in self._body.chunks():
            size += len(data)
            if size > MAX_BODY_BYTES:
                raise ConnectionLost(f"the reply's body is over {MAX_BODY_BYTES} bytes")
            parts.append(data)
        return b"".join(parts)

    async def aiter_lines(self) -> AsyncIterator[str]:
        """The body's lines (ended by LF, CRLF or CR, as server-sent events are), each
        decoded as UTF-8 with undecodable bytes replaced, without its line break."""
        held: list[bytes] = []  # the start of a line not yet ended
        async for data in self._body.chunks():
            if b"\n" not in data and b"\r" not in data:
                held.append(data)
                continue
            if held:
                held.append(data)
                data, held = b"".join(held), []
            lines = data.splitlines(keepends=True)
            last = lines[-1]
            # A line not yet ended waits; so does one ended by CR, the LF may follow.
            if last.endswith(b"\r") or not last.endswith(b"\n"):
                held.append(lines.pop())
            for line in lines:
                yield line.rstrip(b"\r\n").decode("utf-8", "replace")
        for line in b"".join(held).splitlines():
            yield line.decode("utf-8", "replace")


class _Body:
    """Reads one reply's body off its connection, framed as the headers say."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        *,
        length: int | None,
        chunked: bool,
        encoding: str,
    ) -> None:
        self._reader = reader
        self._length = length
        self._chunked = chunked
        self.complete = False
        self._started = False
        self._decoder = (
            zlib.decompressobj(zlib.MAX_WBITS | 32) if encoding in ("gzip", "deflate") else None
        )

    async def chunks(self) -> AsyncIterator[bytes]:
        if self._started:
            raise HttpError("the reply's body was already read")
        self._started = True
        try:
            async for data in self._raw():
                if self._decoder is not None:
                    data = self._decoder.decompress(data)
                if data:
                    yield data
            if self._decoder is not None and (rest := self._decoder.flush()):
                yield rest
        except zlib.error as exc:
            raise ConnectionLost(f"the reply's compressed body is corrupt ({exc})") from exc
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError) as exc:
            raise ConnectionLost(_lost(exc)) from exc
        self.complete = True

    async def _raw(self) -> AsyncIterator[bytes]:
        reader = self._reader
        if self._chunked:
            while True:
                size = _chunk_size(await reader.readuntil(b"\n"))
                if size == 0:
                    while (await reader.readuntil(b"\n")).strip():  # trailers
                        pass
                    return
                while size:
                    data = await reader.read(min(size, _READ_SIZE))
                    if not data:
                        raise ConnectionLost("the connection closed in the middle of a chunk")
                    size -= len(data)
                    yield data
                if (await reader.readexactly(2)) != b"\r\n":
                    raise ConnectionLost("a chunk of the reply did not end where it said")
        elif self._length is not None:
            left = self._length
            while left:
                data = await reader.read(min(left, _READ_SIZE))
                if not data:
                    raise ConnectionLost(
                        f"the connection closed {left} bytes before the end of the reply"
                    )
                left -= len(data)
                yield data
        else:
            while data := await reader.read(_READ_SIZE):
                yield data


class HttpClient:
    """Requests to one origin, over kept-alive connections."""

    def __init__(
        self, base_url: str, *, headers: Mapping[str, str], connect_timeout: float
    ) -> None:
        self.origin = Origin.parse(base_url)
        self.connect_timeout = connect_timeout
        self._headers = _encode_headers(headers)
        self._idle: list[Connection] = []
        # A proxy setting that cannot be used fails the first connection, not this.
        self._proxy: Proxy | None = None
        self._proxy_problem: HttpError | None = None
        try:
            self._proxy = Proxy.for_origin(self.origin)
        except HttpError as exc:
            self._proxy_problem = exc
        self._tls: ssl.SSLContext | None = None
        self.connections_opened = 0

    @contextlib.asynccontextmanager
    async def stream(
        self,
        method: str,
        path: str,
        *,
        content: bytes = b"",
        headers: Mapping[str, str] | None = None,
    ) -> AsyncIterator[Response]:
        """Send a request; the reply's head is read, its body left to the caller.

        The connection goes back to the pool when the body was read to its end and the
        server keeps it open; otherwise it is closed on leaving the block.
        """
        request = self._request(method, path, content, headers or {})
        connection, response, body = await self._exchange(request)
        try:
            yield response
        except BaseException:
            connection.close()
            raise
        if body.complete and response.headers.get("connection", "").lower() != "close":
            self._release(connection)
        else:
            connection.close()

    async def request(
        self, method: str, path: str, *, headers: Mapping[str, str] | None = None
    ) -> tuple[Response, bytes]:
        """Send a request without a body and read the whole reply."""
        async with self.stream(method, path, headers=headers) as response:
            return response, await response.aread()

    async def aclose(self) -> None:
        """Close the idle connections (those in use close when their block ends)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    # --- one exchange ----------------------------------------------------------------

    def _request(self, method: str, path: str, content: bytes, extra: Mapping[str, str]) -> bytes:
        origin = self.origin
        target = origin.target(path)
        if self._proxy is not None and origin.scheme == "http":
            target = f"http://{origin.authority}{target}"  # a proxy wants the whole URL
        lines = [f"{method} {target} HTTP/1.1", f"Host: {origin.authority}"]
        head = "\r\n".join(lines).encode("ascii") + b"\r\n" + self._headers
        head += _encode_headers(extra)
        if self._proxy is not None and origin.scheme == "http" and self._proxy.authorization:
            head += _encode_headers({"Proxy-Authorization": self._proxy.authorization})
        if content or method in ("POST", "PUT", "PATCH"):
            head += f"Content-Length: {len(content)}\r\n".encode("ascii")
        return head + b"\r\n" + content

    async def _exchange(self, request: bytes) -> tuple[Connection, Response, _Body]:
        connection = self._take() or await self._connect()
        try:
            connection.writer.write(request)
            await connection.writer.drain()
            status, headers = await _read_head(connection.reader)
            length, chunked = _framing(status, headers)
            body = _Body(
                connection.reader,
                length=length,
                chunked=chunked,
                encoding=headers.get("content-encoding", "").strip().lower(),
            )
        except BaseException as exc:
            connection.close()
            if isinstance(exc, OSError):
                raise ConnectionLost(_lost(exc)) from exc
            raise
        return connection, Response(status, headers, body), body

    def _take(self) -> Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if connection.usable(now):
                return connection
            connection.close()
        return None

    def _release(self, connection: Connection) -> None:
        connection.idle_since = time.monotonic()
        self._idle.append(connection)
        while len(self._idle) > MAX_IDLE_CONNECTIONS:
            self._idle.pop(0).close()

    async def _connect(self) -> Connection:
        if self._proxy_problem is not None:
            raise self._proxy_problem
        # The first hop is the proxy when there is one (TLS to it when it is an https://
        # proxy), else the origin; https through a proxy is TLS inside a CONNECT tunnel.
        hop = self._proxy.origin if self._proxy is not None else self.origin
        tunnel = self._proxy is not None and self.origin.scheme == "https"
        tls = await self._tls_context() if hop.scheme == "https" else None
        try:
            async with asyncio.timeout(self.connect_timeout):
                try:
                    reader, writer = await asyncio.open_connection(
                        hop.host,
                        hop.port,
                        ssl=tls,
                        server_hostname=hop.host if tls else None,
                        limit=MAX_HEAD_BYTES,
                        # A host with an address family that does not get through (IPv6
                        # on many networks) must not use up the connect timeout.
                        happy_eyeballs_delay=0.25,
                    )
                except OSError as exc:  # ssl.SSLError is one
                    via_proxy = self._proxy is not None
                    raise ConnectFailed(_refused(exc, hop, via_proxy=via_proxy)) from exc
                connection = Connection(reader, writer)
                if tunnel:
                    await self._tunnel(connection)
        except TimeoutError as exc:
            raise ConnectTimedOut(f"no connection within {self.connect_timeout:g} seconds") from exc
        self.connections_opened += 1
        return connection

    async def _tunnel(self, connection: Connection) -> None:
        """Ask the proxy for a tunnel to the origin, then speak TLS through it."""
        assert self._proxy is not None
        address = self.origin.address
        head = f"CONNECT {address} HTTP/1.1\r\nHost: {address}\r\n".encode("ascii")
        if self._proxy.authorization:
            head += _encode_headers({"Proxy-Authorization": self._proxy.authorization})
        try:
            connection.writer.write(head + b"\r\n")
            await connection.writer.drain()
            status, _ = await _read_head(connection.reader)
            if not 200 <= status < 300:
                raise ConnectFailed(
                    f"the proxy at {self._proxy.origin.authority} refused the tunnel "
                    f"(HTTP {status})"
                )
            tls = await self._tls_context()
            await connection.writer.start_tls(tls, server_hostname=self.origin.host)
        except ssl.SSLError as exc:  # TLS with the origin, through the tunnel
            connection.close()
            raise ConnectFailed(_refused(exc, self.origin, via_proxy=False)) from exc
        except (ConnectionLost, OSError) as exc:
            connection.close()
            reason = str(exc) if isinstance(exc, ConnectionLost) else _lost(exc)
            raise ConnectFailed(
                f"the tunnel through the proxy at {self._proxy.origin.authority} failed ({reason})"
            ) from exc
        except BaseException:
            connection.close()
            raise

    async def _tls_context(self) -> ssl.SSLContext:
        """The TLS settings, made at the first https connection on a thread of its own
        (loading the certificate stores reads files)."""
        if self._tls is None:
            self._tls = await asyncio.to_thread(_make_tls_context)
        return self._tls


def _make_tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()
    with contextlib.suppress(ImportError, OSError, ssl.SSLError):
        import certifi

        context.load_verify_locations(certifi.where())
    context.set_alpn_protocols(["http/1.1"])
    return context


# --- the wire format ---------------------------------------------------------------------


def _encode_headers(headers: Mapping[str, str]) -> bytes:
    lines = []
    for name, value in headers.items():
        if not _is_token(name):
            raise BadHeader(f"the header name {name!r} is not a valid HTTP header name")
        if not all(" " <= char <= "~" or char == "\t" for char in value):
            raise BadHeader(
                f"the {name} header holds characters an HTTP header cannot carry "
                "(only plain ASCII text, no line breaks)"
            )
        lines.append(f"{name}: {value}\r\n")
    return "".join(lines).encode("ascii")


def _is_token(name: str) -> bool:
    return bool(name) and all(
        char.isascii() and (char.isalnum() or char in "!#$%&'*+-.^_`|~") for char in name
    )


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    """The status and headers of the next reply on `reader` (1xx interim replies skipped)."""
    while True:
        try:
            status_line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                raise ConnectionLost("nothing came back before the connection closed") from exc
            raise ConnectionLost(_lost(exc)) from exc
        except asyncio.LimitOverrunError as exc:
            raise ConnectionLost(_lost(exc)) from exc
        try:
            version, status_text = status_line.decode("latin-1").split(None, 2)[:2]
            status = int(status_text)
        except ValueError:
            status, version = 0, ""
        if not version.startswith("HTTP/1.") or not 100 <= status <= 599:
            raise ConnectionLost(f"the server's reply is not HTTP ({status_line[:60]!r})")
        headers: dict[str, str] = {}
        size = len(status_line)
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                raise ConnectionLost(_lost(exc)) from exc
            size += len(line)
            if size > MAX_HEAD_BYTES:
                raise ConnectionLost(f"the reply's headers are over {MAX_HEAD_BYTES} bytes")
            text = line.decode("latin-1").strip()
            if not text:
                break
            name, colon, value = text.partition(":")
            if not colon:
                raise ConnectionLost(f"the reply holds a malformed header ({text[:60]!r})")
            key = name.strip().lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        if status >= 200:
            if version == "HTTP/1.0" and headers.get("connection", "").lower() != "keep-alive":
                headers["connection"] = "close"
            return status, headers


def _framing(status: int, headers: dict[str, str]) -> tuple[int | None, bool]:
    """How the reply's body ends: (its length, whether it is chunked); neither (None,
    False) when it ends with the connection."""
    if status in (204, 304):
        return 0, False
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return None, True
    value = headers.get("content-length")
    if value is None:
        return None, False
    try:
        # Repeated identical lengths ("12, 12") are one length.
        lengths = {int(part) for part in value.split(",")}
    except ValueError:
        lengths = set()
    if len(lengths) != 1 or min(lengths) < 0:
        raise ConnectionLost(f"the reply's Content-Length is not a length ({value[:40]!r})")
    return lengths.pop(), False


def _chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip()
    try:
        size = int(text, 16)
    except ValueError:
        size = -1
    if size < 0 or not text:
        raise ConnectionLost(f"the reply's chunked body is malformed ({line[:40]!r})")
    return size


def _lost(exc: BaseException) -> str:
    if isinstance(exc, asyncio.IncompleteReadError):
        return "the connection closed early"
    if isinstance(exc, asyncio.LimitOverrunError):
        return "a line of the reply is too long"
    if isinstance(exc, ConnectionResetError):
        return "the connection was reset"
    if isinstance(exc, BrokenPipeError):
        return "the connection closed while the request was sent"
    return str(exc).strip() or type(exc).__name__


def _refused(exc: OSError, hop: Origin, *, via_proxy: bool) -> str:
    where = f"the proxy at {hop.authority}" if via_proxy else hop.authority
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"the TLS certificate of {where} is not trusted ({exc.verify_message})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS with {where} failed ({exc.reason or exc})"
    if isinstance(exc, ConnectionRefusedError):
        return f"{where} refused the connection"
    if isinstance(exc, socket.gaierror):
        name = f"the proxy's name {hop.host}" if via_proxy else f"the name {hop.host}"
        return f"{name} could not be resolved ({exc.strerror or exc})"
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{where}: {reason}"
