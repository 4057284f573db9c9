"""MCP tool servers: the user's servers (`.mcp.json`) offered to the agent as tools.

May use the agent (tool and gate types), store, events, host, settings; never the engine or a face.
"""
