"""`python -m seri_lsp ARGS` for an editor under test, forked from a test worker's warm
process (tests/warm_server.py) instead of started cold.

The VS Code and Neovim tests give their editor this as its server command:

    python -I -S tests/warm_client.py SOCKET ARGS...

It starts in about 15 ms (no site, nothing but the standard library), hands its stdin,
stdout and stderr, its environment and its folder to the warm process listening on
SOCKET, which forks the real server on them, then stays as the editor's child until the
server ends: a TERM, INT or HUP it gets goes to the server, and it ends as the server
did (the same exit code, or the same signal). A server the editor kills with KILL (which
cannot be passed on) sees its stdin close with the editor's end of it, and stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys


def main() -> int:
    path, args = sys.argv[1], sys.argv[2:]
    request = json.dumps({"args": args, "env": dict(os.environ), "cwd": os.getcwd()})
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    socket.send_fds(connection, [request.encode()], [0, 1, 2])
    # The server holds the editor's pipes now; this process keeps none of them open.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    status = connection.makefile("rb")
    pid = int(status.readline())

    def forward(number: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, forward)
    line = status.readline()
    code = int(line) if line.strip() else -signal.SIGKILL
    if code < 0:  # ended by a signal: end by the same one
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main())
