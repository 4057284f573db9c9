"""`seri-lsp acp`: the ACP agent on stdin/stdout, until the client hangs up.

The agent also stops cleanly on SIGINT and SIGTERM, as when the editor goes: running
tasks are cancelled and stored as such, every session is let go, the store is closed.
"""

from __future__ import annotations

import asyncio
import contextlib

from acp import run_agent

from seri_lsp.acp.agent import AgentOptions, SeriAgent
from seri_lsp.signals import on_stop_signals


def serve(options: AgentOptions) -> int:
    """Serve one ACP client on stdio; returns the exit status."""
    return asyncio.run(_serve(options))


async def _serve(options: AgentOptions) -> int:
    agent = SeriAgent(options)
    # The unstable part of the protocol brings session/resume and session/close.
    serving = asyncio.ensure_future(run_agent(agent, use_unstable_protocol=True))
    on_stop_signals(lambda _signal: serving.cancel())
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    finally:
        await agent.close()
    return 0
