"""Imported once by the server process that starts the agreement processes
(``multiprocessing``'s forkserver, see :func:`goldset.services.agreement._run_jobs`): sets Django
up and imports the agreement module there, so each child forked from the server starts ready,
without a second import of Django, NumPy and pandas. The server is started from a fresh
interpreter, never forked from a threaded process, and opens no database connection.

The children compute on one thread each (the parallelism is one process per share of jobs):
BLAS threads are limited before NumPy is imported here, which also keeps the server itself
single-threaded when it forks."""

import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import django  # noqa: E402 - after the thread limits

django.setup()

from goldset.services import agreement  # noqa: E402, F401 - loaded in the server, for the children
