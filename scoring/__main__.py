"""Entry point for ``python -m scoring``."""

import os
import sys

# Process-level allocator settings for this short-lived command (the library itself changes
# nothing): a 10 M-line run allocates a few hundred MB in large blocks, and on kernels whose
# transparent-huge-page defrag policy is "madvise", NumPy's madvise(MADV_HUGEPAGE) on big arrays
# and Arrow's default mimalloc pool made page faults cost seconds of system time (measured in
# BENCHMARKS.md). Both stay overridable from the environment.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")

from scoring.cli import main  # noqa: E402

sys.exit(main())
