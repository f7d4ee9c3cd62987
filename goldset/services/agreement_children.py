"""Imported once by the server process that starts the agreement processes
(``multiprocessing``'s forkserver, see :func:`goldset.services.agreement._run_jobs`): sets Django
up and imports the agreement module there, so each child forked from the server starts ready,
without a second import of Django, NumPy and pandas. The server is started from a fresh
interpreter, never forked from a threaded process, and opens no database connection.

The server stays single-threaded, so its forks are safe (and Python does not warn of forking a
threaded process): BLAS threads are limited to one before NumPy is imported here (the children
compute on one thread each; the parallelism is one process per share of jobs), and pyarrow's
jemalloc, which pandas loads, starts no background thread.

The server also imports statsmodels' inter-rater module (and SciPy with it), which
``scoring.agreement`` imports only when a κ is first computed: the children are new processes at
every recompute, so each paid that import again — about 1.9 s of CPU of a 100k-item recompute's
~10 s (issue 26). Loaded here once, it costs the server about 66 MB more, shared with its
children."""

import os

for _variable, _value in (
    ("OPENBLAS_NUM_THREADS", "1"),
    ("OMP_NUM_THREADS", "1"),
    ("MKL_NUM_THREADS", "1"),
    ("JE_ARROW_MALLOC_CONF", "background_thread:false"),
):
    os.environ.setdefault(_variable, _value)

import django  # noqa: E402 - after the thread limits

django.setup()

from statsmodels.stats import inter_rater  # noqa: E402, F401 - see above

from goldset.services import agreement  # noqa: E402, F401 - loaded in the server, for the children
