"""seri's HTTP/1.1 client (`seri_lsp.agent.http_client`) against real servers on 127.0.0.1.

Each server here is a few lines of asyncio that answers exactly as written, so the
framings, the failures and the proxies a real provider (or a network in between) may
use are tried byte for byte: chunked and Content-Length and close-delimited bodies,
lines split anywhere, connections closed or kept, an HTTP proxy and a CONNECT tunnel,
TLS with a certificate the client trusts or does not.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from seri_lsp.agent import http_client
from seri_lsp.agent.http_client import (
    BadHeader,
    BadUrl,
    ConnectFailed,
    ConnectionLost,
    HttpClient,
)
from seri_lsp.agent.provider import Provider, ProviderUnreachable
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

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1"

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


async def answer_each(server_ref: list[Server], reply: bytes, reader, writer) -> None:
    """Answer every request on the connection with `reply`, keeping it open."""
    while await server_ref[0].read_request(reader) is not None:
        writer.write(reply)
        await writer.drain()


def keep_alive_server(reply: bytes, tls: ssl.SSLContext | None = None) -> Server:
    ref: list[Server] = []
    server = Server(lambda r, w: answer_each(ref, reply, r, w), tls=tls)
    ref.append(server)
    return server


def one_reply_server(reply: bytes) -> Server:
    """Answers the first request on each connection with `reply`, then closes it."""

    async def answer_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await server.read_request(reader)
        writer.write(reply)
        await writer.drain()

    server = Server(answer_then_close)
    return server


def use_proxy(monkeypatch: pytest.MonkeyPatch, name: str, url: str, no_proxy: str = "") -> None:
    """Only `name` (HTTP_PROXY, HTTPS_PROXY) = url and NO_PROXY = no_proxy in the
    environment, in either case."""
    for variable in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(variable.upper(), raising=False)
    monkeypatch.setenv(name, url)
    monkeypatch.setenv("NO_PROXY", no_proxy)


EVENTS = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    + chunked(b'data: {"n": 1}\r\n\r\n', b"data: caf\xc3", b"\xa9\n\ndata: [DONE]\n\n")
)


async def test_a_chunked_stream_comes_as_lines_and_the_connection_serves_the_next_call() -> None:
    async with keep_alive_server(EVENTS) as server:
        client = HttpClient(server.url, headers={"Authorization": "Bearer k"}, connect_timeout=5)
        try:
            for _ in range(3):
                async with client.stream("POST", "chat/completions", content=b"{}") as response:
                    assert response.status_code == 200
                    assert response.headers["content-type"] == "text/event-stream"
                    lines = [line async for line in response.aiter_lines()]
                assert lines == ['data: {"n": 1}', "", "data: café", "", "data: [DONE]", ""]
        finally:
            await client.aclose()
    assert server.connections == 1
    assert client.connections_opened == 1
    line, headers, body = server.requests[0]
    assert line == "POST /v1/chat/completions HTTP/1.1"
    assert headers["host"] == f"127.0.0.1:{server.port}"
    assert headers["authorization"] == "Bearer k"
    assert headers["content-length"] == "2" and body == b"{}"


async def test_lines_split_anywhere_are_put_back_together() -> None:
    """A stream written one byte at a time, with CRLF, LF and CR line ends."""
    text = b'data: {"a": "\xe2\x82\xac"}\r\n\r\ndata: two\rdata: three\n\ndata: [DONE]\r\n\r\n'

    async def one_byte_at_a_time(reader, writer) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for byte in text:
            writer.write(chunked(bytes([byte]))[:-5])  # a one-byte chunk, not the end
            await writer.drain()
            await asyncio.sleep(0)
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async with Server(one_byte_at_a_time) as server:
        client = HttpClient(server.url, headers={}, connect_timeout=5)
        try:
            async with client.stream("POST", "chat/completions", content=b"{}") as response:
                lines = [line async for line in response.aiter_lines()]
        finally:
            await client.aclose()
    assert lines == ['data: {"a": "€"}', "", "data: two", "data: three", "", "data: [DONE]", ""]


async def test_a_body_without_a_length_ends_with_its_connection_which_is_not_reused() -> None:
    async with one_reply_server(b"HTTP/1.1 200 OK\r\n\r\nthe whole body") as server:
        client = HttpClient(server.url, headers={}, connect_timeout=5)
        try:
            for _ in range(2):
                response, body = await client.request("GET", "models")
                assert (response.status_code, body) == (200, b"the whole body")
        finally:
            await client.aclose()
    assert server.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    # No "Connection: close": the client learns only from the close itself.
    async with one_reply_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") as server:
        client = HttpClient(server.url, headers={}, connect_timeout=5)
        try:
            assert (await client.request("GET", "models"))[1] == b"ok"
            await asyncio.sleep(0.2)  # the close arrives while the connection is idle
            assert (await client.request("GET", "models"))[1] == b"ok"
        finally:
            await client.aclose()
    assert server.connections == 2


async def test_an_idle_connection_past_its_keep_alive_time_is_not_reused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http_client, "KEEP_ALIVE_SECONDS", 0.1)
    async with keep_alive_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") as server:
        client = HttpClient(server.url, headers={}, connect_timeout=5)
        try:
            await client.request("GET", "models")
            await client.request("GET", "models")  # at once: reused
            await asyncio.sleep(0.3)
            await client.request("GET", "models")  # idle too long: a new connection
        finally:
            await client.aclose()
    assert server.connections == 2


async def test_a_reply_left_unread_closes_its_connection() -> None:
    async with keep_alive_server(EVENTS) as server:
        client = HttpClient(server.url, headers={}, connect_timeout=5)
        try:
            async with client.stream("POST", "chat/completions", content=b"{}") as response:
                async for _ in response.aiter_lines():
                    break  # the rest of the body is still on the wire
            async with client.stream("POST", "chat/completions", content=b"{}") as response:
                assert len([line async for line in response.aiter_lines()]) == 6
        finally:
            await client.aclose()
    assert server.connections == 2


async def test_a_gzip_body_is_decoded() -> None:
    packed = gzip.compress(b'{"data": []}')
    reply = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(packed)
    async with keep_alive_server(reply + packed) as server:
        client = HttpClient(server.url, headers={}, connect_timeout=5)
        try:
            assert (await client.request("GET", "models"))[1] == b'{"data": []}'
        finally:
            await client.aclose()


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (b"", "nothing came back before the connection closed"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "5 bytes before the end"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "middle of a chunk"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunked body"),
        (b"SSH-2.0-OpenSSH_9.6\r\n", "not HTTP"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", "Content-Length"),
    ],
)
async def test_a_broken_reply_is_a_lost_connection_that_says_why(reply: bytes, reason: str) -> None:
    async with one_reply_server(reply) as server:
        client = HttpClient(server.url, headers={}, connect_timeout=5)
        try:
            with pytest.raises(ConnectionLost, match=reason):
                await client.request("GET", "models")
        finally:
            await client.aclose()


async def test_nothing_listening_is_a_failed_connection() -> None:
    async with keep_alive_server(b"") as server:
        port = server.port
    client = HttpClient(f"http://127.0.0.1:{port}/v1", headers={}, connect_timeout=5)
    with pytest.raises(ConnectFailed, match="refused the connection"):
        await client.request("GET", "models")


async def test_a_base_url_beyond_ascii_goes_out_percent_encoded_with_its_query() -> None:
    async with keep_alive_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") as server:
        url = f"http://127.0.0.1:{server.port}/v1 beta/ü/?api-version=2024-10-21"
        client = HttpClient(url, headers={}, connect_timeout=5)
        try:
            await client.request("GET", "models")
        finally:
            await client.aclose()
    assert server.requests[0][0] == "GET /v1%20beta/%C3%BC/models?api-version=2024-10-21 HTTP/1.1"
    # An internationalised host name is sent (and resolved) in its ASCII form.
    assert http_client.Origin.parse("https://bücher.example/v1").authority == (
        "xn--bcher-kva.example"
    )


@pytest.mark.parametrize(
    "url", ["ftp://example.com/v1", "example.com/v1", "http:///v1", "http://host:99999/v1"]
)
def test_a_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(BadUrl):
        HttpClient(url, headers={}, connect_timeout=5)


@pytest.mark.parametrize("value", ["sk-ключ", "key\r\nX-Injected: 1", "tab\tok\x00"])
def test_a_header_value_http_cannot_carry_is_refused_before_anything_is_sent(value: str) -> None:
    with pytest.raises(BadHeader, match="Authorization"):
        HttpClient("http://127.0.0.1:1/v1", headers={"Authorization": value}, connect_timeout=5)


# --- proxies --------------------------------------------------------------------------


class Proxy:
    """An HTTP proxy: forwards absolute-form requests, and tunnels CONNECT, to any name
    as if it were 127.0.0.1."""

    def __init__(self, *, password: str | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.password = password
        self.seen: list[str] = []
        self.server = Server(self.handle, tls=tls)

    async def handle(self, reader, writer) -> None:
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
        # Every name is this machine (the tests' origins are named, not loopback: seri
        # never sends a loopback address through a proxy).
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

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
            sink.close()

        await asyncio.gather(
            pipe(reader, upstream_writer), pipe(upstream_reader, writer), return_exceptions=True
        )


async def test_an_http_proxy_from_the_environment_carries_the_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy = Proxy(password="p@ss")
    async with (
        keep_alive_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") as origin,
        proxy.server,
    ):
        use_proxy(monkeypatch, "HTTP_PROXY", f"http://me:p%40ss@127.0.0.1:{proxy.server.port}")
        client = HttpClient(f"http://origin.test:{origin.port}/v1", headers={}, connect_timeout=5)
        try:
            assert (await client.request("GET", "models"))[1] == b"ok"
            assert (await client.request("GET", "models"))[1] == b"ok"
        finally:
            await client.aclose()
    # One connection to the proxy carried both (the proxy reads only the first).
    assert proxy.seen == [f"GET http://origin.test:{origin.port}/v1/models HTTP/1.1"]
    assert origin.requests[0][0] == "GET /v1/models HTTP/1.1"


async def test_a_loopback_origin_never_goes_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy = Proxy()
    async with (
        keep_alive_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") as origin,
        proxy.server,
    ):
        use_proxy(monkeypatch, "HTTP_PROXY", f"http://127.0.0.1:{proxy.server.port}")
        for url in (origin.url, f"http://localhost:{origin.port}/v1"):
            client = HttpClient(url, headers={}, connect_timeout=5)
            try:
                assert (await client.request("GET", "models"))[1] == b"ok"
            finally:
                await client.aclose()
    assert proxy.seen == []
    assert len(origin.requests) == 2


async def test_no_proxy_sends_a_host_straight(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = Proxy()
    async with proxy.server:
        proxy_url = f"http://127.0.0.1:{proxy.server.port}"
        use_proxy(monkeypatch, "HTTP_PROXY", proxy_url, "example.com,192.0.2.0/24")
        # Straight to an address nothing answers at (a documentation network), where
        # the proxy would have taken the request.
        client = HttpClient("http://192.0.2.1:8000/v1", headers={}, connect_timeout=0.5)
        with pytest.raises(ConnectFailed):
            await client.request("GET", "models")
    assert proxy.seen == []


@pytest.mark.parametrize(
    ("host", "no_proxy", "straight"),
    [
        ("api.example.com", "example.com", True),
        ("example.com", ".example.com", True),
        ("api.example.com", "*.example.com", True),
        ("notexample.com", "example.com", False),
        ("openrouter.ai", "openrouter.ai:443", True),
        ("openrouter.ai", "other.ai, *", True),
        ("openrouter.ai", "", False),
        ("10.1.2.3", "10.0.0.0/8", True),
        ("11.1.2.3", "10.0.0.0/8", False),
        ("192.168.1.9", "192.168.1.9", True),
        ("192.168.1.9", "192.168.1.10", False),
        ("fd00::5", "[fd00::5]:8080", True),
        ("fd00::5", "fd00::/8", True),
        ("127.0.0.1", "", True),
        ("127.8.9.10", "", True),
        ("::1", "", True),
        ("localhost", "", True),
        ("app.localhost", "", True),
    ],
)
def test_which_hosts_bypass_the_proxy(host: str, no_proxy: str, straight: bool) -> None:
    assert http_client.bypasses_proxy(host, no_proxy) is straight


async def test_a_proxy_that_is_not_http_fails_the_call_clearly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_proxy(monkeypatch, "HTTPS_PROXY", "socks5://127.0.0.1:1080")
    client = HttpClient("https://provider.example/v1", headers={}, connect_timeout=5)
    with pytest.raises(ConnectFailed, match="not an http:// or https:// proxy"):
        await client.request("GET", "models")


# --- TLS ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A certificate authority and a server certificate it signed for 127.0.0.1 and
    origin.test (ca.pem, server.pem, server.key), made with the openssl command."""
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
    return folder / "ca.pem", folder / "server.pem", folder / "server.key"


