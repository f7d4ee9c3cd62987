"""PostgreSQL sessions carry a statement timeout (configurable) and run without JIT (issue 17)."""

import pytest
from django.db import connection

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _show(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        return cursor.fetchone()[0]


def test_sessions_have_a_statement_timeout_and_no_jit(postgres, settings):
    options = settings.DATABASES["default"]["OPTIONS"]["options"]
    assert "statement_timeout=" in options
    assert _show("jit") == "off"
    assert _show("statement_timeout") not in ("0", "")
