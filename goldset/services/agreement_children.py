"""Imported once by the server process that starts the agreement processes
(``multiprocessing``'s forkserver, see :func:`goldset.services.agreement._run_jobs`): sets Django
up and imports the agreement module there, so each child forked from the server starts ready,
without a second import of Django, NumPy and pandas. The server is started from a fresh
interpreter, never forked from a threaded process, and opens no database connection.

The server stays single-threaded, so its forks are safe (and Python does not warn of forking a
threaded process): BLAS threads are limited to one before NumPy is imported here (the children
compute on one thread each; the parallelism is one process per share of jobs), and pyarrow's
jemalloc, which pandas loads, starts no background thread."""

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

from goldset.services import agreement  # noqa: E402, F401 - loaded in the server, for the children
