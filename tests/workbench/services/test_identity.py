"""Ending a person's access (issue 31): deactivation deletes their sessions, revokes their API
tokens and frees their claimed items, keeping their labels and audit history; tokens ending
within a week are noticed once in the inbox."""

import datetime as dt

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from goldset.models import AnswerRecord, Label, LabelAssignment, Notification
from goldset.services.labeling import claim_next_item
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import claim_and_label, default_project, qualified_annotators
from workbench.models import ApiToken, AuditEvent, UserSession
from workbench.roles import Role
from workbench.services.api_tokens import authenticate_api_token, create_api_token
from workbench.services.identity import (
    deactivate_user,
    end_sessions,
    notify_expiring_tokens,
    reactivate_user,
)

pytestmark = pytest.mark.django_db


def _signed_in(user) -> Client:
    c = Client()
    c.force_login(user)
    assert c.get(reverse("api_tokens")).status_code == 200
    return c


def test_every_login_records_its_session_and_ending_them_signs_the_person_out():
    person = UserFactory(role=Role.ANNOTATOR, username="two-browsers")
    first, second = _signed_in(person), _signed_in(person)
    keys = list(UserSession.objects.filter(user=person).values_list("session_key", flat=True))
    assert len(keys) == 2 and Session.objects.filter(session_key__in=keys).count() == 2

    assert end_sessions(user=person, reason="test") == 2

    assert not Session.objects.filter(session_key__in=keys).exists()

    for c in (first, second):
        assert c.get(reverse("api_tokens")).status_code == 302  # to the login page
    assert not UserSession.objects.filter(user=person).exists()
    assert AuditEvent.objects.get(verb="sessions_ended").detail["sessions"] == 2


def test_sessions_signed_in_before_sessions_were_recorded_end_too():
    """A session older than the sign-in records (workbench 0008) is found by its user; other
    people's unrecorded sessions stay."""
    person = UserFactory(role=Role.ANNOTATOR, username="signed-in-long-ago")
    other = UserFactory(role=Role.ANNOTATOR, username="someone-else")
    old, kept = _signed_in(person), _signed_in(other)
    UserSession.objects.all().delete()  # as before the records existed

    assert end_sessions(user=person, reason="test") == 1

    assert old.get(reverse("api_tokens")).status_code == 302  # to the login page
    assert kept.get(reverse("api_tokens")).status_code == 200


def test_deactivation_ends_sessions_tokens_and_claims_but_keeps_labels_and_history():
    domain = DomainFactory(slug="supply_chain")
    for _ in range(3):
        AnswerRecordFactory(question__domain=domain)
    (person,) = qualified_annotators(domain, 1)
    label = claim_and_label(person)
    held = claim_next_item(annotator=person, project=default_project()).assignment
    before = AnswerRecord.objects.get(pk=held.record_id).assigned_count
    _, raw = create_api_token(user=person, name="ci", expires_in_days=30)
    browser = _signed_in(person)

    ended = deactivate_user(user=person, reason="admin:test")

    assert ended == {"sessions": 1, "tokens": 1, "claims": 1, "review_claims": 0}
    person.refresh_from_db()
    assert person.is_active is False
    assert browser.get(reverse("api_tokens")).status_code == 302
    assert authenticate_api_token(raw=raw, method="GET", path="/api/v1/") is None
    assert ApiToken.objects.get(user=person).revoked_at is not None
    assert not LabelAssignment.objects.filter(pk=held.pk).exists()
    assert AnswerRecord.objects.get(pk=held.record_id).assigned_count == before - 1
    assert Label.objects.get(pk=label.pk).annotator_id == person.pk  # the past label stays
    assert AuditEvent.objects.filter(actor=person, verb="labeled").exists()
    event = AuditEvent.objects.get(verb="user_deactivated")
    assert event.detail["claims"] == 1 and event.object_id == str(person.pk)
    # idempotent: nothing left to end
    assert deactivate_user(user=person, reason="again") == {
        "sessions": 0,
        "tokens": 0,
        "claims": 0,
        "review_claims": 0,
    }
    reactivate_user(user=person, reason="back")
    person.refresh_from_db()
    assert person.is_active and ApiToken.objects.get(user=person).revoked_at is not None


