"""Our own MCP test server, built with the official SDK: `python seri_test_server.py
[--hang-at-start] [--http PORT]`. Tools: `echo` (a schema with a required string and an
optional count), `fail` (an isError result), `picture` (an image), `big` (a long text),
`sleep` (waits, for timeouts and cancel), `crash` (the process exits mid-call)."""

from __future__ import annotations

import base64
import os
import sys
import time

if __name__ == "__main__" and "--hang-at-start" in sys.argv:
    # Before the SDK is imported (a second or more on a busy machine): the line has to
    # reach the client while it still waits for the handshake.
    print(f"seri-test pid {os.getpid()}", file=sys.stderr, flush=True)
    print("hanging before the handshake", file=sys.stderr, flush=True)
    time.sleep(3600)

from mcp.server.mcpserver import MCPServer
from mcp.types import ImageContent, TextContent

server = MCPServer("seri-test")


@server.tool(description="Say the text back, count times.")
def echo(text: str, count: int = 1) -> str:
    return " ".join([text] * count)


@server.tool(description="Always fails.")
def fail() -> str:
    raise ValueError("this tool always fails")


@server.tool(description="A small picture.")
def picture() -> list[TextContent | ImageContent]:
    data = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    return [
        TextContent(type="text", text="here it is"),
        ImageContent(type="image", data=data, mime_type="image/png"),
    ]


@server.tool(description="A long text of n lines.")
def big(n: int) -> str:
    return "\n".join(f"line {i}" for i in range(n))


@server.tool(description="Wait some seconds.")
def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


@server.tool(description="Exit the server process mid-call.")
def crash() -> str:
    print("crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    print(f"seri-test pid {os.getpid()}", file=sys.stderr, flush=True)
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()
