"""The baseline server: a bare pygls language server with one command, on stdio.

What any pygls server pays before it answers (the interpreter, pygls, lsprotocol, the
JSON-RPC machinery) and nothing seri adds. Its one command answers what
`seri.session.list` answers for a project with no sessions.
"""

from __future__ import annotations

from typing import Any

from pygls.lsp.server import LanguageServer

server = LanguageServer("bare", "0")


@server.command("bare.list")
def list_sessions(ls: LanguageServer, *args: Any) -> dict[str, Any]:
    return {"sessions": []}


if __name__ == "__main__":
    server.start_io()
