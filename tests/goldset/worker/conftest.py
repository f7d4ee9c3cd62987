"""The real-process fixtures of test_job_faults (a private redis-server, workers and beat on it),
for the other worker tests of this package."""

from tests.goldset.worker.test_job_faults import private_redis, processes  # noqa: F401
