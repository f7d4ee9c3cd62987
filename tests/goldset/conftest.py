"""Fixtures of the goldset tests (the shared ones are in tests/conftest.py)."""

from tests.goldset.webhooks_support import no_outside_connections, receiver  # noqa: F401
