"""Entry point for ``python -m scoring``."""

import sys

from scoring.cli import main

sys.exit(main())
