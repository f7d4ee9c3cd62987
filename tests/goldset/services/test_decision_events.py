"""``label.submitted``, ``adjudication.recorded`` and ``triple.resolved`` (issue 29): emitted by
the labeling, adjudication and resolution services in the action's transaction, delivered
through the outbox signed as Standard Webhooks says (verified by the ``standardwebhooks``
package), with payloads of ids, codes, counts and times only: no system, run or model, no
person, no text of a question, answer, rationale or comment."""

import pytest

from goldset.models import WebhookDelivery, WebhookEvent
from goldset.services import webhooks
from goldset.services.adjudication import record_adjudication
from tests.factories import DomainFactory, default_project
from tests.goldset.answers_helpers import BAD, GOOD, SECRETS, build_conflict_item, claim_and_label
from tests.goldset.curation_support import review, write_triple

pytestmark = pytest.mark.django_db


@pytest.fixture
def subscribe(admin_user, receiver, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True

    def make(*events):
        endpoint, secret = webhooks.create_webhook_endpoint(
            project=default_project(), actor=admin_user, url=receiver.url, events=list(events)
        )
        receiver.secret = secret
        return endpoint

    return make


def assert_nothing_private(requests, *people, texts=()):
    body = b"".join(r.body for r in requests).decode()
    for secret in (*SECRETS, *(p.username for p in people), *texts):
        assert secret not in body, f"{secret!r} leaked"


def test_each_production_label_is_a_signed_label_submitted_event(
    subscribe, receiver, django_capture_on_commit_callbacks
):
    subscribe(WebhookEvent.LABEL_SUBMITTED)
    record, annotators = build_conflict_item(DomainFactory(slug="events_domain"))
    rationales = ["handled the exception well", "mostly grounded", "approves without control"]
    answers = [
        {**GOOD, "rationale": rationales[0]},
        {**GOOD, "grounding": "partially_grounded", "rationale": rationales[1]},
        {**BAD, "severe_safety": True, "rationale": rationales[2]},
    ]
    for annotator, answer in zip(annotators, answers, strict=True):
        with django_capture_on_commit_callbacks(execute=True):
            claim_and_label(annotator, **answer)
    requests = receiver.wait_for(3)
    assert len(requests) == 3 and all(r.verified for r in requests)
    data = [r.payload["data"] for r in requests]
    assert {r.payload["type"] for r in requests} == {"label.submitted"}
    assert sorted(d["slot"] for d in data) == [1, 2, 3]
    assert {d["record"] for d in data} == {record.public_id}
    assert [d["record_status"] for d in sorted(data, key=lambda d: d["slot"])] == [
        "labeling", "labeling", "needs_adjudication",
    ]  # fmt: skip
    assert set(data[0]) == {
        "label_id", "record", "slot", "tier", "record_status", "submitted_at", "links",
    }  # fmt: skip
    assert data[0]["links"]["api"].startswith("/api/v1/projects/default/labels/")
    assert len({r.headers["webhook-id"] for r in requests}) == 3  # one message per label
    assert_nothing_private(requests, *annotators, texts=rationales)


def test_an_adjudication_is_a_signed_adjudication_recorded_event(
    subscribe, receiver, lead, django_capture_on_commit_callbacks
):
    subscribe(WebhookEvent.ADJUDICATION_RECORDED)
    record, annotators = build_conflict_item(DomainFactory(slug="events_domain"))
    claim_and_label(annotators[0], **{**GOOD, "rationale": "ok"})
    claim_and_label(annotators[1], **{**GOOD, "rationale": "ok"})
    claim_and_label(annotators[2], **{**BAD, "severe_safety": True, "rationale": "unsafe"})
    record.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        record_adjudication(
            lead=lead, record=record, acceptability="unacceptable", grounding="misgrounded",
            severe_safety=True, primary_failure="policy_boundary_over_answer",
            rationale="the memo governs the lane",
        )  # fmt: skip
    (request,) = receiver.wait_for(1)
    assert request.verified and request.payload["type"] == "adjudication.recorded"
    data = request.payload["data"]
    assert (data["record"], data["reason"]) == (record.public_id, "severe_safety")
    assert (data["final_acceptability"], data["final_grounding"]) == ("unacceptable", "misgrounded")
    assert data["links"]["page"] == f"/p/default/answers/adjudication/{record.public_id}/"
    assert_nothing_private([request], lead, *annotators, texts=["the memo governs the lane"])


def test_a_resolved_review_round_is_a_signed_triple_resolved_event(
    subscribe, receiver, team, django_capture_on_commit_callbacks
):
    subscribe(WebhookEvent.TRIPLE_RESOLVED)
    gold = write_triple(team["author"])
    discussed = write_triple(team["author"], question="Which cipher protects backups at rest?")
    with django_capture_on_commit_callbacks(execute=True):
        review(team["r1"], gold, comment="fine by me")
    assert receiver.requests == []  # one review of two: nothing resolved yet
    with django_capture_on_commit_callbacks(execute=True):
        review(team["r2"], gold)
    with django_capture_on_commit_callbacks(execute=True):
        review(team["r3"], discussed, verdict="flag", flags=["answer_not_entailed"])
        review(team["r4"], discussed)
    requests = receiver.wait_for(2)
    assert all(r.verified for r in requests)
    data = {r.payload["data"]["triple"]: r.payload["data"] for r in requests}
    assert data[gold.external_id]["state"] == "gold"
    assert data[gold.external_id]["verdicts"] == {"confirm": 2}
    assert data[discussed.external_id]["state"] == "in_discussion"
    assert data[discussed.external_id]["verdicts"] == {"confirm": 1, "flag": 1}
    assert data[gold.external_id]["links"]["api"] == (
        f"/api/v1/projects/default/triples/{gold.external_id}/"
    )
    texts = ["fine by me", gold.current_revision.question, "Which cipher"]
    people = [team[k] for k in ("author", "r1", "r2", "r3", "r4")]
    assert_nothing_private(requests, *people, texts=texts)


def test_no_endpoint_no_delivery(team, django_capture_on_commit_callbacks):
    triple = write_triple(team["author"])
    with django_capture_on_commit_callbacks(execute=False):
        review(team["r1"], triple)
        review(team["r2"], triple)
    assert not WebhookDelivery.objects.exists()