def server_tls(certificates: tuple[Path, Path, Path]) -> ssl.SSLContext:
    """A server's TLS settings with the test certificate."""
    _, cert, key = certificates
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def tls_server(certificates: tuple[Path, Path, Path], reply: bytes) -> Server:
    return keep_alive_server(reply, tls=server_tls(certificates))


async def test_tls_with_a_trusted_certificate_and_a_kept_connection(
    certificates: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates[0]))
    async with tls_server(certificates, EVENTS) as server:
        client = HttpClient(server.url, headers={}, connect_timeout=5)
        try:
            for _ in range(2):
                async with client.stream("POST", "chat/completions", content=b"{}") as response:
                    assert (await response.aread()).endswith(b"data: [DONE]\n\n")
        finally:
            await client.aclose()
    assert server.connections == 1


async def test_tls_with_an_untrusted_certificate_is_refused(
    certificates: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    async with tls_server(certificates, EVENTS) as server:
        client = HttpClient(server.url, headers={}, connect_timeout=5)
        with pytest.raises(ConnectFailed, match=r"certificate of 127\.0\.0\.1.* is not trusted"):
            await client.request("GET", "models")


@pytest.mark.parametrize("proxy_scheme", ["http", "https"])
async def test_https_through_a_proxy_goes_through_a_tunnel(
    certificates: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, proxy_scheme: str
) -> None:
    """Through an https:// proxy, the origin's TLS runs inside the proxy's."""
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates[0]))
    tls = server_tls(certificates) if proxy_scheme == "https" else None
    proxy = Proxy(password="secret", tls=tls)
    async with tls_server(certificates, EVENTS) as server, proxy.server:
        proxy_url = f"{proxy_scheme}://me:secret@127.0.0.1:{proxy.server.port}"
        use_proxy(monkeypatch, "HTTPS_PROXY", proxy_url)
        client = HttpClient(f"https://origin.test:{server.port}/v1", headers={}, connect_timeout=5)
        try:
            for _ in range(2):
                async with client.stream("POST", "chat/completions", content=b"{}") as response:
                    assert response.status_code == 200
                    assert (await response.aread()).endswith(b"data: [DONE]\n\n")
        finally:
            await client.aclose()
    assert proxy.seen == [f"CONNECT origin.test:{server.port} HTTP/1.1"]
    assert server.connections == 1
    assert server.requests[1][0] == "POST /v1/chat/completions HTTP/1.1"


