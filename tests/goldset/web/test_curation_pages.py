"""The curation protocol through HTTP: authoring, blind keyboard review (page and htmx card),
discussion outcomes, leads' and admins' actions, and the bulk import page."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import (
    BlockVersion,
    Customer,
    ReviewAssignment,
    Triple,
    TripleState,
    WorkingSlice,
)
from goldset.services.resolution import mark_superseded_pins
from tests.factories import BlockVersionFactory
from tests.goldset.curation_support import block_version, review, write_triple
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "review-card"}


def _next(client):
    """POST "next item"; returns the review page URL it redirects to."""
    response = client.post(reverse("curation:next"))
    assert response.status_code == 302
    return response["Location"]


def test_author_writes_a_triple_with_a_pinned_block_version(client_for, team):
    v = block_version(text="Backups are retained for 35 days in a second region.")
    c = client_for(team["author"])
    found = c.get(reverse("curation:blocks"), {"q": "35 days", "target": "id_block_version"})
    assert f"{v.block.block_id}@1" in found.content.decode()
    response = c.post(
        reverse("curation:write"),
        {
            "question": "How long are backups retained?",
            "block_version": f"{v.block.block_id}@1",
            "expected_answer": "35 days.",
            "task_type": "factual_qa",
            "difficulty": "standard",
            "source": "public_rfp",
        },
    )
    triple = Triple.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "curation:triple", args=[triple.pk]
    )
    assert triple.current_revision.expected_block_version == v
    page = c.get(response["Location"]).content.decode()
    assert "task_type:factual_qa" in page and "Pending review" in page


def test_block_search_serves_only_the_results_to_htmx(client_for, team):
    block_version(text="Keys are rotated every 90 days.")
    c = client_for(team["author"])
    partial = c.get(
        reverse("curation:blocks"),
        {"q": "rotated"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="block-results",
    )
    html = partial.content.decode()
    assert html.lstrip().startswith('<div id="block-results">') and "<html" not in html
    assert "HX-Request" in partial["Vary"]


def test_write_form_names_a_bad_block_reference(client_for, team):
    response = client_for(team["author"]).post(
        reverse("curation:write"),
        {
            "question": "Q?",
            "block_version": "blk-nope@3",
            "expected_answer": "A.",
            "task_type": "factual_qa",
            "difficulty": "standard",
            "source": "public_rfp",
        },
    )
    assert response.status_code == 422  # form errors answer 422 (issue 24)
    assert "There is no version 3 of block &#x27;blk-nope&#x27;" in response.content.decode()
    assert not Triple.objects.exists()


def test_author_cannot_review_own_revision_over_http(client_for, team):
    triple = write_triple(team["author"])
    response = client_for(team["author"]).post(reverse("curation:next"), follow=True)
    assert "Nothing is waiting for your review" in response.content.decode()
    assert not ReviewAssignment.objects.filter(revision__triple=triple).exists()


def test_reviewer_never_sees_the_other_review_or_the_authors_history(client_for, team):
    earlier = write_triple(team["author"], question="Earlier question?")
    review(team["r3"], earlier, "flag", ["question_unrealistic"], comment="HISTORY-FLAG-COMMENT")
    review(team["r4"], earlier, "confirm")
    triple = write_triple(team["author"])
    c1, c2 = client_for(team["r1"]), client_for(team["r2"])
    url1, url2 = _next(c1), _next(c2)
    c1.post(
        url1,
        {
            "verdict": "flag",
            "flags": ["answer_not_entailed"],
            "entailment_direction": "overstated",
            "comment": "SECRET-R1-COMMENT",
        },
    )
    for html in (
        c2.get(url2).content.decode(),
        c2.post(url2, {"verdict": "confirm"}).content.decode(),
    ):
        assert "SECRET-R1-COMMENT" not in html
        assert "overstated)" not in html and "rev1" not in html
        assert "HISTORY-FLAG-COMMENT" not in html and "author" not in html.split("<main ")[1]
    triple.refresh_from_db()
    assert triple.state == TripleState.IN_DISCUSSION


def test_keyboard_review_form_and_htmx_card(client_for, team):
    write_triple(team["author"])
    c = client_for(team["r1"])
    url = _next(c)
    page = c.get(url).content.decode()
    assert 'data-submit-key="Enter"' in page and 'data-key="1"' in page and 'data-key="5"' in page
    invalid = c.post(url, {"verdict": "flag"}, **HTMX)
    assert invalid.status_code == 200 and "must name what is wrong" in invalid.content.decode()
    ok = c.post(url, {"verdict": "confirm", "comment": "fine"}, **HTMX)
    html = ok.content.decode()
    assert html.lstrip().startswith('<section class="card" id="review-card">')
    assert "Your review is recorded" in html
    again = c.post(url, {"verdict": "flag", "flags": ["question_unrealistic"]}, **HTMX)
    assert "Confirm" in again.content.decode()  # the double submit changed nothing
    assert AuditEvent.objects.filter(verb="revision_viewed", actor=team["r1"]).exists()


def test_two_confirmations_over_http_make_gold(client_for, team):
    triple = write_triple(team["author"])
    for who in ("r1", "r2"):
        c = client_for(team[who])
        c.post(_next(c), {"verdict": "confirm"})
    triple.refresh_from_db()
    assert (triple.state, triple.resolution) == (TripleState.GOLD, "consensus")
    page = (
        client_for(team["author"])
        .get(reverse("curation:triple", args=[triple.pk]))
        .content.decode()
    )
    assert "rev1" in page and "rev2" in page  # reviews are shown once resolved


def _to_discussion(team):
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(
        team["r2"], triple, "flag", ["answer_not_entailed"], disagreement_category="compound_claim"
    )
    return triple


def test_discussion_thread_posts_through_htmx(client_for, team):
    triple = _to_discussion(team)
    url = reverse("curation:message", args=[triple.pk])
    response = client_for(team["r2"]).post(
        url,
        {"body": "Key rotation is elsewhere."},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="discussion",
    )
    html = response.content.decode()
    assert (
        html.lstrip().startswith('<section class="card" id="discussion">')
        and "Key rotation is elsewhere." in html
    )
    page = client_for(team["r2"]).get(reverse("curation:triple", args=[triple.pk])).content.decode()
    assert "Key rotation is elsewhere." in page
    assert (
        client_for(team["r1"]).get(reverse("curation:triple", args=[triple.pk])).status_code == 404
    )


def test_revise_over_http(client_for, team):
    triple = _to_discussion(team)
    v = triple.current_revision.expected_block_version
    response = client_for(team["author"]).post(
        reverse("curation:revise", args=[triple.pk]),
        {
            "question": "Which cipher?",
            "block_version": f"{v.block.block_id}@{v.version}",
            "expected_answer": "AES-256.",
        },
    )
    assert response.status_code == 302
    triple.refresh_from_db()
    assert (triple.state, triple.current_revision.number) == (TripleState.PENDING_REVIEW, 2)


def test_reviewer_cannot_revise_but_can_drop(client_for, team):
    triple = _to_discussion(team)
    v = triple.current_revision.expected_block_version
    page = client_for(team["r2"]).post(
        reverse("curation:revise", args=[triple.pk]),
        {
            "question": "Q?",
            "block_version": f"{v.block.block_id}@{v.version}",
            "expected_answer": "A.",
        },
    )
    assert "Only the author or a lead can revise" in page.content.decode()
    client_for(team["r2"]).post(
        reverse("curation:drop", args=[triple.pk]), {"note": "unanswerable", "confirm": "true"}
    )
    triple.refresh_from_db()
    assert triple.state == TripleState.DROPPED


def test_split_into_three_over_http(client_for, team):
    triple = _to_discussion(team)
    versions = [block_version() for _ in range(3)]
    data = {}
    for i, v in enumerate(versions, start=1):
        data.update(
            {
                f"question_{i}": f"Part {i}?",
                f"block_version_{i}": f"{v.block.block_id}@1",
                f"expected_answer_{i}": f"Claim {i}.",
            }
        )
    response = client_for(team["author"]).post(reverse("curation:split", args=[triple.pk]), data)
    assert response.status_code == 302
    triple.refresh_from_db()
    assert triple.state == TripleState.SPLIT
    assert [
        c.current_revision.expected_block_version for c in triple.children.order_by("pk")
    ] == versions


def test_lead_repins_and_retires_from_the_rereview_page(client_for, team):
    a, b = write_triple(team["author"]), write_triple(team["author"])
    for t in (a, b):
        v2 = BlockVersionFactory(block=t.current_revision.expected_block_version.block, version=2)
        mark_superseded_pins(superseding_version_ids=[v2.pk])
    c = client_for(team["lead"])
    page = c.get(reverse("curation:rereview")).content.decode()
    assert a.external_id in page and "v1 → v2" in page
    c.post(reverse("curation:repin", args=[a.pk]))
    c.post(reverse("curation:retire", args=[b.pk]), {"note": "policy withdrawn", "confirm": "true"})
    a.refresh_from_db()
    b.refresh_from_db()
    assert (
        a.state == TripleState.PENDING_REVIEW
        and a.current_revision.expected_block_version.version == 2
    )
    assert b.state == TripleState.RETIRED


def test_dashboard_shows_calibration_needed_and_source_balance(client_for, team, settings):
    settings.CURATION_FLAG_RATE_MIN_REVIEWS = 2
    for i in range(2):
        t = write_triple(team["author"], gold=False, question=f"Q{i}?")
        review(team["r1"], t, "flag", ["question_unrealistic"])
    html = client_for(team["lead"]).get(reverse("curation:dashboard")).content.decode()
    assert "calibration session needed" in html and "author" in html
    assert 'id="source-balance"' in html and "Public RFP" in html


def test_lead_draws_a_working_slice_and_a_spot_check(client_for, team):
    t = write_triple(team["author"], gold=False)
    review(team["r1"], t, "confirm")
    c = client_for(team["lead"])
    response = c.post(reverse("curation:slices"), {"quarter": "2026Q3", "seed": "11"})
    assert response.status_code == 302
    assert WorkingSlice.objects.get().triple_ids == [t.pk]
    assert t.external_id in c.get(response["Location"]).content.decode()
    year, week, _ = t.current_revision.reviews.get().submitted_at.isocalendar()
    response = c.post(
        reverse("curation:spot_checks"), {"week": f"{year}-W{week:02d}", "seed": "5"}, follow=True
    )
    assert "1 of 1 TRIAGE revisions, seed 5" in response.content.decode()


def test_admin_creates_grants_and_revokes_a_customer(client_for, team):
    c = client_for(team["admin"])
    c.post(reverse("curation:customers"), {"name": "Acme Health"})
    customer = Customer.objects.get(slug="acme-health")
    c.post(reverse("curation:grant", args=[customer.slug]), {"note": "DPA signed"})
    triple = write_triple(team["author"], source="customer_permissioned", customer=customer)
    response = c.post(
        reverse("curation:revoke", args=[customer.slug]), {"note": "opted out"}, follow=True
    )
    assert "1 triples marked revoked" in response.content.decode()
    triple.refresh_from_db()
    assert triple.state == TripleState.REVOKED
    assert AuditEvent.objects.filter(
        verb="customer_permission_revoked", actor=team["admin"]
    ).exists()


def test_import_page_reports_line_numbered_errors_and_imports_good_files(
    client_for, team, django_capture_on_commit_callbacks
):
    v = block_version()
    row = {
        "question": "Q?",
        "expected_block": {"block_id": v.block.block_id, "version": 1},
        "expected_answer": "A.",
        "metadata": {
            "domain": v.block.document.domain.slug,
            "task_type": "factual_qa",
            "source": "public_rfp",
            "added_by": "lead",
        },
    }
    bad = (
        json.dumps(row)
        + "\n"
        + json.dumps({**row, "expected_block": {"block_id": v.block.block_id, "version": 9}})
    )
    c = client_for(team["lead"])
    with django_capture_on_commit_callbacks(execute=True):
        posted = c.post(
            reverse("curation:import"), {"file": SimpleUploadedFile("t.jsonl", bad.encode())}
        )
    page = c.get(posted.url)
    assert page.status_code == 422
    assert "line 2: expected_block: no block version" in page.content.decode()
    assert not Triple.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        c.post(
            reverse("curation:import"),
            {"file": SimpleUploadedFile("t.jsonl", json.dumps(row).encode())},
        )
    assert Triple.objects.get().author == team["lead"]
    assert BlockVersion.objects.count() == 1
