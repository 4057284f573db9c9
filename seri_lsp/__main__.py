"""`python -m seri_lsp`: the same entry point as the `seri-lsp` console script."""

from seri_lsp.cli import main

raise SystemExit(main())
