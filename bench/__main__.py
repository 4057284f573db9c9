"""`python -m bench`: print every figure (see `bench/run.py`)."""

from bench.run import main

raise SystemExit(main())
