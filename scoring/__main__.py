"""Entry point for ``python -m scoring``."""

import os
import sys

# A process-level setting for this short-lived command only (the library changes nothing): with
# the transparent-huge-page defrag policy "madvise", NumPy's madvise(MADV_HUGEPAGE) on every
# large array made page faults cost ~0.9 s more system time on a 10 M-line run (BENCHMARKS.md).
# Must be set before NumPy is imported; an explicit value in the environment wins.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

from scoring.cli import main

sys.exit(main())
