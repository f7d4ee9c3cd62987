"""The admins' audit-log page: only admins reach it (and its CSV); filters by actor, object type
and id, verb and day range combine; keyset pages newest first at a constant query count; the CSV
streams every matching row (not one page), neutralises formulas and is itself audited; the
admin navigation links to it."""

import csv
import datetime as dt
import io
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from goldset.views.audit import PAGE_SIZE
from workbench.models import AuditEvent
from workbench.services.audit import record_event

pytestmark = pytest.mark.django_db


def _at(monkeypatch, when: dt.datetime):
    """Record the next events at ``when``: the audit log is append-only (a trigger refuses
    UPDATE on PostgreSQL), so the clock the model reads is set instead."""
    monkeypatch.setattr(timezone, "now", lambda: when)


def _day(d: int, hour: int = 12) -> dt.datetime:
    return timezone.make_aware(dt.datetime(2026, 3, d, hour, 0))


@pytest.fixture
def events(monkeypatch, annotator, lead):
    """Six events: two actors, two verbs, two objects, over three days in March 2026."""
    made = []
    for day, actor, verb, otype, oid in [
        (1, annotator, "triple_viewed", "goldset.triple", "7"),
        (1, lead, "triple_viewed", "goldset.triple", "8"),
        (2, annotator, "labeled", "goldset.answerrecord", "7"),
        (2, lead, "triple_viewed", "goldset.triple", "7"),
        (3, annotator, "triple_viewed", "goldset.triple", "7"),
        (3, None, "gold_version_frozen", "goldset.goldversion", "1"),
    ]:
        _at(monkeypatch, _day(day))
        made.append(
            record_event(
                actor=actor, verb=verb, object_type=otype, object_id=oid, detail={"d": day}
            )
        )
    monkeypatch.undo()
    return made


def _ids(response) -> list[int]:
    return [e.pk for e in response.context["page"]]


@pytest.mark.parametrize("name", ["audit:log", "audit:csv"])
def test_only_admins_reach_the_audit_log(client, client_for, annotator, lead, admin_user, name):
    url = reverse(name)
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert client_for(annotator).get(url).status_code == 403
    assert client_for(lead).get(url).status_code == 403
    assert client_for(admin_user).get(url).status_code == 200


def test_the_admin_navigation_links_the_audit_log(client_for, lead, admin_user):
    link = f'href="{reverse("audit:log")}"'
    assert link in client_for(admin_user).get(reverse("home")).content.decode()
    assert link not in client_for(lead).get(reverse("home")).content.decode()


def test_filters_combine(client_for, admin_user, annotator, events):
    c = client_for(admin_user)
    url = reverse("audit:log")
    newest_first = [e.pk for e in reversed(events)]
    assert _ids(c.get(url)) == newest_first
    by_actor = _ids(c.get(url, {"actor": annotator.username}))
    assert by_actor == [events[4].pk, events[2].pk, events[0].pk]
    by_object = _ids(c.get(url, {"object_type": "goldset.triple", "object_id": "7"}))
    assert by_object == [events[4].pk, events[3].pk, events[0].pk]
    assert _ids(c.get(url, {"verb": "labeled"})) == [events[2].pk]
    one_day = _ids(c.get(url, {"date_from": "2026-03-02", "date_to": "2026-03-02"}))
    assert one_day == [events[3].pk, events[2].pk]
    assert _ids(c.get(url, {"date_from": "2026-03-03"})) == [events[5].pk, events[4].pk]
    assert _ids(c.get(url, {"date_to": "2026-03-01"})) == [events[1].pk, events[0].pk]
    everything = {
        "actor": annotator.username,
        "verb": "triple_viewed",
        "object_type": "goldset.triple",
        "object_id": "7",
        "date_from": "2026-03-02",
    }
    assert _ids(c.get(url, everything)) == [events[4].pk]
    assert _ids(c.get(url, {"actor": "nobody-by-that-name"})) == []


def test_the_page_shows_who_did_what_to_which_object(client_for, admin_user, annotator, events):
    body = client_for(admin_user).get(reverse("audit:log"), {"verb": "labeled"}).content.decode()
    assert annotator.username in body and "goldset.answerrecord" in body
    assert "<code>labeled</code>" in body and '{"d": 2}' in body.replace("&quot;", '"')
    system = client_for(admin_user).get(reverse("audit:log"), {"verb": "gold_version_frozen"})
    assert "system" in system.content.decode()


