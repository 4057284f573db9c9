"""The Agent Client Protocol face: ACP sessions, prompts and tool calls, served by the engine.

May depend on the engine and everything below it; the only package that imports acp.
"""
