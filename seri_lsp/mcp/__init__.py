"""MCP tool servers: the user's servers (`.mcp.json`) offered to the agent as tools."""