def test_a_token_ending_within_a_week_is_noticed_once_in_the_inbox(settings):
    settings.API_TOKEN_MAX_LIFETIME_DAYS = 0
    person = UserFactory(role=Role.LEAD, username="expiring")
    soon, _ = create_api_token(user=person, name="nightly", expires_in_days=5)
    later, _ = create_api_token(user=person, name="yearly", expires_in_days=60)
    never, _ = create_api_token(user=person, name="forever")

    assert notify_expiring_tokens() == 1
    assert notify_expiring_tokens() == 0  # once per token

    (notice,) = Notification.objects.filter(recipient=person)
    assert notice.kind == "token_expiring" and "nightly" in notice.text
    assert notice.project == default_project() and notice.link == "/tokens/"
    soon.refresh_from_db(), later.refresh_from_db(), never.refresh_from_db()
    assert soon.expiry_notified_at is not None
    assert later.expiry_notified_at is None and never.expiry_notified_at is None
    # the later one is noticed when its week comes
    assert notify_expiring_tokens(now=timezone.now() + dt.timedelta(days=54)) == 1


def test_the_installation_maximum_lifetime_counts_for_the_notice(settings):
    settings.API_TOKEN_MAX_LIFETIME_DAYS = 30
    person = UserFactory(role=Role.ANNOTATOR, username="old-token")
    token, _ = create_api_token(user=person, name="old", expires_in_days=None)
    ApiToken.objects.filter(pk=token.pk).update(
        created_at=timezone.now() - dt.timedelta(days=25), expires_at=None
    )
    revoked, _ = create_api_token(user=person, name="gone", expires_in_days=3)
    ApiToken.objects.filter(pk=revoked.pk).update(revoked_at=timezone.now())

    assert notify_expiring_tokens() == 1
    assert "old" in Notification.objects.get(recipient=person).text


def test_the_expiring_tokens_task_runs_the_service(settings):
    from workbench.tasks import notify_expiring_tokens_task

    person = UserFactory(role=Role.ANNOTATOR, username="task-token")
    create_api_token(user=person, name="soon", expires_in_days=2)
    assert notify_expiring_tokens_task() == 1
    assert "notify-expiring-tokens" in settings.CELERY_BEAT_SCHEDULE


def test_the_notice_runs_as_often_as_the_readme_and_the_docstrings_say(settings):
    """The beat entry runs the task every 6 hours, and every place that says how often says so
    (they once said "daily")."""
    from pathlib import Path

    from workbench import tasks
    from workbench.services import identity

    entry = settings.CELERY_BEAT_SCHEDULE["notify-expiring-tokens"]
    assert entry["task"] == tasks.notify_expiring_tokens_task.name
    assert entry["schedule"] == 6 * 3600
    said = "every 6 hours"
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert f"`notify-expiring-tokens` ({said};" in " ".join(readme.split())
    for doc in (identity.__doc__, tasks.notify_expiring_tokens_task.__doc__):
        text = " ".join(doc.split()).lower()
        assert said in text and "daily" not in text


def test_deactivation_frees_an_unreviewed_review_claim_for_the_next_reviewer(make_user):
    from goldset.models import ReviewAssignment, TripleRevision
    from goldset.services.reviews import claim_next_assignment
    from tests.goldset.curation_support import write_triple

    author = make_user(Role.ANNOTATOR, username="author")
    leaving, staying = (make_user(Role.ANNOTATOR, username=f"rev{i}") for i in (1, 2))
    triple = write_triple(author)
    held = claim_next_assignment(project=default_project(), reviewer=leaving)
    assert held.revision_id == triple.current_revision_id

    assert deactivate_user(user=leaving, reason="test")["review_claims"] == 1

    assert not ReviewAssignment.objects.filter(pk=held.pk).exists()
    assert TripleRevision.objects.get(pk=held.revision_id).assigned_count == 0
    following = claim_next_assignment(project=default_project(), reviewer=staying)
    assert following.revision_id == held.revision_id
    assert AuditEvent.objects.filter(verb="review_claim_released").count() == 1


def test_a_refused_oidc_sign_in_ends_the_persons_sessions_and_tokens():
    from workbench.services.accounts import SignInRefused, sign_in_with_provider

    def sign_in(role, values=()):
        return sign_in_with_provider(
            issuer="https://idp.example.org",
            subject="sub-9",
            claims={"preferred_username": "mallory"},
            role=role,
            provider="Acme SSO",
            values=list(values),
        )

    person = sign_in(Role.LEAD)
    browser = _signed_in(person)
    _, raw = create_api_token(user=person, name="ci", expires_in_days=30)
    with pytest.raises(SignInRefused):
        sign_in(None, values=["marketing"])
    assert browser.get(reverse("api_tokens")).status_code == 302
    assert authenticate_api_token(raw=raw, method="GET", path="/api/v1/") is None
    ended = AuditEvent.objects.get(verb="sessions_ended")
    assert ended.detail == {"reason": "oidc_sign_in_refused:no_role", "sessions": 1}
