"""A held lock never turns a submit into a 500 (issue 24): while another connection holds the
item's row, a label, review or adjudication submit waits ``SUBMIT_LOCK_TIMEOUT_MS``, is retried
once, then answers 503 with what to do (plain and htmx), keeping what the person entered and
storing nothing; when the lock is released during the first wait the retry stores the decision."""

import threading
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from goldset.conf import tunable
from goldset.models import (
    Adjudication,
    AgreementDirtyScope,
    AnswerRecord,
    DomainLabelLoad,
    Label,
    LabelAssignment,
    RecordStatus,
    Review,
    ReviewAssignment,
    Tier,
    Triple,
)
from goldset.services.labeling import (
    _iso_week,
    add_domain_slots,
    claim_next_item,
    seeded_draw,
)
from goldset.services.reviews import claim_next_assignment
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory, default_project
from tests.goldset.answers_helpers import GOOD, qualified_annotators
from tests.goldset.curation_support import write_triple
from tests.waiting import wait_until
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BUSY = "Someone else is changing this item right now"
LABEL = {**GOOD, "severe_safety": "no", "secondary_failures": [], "rationale": "kept-text-7731"}


def _other_connection() -> psycopg.Connection:
    s = connection.settings_dict
    return psycopg.connect(
        dbname=s["NAME"],
        user=s["USER"],
        password=s["PASSWORD"] or None,
        host=s["HOST"] or None,
        port=s["PORT"] or None,
    )


@contextmanager
def held(model, pk: int):
    """Another connection holds ``model``'s row ``pk`` (FOR UPDATE) until the block ends."""
    other = _other_connection()
    table, column = model._meta.db_table, model._meta.pk.column
    try:
        other.execute(f"SELECT 1 FROM {table} WHERE {column} = %s FOR UPDATE", [pk])
        yield other
    finally:
        other.rollback()
        other.close()


def _waits_on_lock(pid: int) -> list:
    with _other_connection() as watcher:
        row = watcher.execute(
            "SELECT query_start FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
            [pid],
        ).fetchone()
    return list(row or ())


def _release_during_second_wait(holder: psycopg.Connection, pid: int) -> threading.Thread:
    """Release the lock once ``pid`` waits on it a second time (a new statement: the retry)."""

    seen = []

    def waits_again() -> bool:
        started = _waits_on_lock(pid)
        if started and started not in seen:
            seen.append(started)
        return len(seen) == 2

    def run():
        try:
            wait_until(waits_again, timeout=60, what="the submit's second wait on the lock")
        finally:
            holder.rollback()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.fixture
def short_waits(settings):
    settings.SUBMIT_LOCK_TIMEOUT_MS = 150


def _assert_busy(response, *, kept: str):
    assert response.status_code == 503
    assert response["Retry-After"].isdigit()
    body = response.content.decode()
    assert BUSY in body and "submit it again" in body
    assert kept in body  # what the person entered is still in the form


@pytest.fixture
def label_claim():
    domain = DomainFactory(slug="supply_chain")
    record = AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    assert assignment.record_id == record.pk
    return annotator, assignment


def _nothing_labeled(assignment):
    assignment.refresh_from_db()
    assert assignment.completed_at is None
    assert not Label.objects.filter(assignment=assignment).exists()
    assert not AuditEvent.objects.filter(verb="labeled").exists()
    assert not AgreementDirtyScope.objects.exists()


@pytest.mark.parametrize("htmx", [False, True], ids=["plain", "htmx"])
def test_label_submit_under_a_held_record_answers_503_and_stores_nothing(
    client_for, label_claim, short_waits, htmx
):
    annotator, assignment = label_claim
    url = reverse("answers:item", args=[assignment.record.public_id])
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "label-item"} if htmx else {}
    with held(AnswerRecord, assignment.record_id):
        response = client_for(annotator).post(url, LABEL, **headers)
    _assert_busy(response, kept="kept-text-7731")
    _nothing_labeled(assignment)
    # once the lock is gone the same submit goes through
    response = client_for(annotator).post(url, LABEL)
    assert response.status_code == 302
    assert Label.objects.filter(assignment=assignment).count() == 1


