"""`python -m seri_lsp.mcp.orphan_guard COMMAND [ARGS...]`: run COMMAND so that it dies
with the language server. On Linux the kernel is asked (prctl PR_SET_PDEATHSIG) to send
it SIGKILL when its parent exits, however the parent ends (shutdown, exit, SIGKILL);
then COMMAND replaces this process (exec keeps the request). Elsewhere it only execs."""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: orphan_guard COMMAND [ARGS...]", file=sys.stderr)
        return 2
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request was made
            return 1
    command = shutil.which(argv[0]) or argv[0]
    try:
        os.execv(command, argv)
    except OSError as error:
        print(f"cannot run {argv[0]}: {error}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
