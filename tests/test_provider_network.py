"""The provider's network as the README promises it, through httpx, against real servers
on 127.0.0.1: proxies (http, https, SOCKS, NO_PROXY, credentials), certificates (the
system's store, SSL_CERT_FILE, SSL_CERT_DIR, untrusted ones named), and bounded reads.

Each server here is a few lines of asyncio that answers exactly as written. Origins are
named `origin.test`: a proxy reaches every name at 127.0.0.1, and seri never sends a
loopback address through a proxy.
"""

from __future__ import annotations

import asyncio
import base64
import shutil
import ssl
import struct
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from seri_lsp.agent.connection import Target, bypasses_proxy, proxy_for
from seri_lsp.agent.provider import MalformedReply, Provider, ProviderUnreachable, RetryNotice
from seri_lsp.agent.provider import reply as provider_module
from seri_lsp.settings import load_settings

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """An asyncio server on 127.0.0.1 that runs `handler` for each connection."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.connections = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> Server:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
                pass
            finally:
                writer.close()

        self._server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()

    def url(self, host: str = "127.0.0.1") -> str:
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/v1"

    async def read_request(
        self, reader: asyncio.StreamReader
    ) -> tuple[str, dict[str, str], bytes] | None:
        """One request off `reader` (None when the client closed the connection)."""
        line = await reader.readline()
        if not line:
            return None
        headers: dict[str, str] = {}
        while (header := (await reader.readline()).decode().strip()) != "":
            name, _, value = header.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        request = (line.decode().strip(), headers, body)
        self.requests.append(request)
        return request


def chunked(*pieces: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


EVENTS = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    + chunked(
        b'data: {"choices": [{"delta": {"content": "caf\xc3',
        b'\xa9"}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n',
    )
)


def keep_alive_server(reply: bytes = EVENTS, tls: ssl.SSLContext | None = None) -> Server:
    """Answers every request on a connection with `reply`, keeping it open."""

    async def answer_each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await server.read_request(reader) is not None:
            writer.write(reply)
            await writer.drain()

    server = Server(answer_each, tls=tls)
    return server


def make_provider(tmp_path: Path, base_url: str, **extra: Any) -> Provider:
    options = {
        "provider": {
            "baseUrl": base_url,
            "apiKey": "k",
            "contextWindow": 1000,
            "maxRetries": 2,
            "retryBaseDelay": 0.01,
            **extra,
        }
    }
    settings, problems = load_settings(tmp_path, options)
    assert not problems, problems
    return Provider(settings.provider)


async def ask(provider: Provider, times: int = 1) -> list[str]:
    """`times` calls, the provider closed after them; their replies' text."""
    try:
        return [
            (await provider.complete([{"role": "user", "content": "hi"}])).content
            for _ in range(times)
        ]
    finally:
        await provider.aclose()


def use_proxy(monkeypatch: pytest.MonkeyPatch, name: str, url: str, no_proxy: str = "") -> None:
    """Only `name` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) = url and NO_PROXY = no_proxy in
    the environment, in either case."""
    for variable in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.upper(), raising=False)
    monkeypatch.setenv(name, url)
    monkeypatch.setenv("NO_PROXY", no_proxy)


# --- keep-alive and bounds ------------------------------------------------------------


async def test_calls_share_one_kept_alive_connection(tmp_path: Path) -> None:
    async with keep_alive_server() as server:
        provider = make_provider(tmp_path, server.url())
        assert await ask(provider, times=3) == ["café"] * 3
    assert server.connections == 1
    line, headers, _ = server.requests[0]
    assert line == "POST /v1/chat/completions HTTP/1.1"
    assert headers["authorization"] == "Bearer k"


async def test_the_base_urls_query_and_path_beyond_ascii_go_with_every_call(
    tmp_path: Path,
) -> None:
    async with keep_alive_server() as server:
        url = f"http://127.0.0.1:{server.port}/v1 beta/ü/?api-version=2024-10-21"
        await ask(make_provider(tmp_path, url))
    assert server.requests[0][0] == (
        "POST /v1%20beta/%C3%BC/chat/completions?api-version=2024-10-21 HTTP/1.1"
    )


async def test_a_streamed_line_over_the_limit_ends_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provider_module, "MAX_LINE_BYTES", 64 * 1024)
    endless = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(
        *[b'data: {"choices": [{"delta": {"content": "' + b"x" * 16_000] * 8
    )
    async with keep_alive_server(endless) as server:
        with pytest.raises(MalformedReply, match="line of its reply stream longer than 65,536"):
            await ask(make_provider(tmp_path, server.url()))


async def test_a_whole_reply_over_the_limit_ends_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provider_module, "MAX_BODY_BYTES", 1024)
    body = b'{"choices": [{"message": {"content": "' + b"x" * 4096 + b'"}}]}'
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    async with keep_alive_server(reply) as server:
        provider = make_provider(tmp_path, server.url(), stream=False)
        with pytest.raises(MalformedReply, match="larger than 1,024 bytes"):
            await ask(provider)


# --- proxies --------------------------------------------------------------------------


