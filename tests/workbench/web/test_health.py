import pytest
from django.urls import reverse

from workbench.celery import app

pytestmark = pytest.mark.django_db


def test_health_is_ok_in_the_embedded_mode_as_json_and_html(client):
    response = client.get(reverse("health"), {"format": "json"})
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True
    assert [c["name"] for c in body["checks"]] == ["database", "broker", "worker"]
    html = client.get(reverse("health"), HTTP_ACCEPT="text/html").content.decode()
    assert "System health" in html and "in-process" in html


def test_health_reports_failing_when_the_broker_is_unreachable(client):
    previous = (app.conf.task_always_eager, app.conf.broker_url)
    app.conf.task_always_eager = False
    app.conf.broker_url = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    try:
        response = client.get(reverse("health"), HTTP_ACCEPT="application/json")
    finally:
        app.conf.task_always_eager, app.conf.broker_url = previous
    assert response.status_code == 503
    checks = {c["name"]: c for c in response.json()["checks"]}
    assert checks["database"]["ok"] and not checks["broker"]["ok"] and not checks["worker"]["ok"]