def test_label_submit_is_retried_once_after_a_lock_wait(client_for, label_claim, settings):
    settings.SUBMIT_LOCK_TIMEOUT_MS = 2000
    annotator, assignment = label_claim
    client = client_for(annotator)
    client.get(reverse("answers:queue"))  # the test's connection is open: its pid is known
    pid = connection.connection.info.backend_pid
    with held(AnswerRecord, assignment.record_id) as holder:
        releaser = _release_during_second_wait(holder, pid)
        response = client.post(reverse("answers:item", args=[assignment.record.public_id]), LABEL)
        releaser.join()
    assert response.status_code == 302
    label = Label.objects.get(assignment=assignment)
    assert label.rationale == "kept-text-7731"
    assert AuditEvent.objects.filter(verb="labeled").count() == 1
    assert LabelAssignment.objects.get(pk=assignment.pk).completed_at is not None


def test_review_submit_under_a_held_triple_answers_503_and_stores_nothing(client_for, short_waits):
    triple = write_triple(UserFactory(role=Role.ANNOTATOR, username="author"))
    reviewer = UserFactory(role=Role.ANNOTATOR, username="rev1")
    assignment = claim_next_assignment(project=default_project(), reviewer=reviewer)
    url = reverse("curation:review", args=[assignment.pk])
    data = {"verdict": "flag", "flags": ["question_unrealistic"], "comment": "kept-comment-5521"}
    for headers in ({}, {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "review-item"}):
        with held(Triple, triple.pk):
            response = client_for(reviewer).post(url, data, **headers)
        _assert_busy(response, kept="kept-comment-5521")
    assert not Review.objects.exists()
    assert ReviewAssignment.objects.get(pk=assignment.pk).completed_at is None
    assert not AuditEvent.objects.filter(verb="review_submitted").exists()
    triple.refresh_from_db()
    assert triple.state == "pending_review"


def test_adjudication_under_a_held_record_answers_503_and_stores_nothing(
    client_for, lead, short_waits
):
    record = AnswerRecordFactory(
        status=RecordStatus.NEEDS_ADJUDICATION, adjudication_reason="no_majority"
    )
    url = reverse("answers:adjudicate", args=[record.public_id])
    data = {**LABEL, "rationale": "kept-rationale-8812"}
    with held(AnswerRecord, record.pk):
        response = client_for(lead).post(url, data)
    _assert_busy(response, kept="kept-rationale-8812")
    assert not Adjudication.objects.exists()
    record.refresh_from_db()
    assert record.status == RecordStatus.NEEDS_ADJUDICATION


def test_a_long_transaction_on_the_domain_load_row_answers_503_not_500(client_for, short_waits):
    """Issue 24's case: an import-like transaction holds ``goldset_domainlabelload`` while a
    TRIAGE item's first label is drawn for a spot check (which adds slots to that row)."""
    domain = DomainFactory(slug="supply_chain")
    week = _iso_week(timezone.now())
    public_id = next(
        pid
        for pid in (f"issue24-{i:04d}" for i in range(10_000))
        if seeded_draw(seed=tunable("ANSWER_SPOT_CHECK_SEED"), key=f"{week}:{pid}")
        < tunable("ANSWER_SPOT_CHECK_RATE")
    )
    record = AnswerRecordFactory(
        question__domain=domain, tier=Tier.TRIAGE, labels_required=1, public_id=public_id
    )
    add_domain_slots(domain_id=domain.pk, delta=1)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    assert assignment.record_id == record.pk
    url = reverse("answers:item", args=[public_id])
    with held(DomainLabelLoad, DomainLabelLoad.objects.get(domain=domain).pk):
        response = client_for(annotator).post(url, LABEL)
    _assert_busy(response, kept="kept-text-7731")
    _nothing_labeled(assignment)
    record.refresh_from_db()
    assert not record.spot_check and record.labels_required == 1
    response = client_for(annotator).post(url, LABEL)  # the transaction ended: it goes through
    assert response.status_code == 302
    record.refresh_from_db()
    assert record.spot_check and record.labels_required == 2
