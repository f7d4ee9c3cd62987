"""Triple reviews get undo and skip like answer labels: undo within the tunable window while the
triple is unresolved (audited, the form refilled with the withdrawn values, the auto-advanced next
claim released), skip with a reason (the slot back to the pool, never offered again, counted per
reviewer); and an undone answer label refills the label form."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from goldset.models import Review, ReviewAssignment, ReviewSkip, TripleRevision
from goldset.selectors.curation import count_review_skips_by_reviewer, get_undoable_review
from goldset.services.reviews import (
    ReviewSkipRefused,
    ReviewUndoRefused,
    claim_next_assignment,
    skip_review,
    submit_review,
    undo_last_review,
)
from tests.factories import AnswerRecordFactory, DomainFactory, default_project
from tests.goldset.answers_helpers import BAD, claim_and_label, qualified_annotators
from tests.goldset.curation_support import write_triple
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db

HX_ITEM = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "review-item"}


@pytest.fixture
def people(make_user):
    return {
        "author": make_user(Role.ANNOTATOR, username="author"),
        "r1": make_user(Role.ANNOTATOR, username="rev1"),
        "r2": make_user(Role.ANNOTATOR, username="rev2"),
    }


def test_undo_withdraws_the_review_refills_the_form_and_releases_the_next_claim(people, client_for):
    first, second = write_triple(people["author"]), write_triple(people["author"])
    client = client_for(people["r1"])
    claimed = claim_next_assignment(project=default_project(), reviewer=people["r1"])
    response = client.post(
        reverse("curation:review", args=[claimed.pk]),
        {
            "verdict": "flag",
            "flags": ["answer_not_entailed"],
            "entailment_direction": "overstated",
            "comment": "says 12, block says 10",
        },
        **HX_ITEM,
    )
    assert 'id="review-undo"' in response.content.decode()  # the next item offers the undo
    following = ReviewAssignment.objects.exclude(pk=claimed.pk).get(reviewer=people["r1"])
    assert (
        get_undoable_review(project=default_project(), reviewer=people["r1"]).assignment_id
        == claimed.pk
    )

    undone = client.post(reverse("curation:review_undo"), **HX_ITEM)
    html = undone.content.decode()
    assert undone.status_code == 200 and undone["HX-Push-Url"] == reverse(
        "curation:review", args=[claimed.pk]
    )
    assert 'value="flag" data-key="2" checked' in html
    assert 'value="answer_not_entailed" data-key="5" checked' in html
    assert 'value="overstated" data-key="7" checked' in html and "says 12, block says 10" in html
    assert not Review.objects.exists()
    assert not ReviewAssignment.objects.filter(pk=following.pk).exists()
    assert TripleRevision.objects.get(pk=second.current_revision_id).assigned_count == 0
    event = AuditEvent.objects.get(verb="review_undone")
    assert event.actor == people["r1"] and event.detail["withdrawn"]["verdict"] == "flag"
    assert event.detail["released"] == [second.external_id]
    first.refresh_from_db()
    assert first.state == "pending_review"


def test_undo_is_refused_after_the_window_and_once_resolved(people, settings):
    settings.REVIEW_UNDO_WINDOW_SECONDS = 60
    triple = write_triple(people["author"])
    for reviewer in (people["r1"], people["r2"]):
        a = claim_next_assignment(project=default_project(), reviewer=reviewer)
        submit_review(reviewer=reviewer, revision=a.revision, verdict="confirm")
    triple.refresh_from_db()
    assert triple.state == "gold"
    with pytest.raises(ReviewUndoRefused, match="already resolved"):
        undo_last_review(project=default_project(), reviewer=people["r2"])
    other = write_triple(people["author"])
    a = claim_next_assignment(project=default_project(), reviewer=people["r1"])
    assert a.revision.triple_id == other.pk
    submit_review(reviewer=people["r1"], revision=a.revision, verdict="confirm")
    Review.objects.filter(reviewer=people["r1"]).update(
        submitted_at=timezone.now() - timedelta(seconds=61)
    )
    assert get_undoable_review(project=default_project(), reviewer=people["r1"]) is None
    with pytest.raises(ReviewUndoRefused, match="1 min"):
        undo_last_review(project=default_project(), reviewer=people["r1"])
    assert Review.objects.count() == 3


def test_skip_needs_a_reason_frees_the_slot_and_is_counted(people, client_for):
    skipped = write_triple(people["author"])
    write_triple(people["author"])
    assignment = claim_next_assignment(project=default_project(), reviewer=people["r1"])
    with pytest.raises(ReviewSkipRefused, match="reason is required"):
        skip_review(assignment=assignment, reason="  ")
    client = client_for(people["r1"])
    refused = client.post(reverse("curation:review_skip", args=[assignment.pk]), {"reason": ""})
    assert refused.status_code == 422 and "reason is required" in refused.content.decode()
    response = client.post(
        reverse("curation:review_skip", args=[assignment.pk]),
        {"reason": "outside my domain"},
        **HX_ITEM,
    )
    assert response.status_code == 200 and "went back to the pool" in response.content.decode()
    assert not ReviewAssignment.objects.filter(pk=assignment.pk).exists()
    revision = TripleRevision.objects.get(pk=skipped.current_revision_id)
    assert revision.assigned_count == 0
    assert ReviewSkip.objects.get(reviewer=people["r1"]).reason == "outside my domain"
    # never offered to them again, still offered to others
    mine = ReviewAssignment.objects.filter(reviewer=people["r1"]).values_list(
        "revision_id", flat=True
    )
    assert revision.pk not in mine
    assert (
        claim_next_assignment(project=default_project(), reviewer=people["r2"]).revision_id
        == revision.pk
    )
    assert count_review_skips_by_reviewer(project=default_project()) == [("rev1", 1)]
    assert AuditEvent.objects.filter(verb="review_skipped", actor=people["r1"]).exists()


def test_undo_and_skip_answer_each_role(client, client_for, people, lead, admin_user):
    write_triple(people["author"])
    assignment = claim_next_assignment(project=default_project(), reviewer=people["r1"])
    skip_url = reverse("curation:review_skip", args=[assignment.pk])
    undo_url = reverse("curation:review_undo")
    for url in (skip_url, undo_url):
        assert client.post(url, {"reason": "x"}).status_code == 302  # to the login page
        assert client_for(lead).post(url, {"reason": "x"}).status_code == 403
        assert client_for(admin_user).post(url, {"reason": "x"}).status_code == 403
    # another annotator's assignment is not theirs: 404
    assert client_for(people["r2"]).post(skip_url, {"reason": "x"}).status_code == 404
    assert client_for(people["r1"]).get(skip_url).status_code == 405
    nothing = client_for(people["r2"]).post(undo_url)
    assert nothing.status_code == 302 and nothing.url == reverse("curation:queue")


def test_an_undone_label_refills_the_label_form(client_for):
    domain = DomainFactory(slug="supply_chain")
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    claim_and_label(annotator, **{**BAD, "rationale": "cites a superseded version"})
    response = client_for(annotator).post(reverse("answers:undo"))
    html = response.content.decode()
    assert response.status_code == 200 and "Your last label was withdrawn" in html
    assert 'value="unacceptable" data-option="2" checked' in html
    assert 'value="misgrounded" data-option="3" checked' in html
    assert "cites a superseded version" in html
