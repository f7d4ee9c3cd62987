"""A real OpenID Connect provider for the sign-in tests: django-oauth-toolkit in its own Django
process (tests/conftest.py, fixture ``oidc_provider``), on SQLite in a temporary directory.

Loopback only, for tests: ``/test/users/`` and ``/test/client/`` let a test create users with
their groups (the role claim) and register the workbench's callback URL."""