async def test_http_through_an_https_proxy_goes_to_the_proxy_over_tls(
    certificates: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates[0]))
    proxy = Proxy(tls=server_tls(certificates))
    async with (
        keep_alive_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") as origin,
        proxy.server,
    ):
        use_proxy(monkeypatch, "HTTP_PROXY", f"https://localhost:{proxy.server.port}")
        client = HttpClient(f"http://origin.test:{origin.port}/v1", headers={}, connect_timeout=5)
        try:
            assert (await client.request("GET", "models"))[1] == b"ok"
        finally:
            await client.aclose()
    assert proxy.seen == [f"GET http://origin.test:{origin.port}/v1/models HTTP/1.1"]


async def test_an_https_proxy_or_origin_with_an_untrusted_certificate_is_named(
    certificates: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = Proxy(tls=server_tls(certificates))
    async with tls_server(certificates, EVENTS) as server, proxy.server:
        url = f"https://origin.test:{server.port}/v1"
        # The proxy's certificate is not trusted: the proxy is named.
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        use_proxy(monkeypatch, "HTTPS_PROXY", f"https://127.0.0.1:{proxy.server.port}")
        client = HttpClient(url, headers={}, connect_timeout=5)
        with pytest.raises(ConnectFailed, match=r"certificate of the proxy at 127\.0\.0\.1:\d+ is"):
            await client.request("GET", "models")
        # Through a plain proxy, the origin's certificate is not trusted: the origin is.
        plain = Proxy()
        async with plain.server:
            use_proxy(monkeypatch, "HTTPS_PROXY", f"http://127.0.0.1:{plain.server.port}")
            client = HttpClient(url, headers={}, connect_timeout=5)
            with pytest.raises(ConnectFailed, match=r"certificate of origin\.test:\d+ is not"):
                await client.request("GET", "models")
    assert proxy.seen == []


async def test_a_proxy_that_refuses_the_tunnel_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = Proxy(password="right")
    async with proxy.server:
        use_proxy(monkeypatch, "HTTPS_PROXY", f"http://me:wrong@127.0.0.1:{proxy.server.port}")
        client = HttpClient("https://origin.test:9/v1", headers={}, connect_timeout=5)
        with pytest.raises(ConnectFailed, match="refused the tunnel \\(HTTP 407\\)"):
            await client.request("GET", "models")


async def test_the_provider_says_why_it_could_not_reach_a_server_it_does_not_trust(
    certificates: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    async with tls_server(certificates, EVENTS) as server:
        options = {"provider": {"baseUrl": server.url, "apiKey": "k", "contextWindow": 1000}}
        settings, problems = load_settings(tmp_path, options)
        assert not problems, problems
        provider = Provider(settings.provider)
        try:
            with pytest.raises(ProviderUnreachable) as failure:
                await provider.complete([{"role": "user", "content": "hi"}])
        finally:
            await provider.aclose()
    assert str(failure.value).startswith(
        f"Could not reach the provider at {server.url}: the TLS certificate of "
        f"127.0.0.1:{server.port} is not trusted ("
    )