def test_bad_filters_are_a_400_with_the_errors_and_no_rows(client_for, admin_user, events):
    c = client_for(admin_user)
    backwards = c.get(reverse("audit:log"), {"date_from": "2026-03-03", "date_to": "2026-03-01"})
    assert backwards.status_code == 400
    assert "The range ends before it starts." in backwards.content.decode()
    assert 'id="audit-events"' not in backwards.content.decode()
    assert c.get(reverse("audit:log"), {"date_from": "yesterday"}).status_code == 400
    assert c.get(reverse("audit:csv"), {"date_to": "2026-13-01"}).status_code == 400
    assert c.get(reverse("audit:log"), {"after": "not-a-cursor"}).status_code == 404


def test_pages_walk_the_whole_filtered_log_newest_first(client_for, admin_user, annotator):
    for i in range(PAGE_SIZE + 7):
        record_event(actor=annotator, verb="triple_viewed", object_type="goldset.triple",
                     object_id=str(i))  # fmt: skip
    record_event(actor=annotator, verb="labeled", object_type="goldset.answerrecord", object_id="x")
    c = client_for(admin_user)
    first = c.get(reverse("audit:log"), {"verb": "triple_viewed"})
    assert len(_ids(first)) == PAGE_SIZE
    cursor = first.context["page"].next_cursor
    assert (
        f"after={cursor}" in first.content.decode()
        and "verb=triple_viewed" in first.content.decode()
    )
    second = c.get(reverse("audit:log"), {"verb": "triple_viewed", "after": cursor})
    assert len(_ids(second)) == 7 and second.context["page"].next_cursor is None
    seen = _ids(first) + _ids(second)
    expected = list(
        AuditEvent.objects.filter(verb="triple_viewed")
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
    )
    assert seen == expected


@pytest.mark.parametrize("n", [3, 80])
def test_a_page_costs_the_same_queries_however_long_the_log(
    client_for, admin_user, make_user, django_assert_num_queries, n
):
    actors = [make_user("annotator", username=f"a{i}") for i in range(4)]
    for i in range(n):
        record_event(actor=actors[i % 4], verb="triple_viewed", object_type="goldset.triple",
                     object_id=str(i))  # fmt: skip
    c = client_for(admin_user)
    c.get(reverse("audit:log"))  # the session is warm
    with django_assert_num_queries(4):  # session, user, roles, the page with its actors
        body = c.get(reverse("audit:log"), {"actor": "a1"}).content.decode()
    assert body.count("<tr>") - 1 == min(len(range(1, n, 4)), PAGE_SIZE)  # minus the header


def _csv(response) -> list[dict]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_csv_streams_every_filtered_row_and_is_audited(client_for, admin_user, annotator):
    for i in range(PAGE_SIZE + 5):
        record_event(actor=annotator, verb="triple_viewed", object_type="goldset.triple",
                     object_id=str(i), detail={"i": i})  # fmt: skip
    record_event(actor=admin_user, verb="labeled", object_type="goldset.answerrecord")
    response = client_for(admin_user).get(reverse("audit:csv"), {"actor": annotator.username})
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="audit-log.csv"' in response["Content-Disposition"]
    rows = _csv(response)
    assert len(rows) == PAGE_SIZE + 5  # every matching row, not one page
    assert {r["actor"] for r in rows} == {annotator.username}
    assert [r["object_id"] for r in rows[:2]] == [str(PAGE_SIZE + 4), str(PAGE_SIZE + 3)]
    assert json.loads(rows[0]["detail"]) == {"i": PAGE_SIZE + 4}
    download = AuditEvent.objects.get(verb="audit_log_downloaded")
    assert download.actor == admin_user
    assert download.detail["filters"]["actor"] == annotator.username


def test_the_csv_neutralises_formulas(client_for, admin_user):
    record_event(actor=None, verb="x", object_type="=HYPERLINK(1)", object_id="+1")
    rows = _csv(client_for(admin_user).get(reverse("audit:csv"), {"verb": "x"}))
    assert rows[0]["object_type"] == "'=HYPERLINK(1)" and rows[0]["object_id"] == "'+1"
    assert rows[0]["actor"] == ""
