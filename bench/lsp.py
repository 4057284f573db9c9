"""A minimal LSP client over a child process's pipes, for timing servers from outside.

It does as little as a client can: frame and write a request, read framed messages until
the answer with that id arrives (answering the server's own requests with null on the
way), and note the moment the answer's last byte was read, before decoding it, so a
figure holds the server's work and the transfer, not this client's JSON parsing.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any


class LspError(Exception):
    """The server answered a request with an error, or went away."""


class LspProcess:
    """One server process and the client end of its stdio."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._next_id = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def send(self, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any = None) -> tuple[Any, float]:
        """Send a request; returns (result, seconds until its answer was read whole)."""
        self._next_id += 1
        msg_id = self._next_id
        started = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        while True:
            body, read_at = self._read()
            message = json.loads(body)
            if "method" in message:
                if "id" in message:  # the server asks something: say nothing
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if message.get("id") != msg_id:
                continue
            if "error" in message:
                raise LspError(f"{method}: {message['error']}")
            return message.get("result"), read_at - started

    def command(self, name: str, args: dict[str, Any] | None = None) -> tuple[Any, float]:
        """`workspace/executeCommand` with one argument object."""
        params = {"command": name, "arguments": [args] if args is not None else []}
        return self.request("workspace/executeCommand", params)

    def initialize(self, workspace: Path, options: dict[str, Any] | None = None) -> None:
        uri = workspace.as_uri()
        self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": workspace.name}],
                "capabilities": {},
                "initializationOptions": options,
            },
        )
        self.notify("initialized", {})

    def _read(self) -> tuple[bytes, float]:
        stdout = self.proc.stdout
        assert stdout is not None
        length = None
        while True:
            line = stdout.readline()
            if not line:
                raise LspError("the server closed its output")
            if line in (b"\r\n", b"\n"):
                if length is not None:
                    break
                continue
            name, _, value = line.decode("ascii").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        body = stdout.read(length)
        return body, time.perf_counter()

    def peak_rss_kib(self) -> int:
        """The process's peak resident memory so far (VmHWM), in KiB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise LspError("no VmHWM in /proc (not Linux?)")

    def close(self) -> None:
        """shutdown, exit; kill the process if it does not end."""
        try:
            self.request("shutdown")
            self.notify("exit")
        except (LspError, OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
