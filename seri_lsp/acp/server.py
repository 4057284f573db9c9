"""`seri-lsp acp`: the ACP agent on stdin/stdout, until the client hangs up."""

from __future__ import annotations

import asyncio

from acp import run_agent

from seri_lsp.acp.agent import AgentOptions, SeriAgent


def serve(options: AgentOptions) -> int:
    """Serve one ACP client on stdio; returns the exit status."""
    return asyncio.run(_serve(options))


async def _serve(options: AgentOptions) -> int:
    agent = SeriAgent(options)
    try:
        # The unstable part of the protocol brings session/resume and session/close.
        await run_agent(agent, use_unstable_protocol=True)
    finally:
        await agent.close()
    return 0