class Proxy:
    """An HTTP proxy: forwards absolute-form requests, and tunnels CONNECT, to any name
    as if it were 127.0.0.1."""

    def __init__(self, *, password: str | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.password = password
        self.seen: list[str] = []
        self.server = Server(self.handle, tls=tls)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await self.server.read_request(reader)
        assert request is not None
        line, headers, body = request
        self.seen.append(line)
        if self.password is not None:
            expected = "Basic " + base64.b64encode(f"me:{self.password}".encode()).decode()
            if headers.get("proxy-authorization") != expected:
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
                await writer.drain()
                return
        method, target, _ = line.split()
        _, port = (target.split("/")[2] if method != "CONNECT" else target).rsplit(":", 1)
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", int(port))
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            path = "/" + target.split("/", 3)[3]
            head = f"{method} {path} HTTP/1.1\r\n" + "".join(
                f"{name}: {value}\r\n" for name, value in headers.items()
            )
            upstream_writer.write(head.encode() + b"\r\n" + body)
        await writer.drain()
        await pipe_both(reader, writer, upstream_reader, upstream_writer)


class SocksProxy:
    """A SOCKS5 proxy without authentication that reaches every name at 127.0.0.1."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.server = Server(self.handle)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        version, count = await reader.readexactly(2)
        await reader.readexactly(count)  # the methods offered
        writer.write(b"\x05\x00")  # no authentication
        _, command, _, kind = await reader.readexactly(4)
        assert (version, command) == (5, 1)  # CONNECT
        if kind == 3:  # a name
            (length,) = await reader.readexactly(1)
            host = (await reader.readexactly(length)).decode()
        else:
            host = "address"
            await reader.readexactly(4 if kind == 1 else 16)
        (port,) = struct.unpack("!H", await reader.readexactly(2))
        self.seen.append(f"{host}:{port}")
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"\x05\x00\x00\x01\x7f\x00\x00\x01" + struct.pack("!H", port))
        await writer.drain()
        await pipe_both(reader, writer, upstream_reader, upstream_writer)


async def pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
        sink.close()

    await asyncio.gather(
        pipe(reader, upstream_writer), pipe(upstream_reader, writer), return_exceptions=True
    )


async def test_an_http_proxy_from_the_environment_carries_the_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = Proxy(password="p@ss")
    async with keep_alive_server() as origin, proxy.server:
        use_proxy(monkeypatch, "HTTP_PROXY", f"http://me:p%40ss@127.0.0.1:{proxy.server.port}")
        provider = make_provider(tmp_path, origin.url("origin.test"))
        assert await ask(provider, times=2) == ["café", "café"]
    # One connection to the proxy carried both calls (the proxy reads only the first).
    assert proxy.seen == [f"POST http://origin.test:{origin.port}/v1/chat/completions HTTP/1.1"]
    assert origin.requests[0][0] == "POST /v1/chat/completions HTTP/1.1"


async def test_a_socks_proxy_from_the_environment_carries_the_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    socks = SocksProxy()
    async with keep_alive_server() as origin, socks.server:
        use_proxy(monkeypatch, "ALL_PROXY", f"socks5://127.0.0.1:{socks.server.port}")
        assert await ask(make_provider(tmp_path, origin.url("origin.test"))) == ["café"]
    assert socks.seen == [f"origin.test:{origin.port}"]


async def test_this_machines_own_addresses_never_go_through_a_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = Proxy()
    async with keep_alive_server() as origin, proxy.server:
        use_proxy(monkeypatch, "HTTP_PROXY", f"http://127.0.0.1:{proxy.server.port}")
        for host in ("127.0.0.1", "localhost"):
            assert await ask(make_provider(tmp_path, origin.url(host))) == ["café"]
    assert proxy.seen == []
    assert len(origin.requests) == 2


@pytest.mark.parametrize(
    ("base_url", "no_proxy", "proxied"),
    [
        ("https://api.example.com/v1", "", True),
        ("https://api.example.com/v1", "example.com", False),
        ("https://api.example.com/v1", ".example.com", False),
        ("https://api.example.com/v1", "*.example.com", False),
        ("https://notexample.com/v1", "example.com", True),
        ("https://openrouter.ai/api/v1", "openrouter.ai:443", False),
        ("https://openrouter.ai/api/v1", "other.ai, *", False),
        ("http://10.1.2.3:8000/v1", "10.0.0.0/8", False),
        ("http://11.1.2.3:8000/v1", "10.0.0.0/8", True),
        ("http://192.168.1.9/v1", "192.168.1.9", False),
        ("http://192.168.1.9/v1", "192.168.1.10", True),
        ("http://[fd00::5]:8080/v1", "[fd00::5]:8080", False),
        ("http://[fd00::5]:8080/v1", "fd00::/8", False),
        ("http://127.8.9.10:8000/v1", "", False),
        ("http://[::1]:8000/v1", "", False),
        ("http://app.localhost:8000/v1", "", False),
    ],
)
def test_no_proxy_is_read_as_curl_reads_it(
    monkeypatch: pytest.MonkeyPatch, base_url: str, no_proxy: str, proxied: bool
) -> None:
    use_proxy(monkeypatch, "ALL_PROXY", "http://proxy.example:3128", no_proxy)
    target = Target.parse(base_url)
    assert (proxy_for(target) == "http://proxy.example:3128") is proxied
    assert bypasses_proxy(target.host, no_proxy) is not proxied


async def test_a_proxy_of_a_kind_seri_cannot_use_fails_the_call_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_proxy(monkeypatch, "HTTPS_PROXY", "ftp://me:secret@proxy.example:21")
    with pytest.raises(ProviderUnreachable) as failure:
        await ask(make_provider(tmp_path, "https://provider.example/v1"))
    assert str(failure.value) == (
        "Could not reach the provider at https://provider.example/v1: the proxy "
        "ftp://proxy.example:21 named in the environment is not one seri can use (it must "
        "be an http://, https://, socks5:// or socks5h:// URL)."
    )


async def test_a_proxy_that_refuses_the_tunnel_says_so_and_is_not_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = Proxy(password="right")
    async with proxy.server:
        use_proxy(monkeypatch, "HTTPS_PROXY", f"http://me:wrong@127.0.0.1:{proxy.server.port}")
        with pytest.raises(ProviderUnreachable, match=r"refused the connection to origin\.test:9"):
            await ask(make_provider(tmp_path, "https://origin.test:9/v1"))
    assert len(proxy.seen) == 1


# --- TLS ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A certificate authority and a server certificate it signed for 127.0.0.1,
    localhost and origin.test (ca.pem, server.pem, server.key), made with openssl; the
    authority is also in `authorities/` under its hash name, as SSL_CERT_DIR wants."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make test certificates")
    folder = tmp_path_factory.mktemp("tls")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
            "/CN=seri test CA", "-keyout", "ca.key", "-out", "ca.pem",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", "server.key", "-out", "server.csr")  # fmt: skip
    (folder / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:origin.test\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf",
            "-out", "server.pem")  # fmt: skip
    (folder / "authorities").mkdir()
    shutil.copy(folder / "ca.pem", folder / "authorities" / "ca.pem")
    openssl("rehash", "authorities")
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"


def server_tls(certificates: tuple[Path, Path, Path]) -> ssl.SSLContext:
    _, cert, key = certificates
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


@pytest.mark.parametrize("variable", ["SSL_CERT_FILE", "SSL_CERT_DIR"])
async def test_a_company_authority_named_by_the_environment_is_trusted(
    certificates: tuple[Path, Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
) -> None:
    authority = certificates[0]
    monkeypatch.setenv(
        variable,
        str(authority if variable == "SSL_CERT_FILE" else authority.parent / "authorities"),
    )
    async with keep_alive_server(tls=server_tls(certificates)) as server:
        assert await ask(make_provider(tmp_path, server.url()), times=2) == ["café", "café"]
    assert server.connections == 1


async def test_an_untrusted_certificate_is_named_and_not_retried(
    certificates: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(variable, raising=False)
    retries: list[RetryNotice] = []

    async def retried(notice: RetryNotice) -> None:
        retries.append(notice)

    async with keep_alive_server(tls=server_tls(certificates)) as server:
        provider = make_provider(tmp_path, server.url())
        with pytest.raises(ProviderUnreachable) as failure:
            await provider.complete([{"role": "user", "content": "hi"}], on_retry=retried)
        await provider.aclose()
    assert str(failure.value).startswith(
        f"Could not reach the provider at {server.url()}: the TLS certificate of "
        f"127.0.0.1:{server.port} is not trusted ("
    )
    assert "SSL_CERT_FILE" in str(failure.value)
    assert retries == []


@pytest.mark.parametrize("proxy_scheme", ["http", "https"])
async def test_https_through_a_proxy_goes_through_a_tunnel(
    certificates: tuple[Path, Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    proxy_scheme: str,
) -> None:
    """Through an https:// proxy, the provider's TLS runs inside the proxy's."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates[0]))
    tls = server_tls(certificates) if proxy_scheme == "https" else None
    proxy = Proxy(password="secret", tls=tls)
    async with keep_alive_server(tls=server_tls(certificates)) as server, proxy.server:
        proxy_url = f"{proxy_scheme}://me:secret@localhost:{proxy.server.port}"
        use_proxy(monkeypatch, "HTTPS_PROXY", proxy_url)
        provider = make_provider(tmp_path, server.url("origin.test"))
        assert await ask(provider, times=2) == ["café", "café"]
    assert proxy.seen == [f"CONNECT origin.test:{server.port} HTTP/1.1"]
    assert server.connections == 1


async def test_http_through_an_https_proxy_goes_to_the_proxy_over_tls(
    certificates: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates[0]))
    proxy = Proxy(tls=server_tls(certificates))
    async with keep_alive_server() as origin, proxy.server:
        use_proxy(monkeypatch, "HTTP_PROXY", f"https://localhost:{proxy.server.port}")
        assert await ask(make_provider(tmp_path, origin.url("origin.test"))) == ["café"]
    assert proxy.seen == [f"POST http://origin.test:{origin.port}/v1/chat/completions HTTP/1.1"]
