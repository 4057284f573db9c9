"""seri-lsp: the session-and-context engine of the seri coding agent, served over LSP."""

__version__ = "0.1.0"
