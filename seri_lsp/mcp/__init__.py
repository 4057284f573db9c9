"""MCP tool servers: the user's servers (`.mcp.json`) offered to the agent as tools.

May depend on the agent (tool and gate types), store, events, host, settings: not the engine.
"""
