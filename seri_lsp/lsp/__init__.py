"""The language-server face of seri-lsp: the only part of the package that imports pygls."""
