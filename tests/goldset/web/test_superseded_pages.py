"""Issue 12 item 1 in the pages: the write/revise/split forms ask for a reason, the triple and
review pages badge superseded text, Needs re-review lists every live superseded pin and the
freeze preview lists them. Every page answers every role as before."""

import pytest
from django.urls import reverse

from goldset.models import TripleRevision, TripleState
from goldset.services.reviews import claim_next_assignment
from tests.factories import BlockVersionFactory, default_project
from tests.goldset.curation_support import block_version, review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db
REASON = "Customers signed the 2024 wording."


@pytest.fixture
def team(make_user):
    return {
        "author": make_user(Role.ANNOTATOR, username="author"),
        "other": make_user(Role.ANNOTATOR, username="other"),
        "lead": make_user(Role.LEAD, username="lead"),
        "admin": make_user(Role.ADMIN, username="admin"),
        **{f"r{i}": make_user(Role.ANNOTATOR, username=f"rev{i}") for i in range(1, 4)},
    }


@pytest.fixture
def old():
    v1 = block_version()
    BlockVersionFactory(block=v1.block, version=2, text="Newer wording of the clause.")
    return v1


def _form(v, **extra):
    return {
        "question": "Which cipher protects data at rest?",
        "block_version": f"{v.block.block_id}@{v.version}",
        "expected_answer": "AES-256.",
        "task_type": "factual_qa",
        "difficulty": "standard",
        "source": "public_rfp",
        **extra,
    }


def test_writing_a_superseded_pin_without_a_reason_re_renders_with_the_field_error(
    client_for, team, old
):
    response = client_for(team["author"]).post(reverse("curation:write"), _form(old))
    assert response.status_code == 422  # form errors answer 422 (issue 24)
    errors = response.context["form"].errors["superseded_reason"]
    assert f"{old.block.block_id}@1 is superseded: version 2" in errors[0]
    assert not TripleRevision.objects.exists()


def test_writing_with_a_reason_stores_it_and_the_triple_page_shows_it(client_for, team, old):
    c = client_for(team["author"])
    response = c.post(reverse("curation:write"), _form(old, superseded_reason=REASON))
    assert response.status_code == 302
    revision = TripleRevision.objects.get()
    assert revision.superseded_reason == REASON
    page = c.get(response["Location"]).content.decode()
    assert "superseded-badge" in page and REASON in page and "Version 2 is the block" in page


def test_triple_page_with_a_superseded_pin_answers_each_role(client, client_for, team, old):
    triple = write_triple(team["author"], version=old, superseded_reason=REASON)
    url = reverse("curation:triple", args=[triple.pk])
    assert client.get(url).status_code == 302
    assert client_for(team["other"]).get(url).status_code == 404
    for who in ("author", "lead", "admin"):
        page = client_for(team[who]).get(url)
        assert page.status_code == 200 and REASON in page.content.decode()


def test_a_current_pin_shows_no_badge(client_for, team):
    triple = write_triple(team["author"])
    page = client_for(team["author"]).get(reverse("curation:triple", args=[triple.pk]))
    assert "superseded-badge" not in page.content.decode()


def test_review_page_badges_superseded_text_for_its_reviewer_only(client, client_for, team, old):
    write_triple(team["author"], version=old, superseded_reason=REASON)
    assignment = claim_next_assignment(project=default_project(), reviewer=team["r1"])
    url = reverse("curation:review", args=[assignment.pk])
    page = client_for(team["r1"]).get(url).content.decode()
    assert "superseded-badge" in page and REASON in page
    assert client.get(url).status_code == 302
    assert client_for(team["r2"]).get(url).status_code == 404
    assert client_for(team["lead"]).get(url).status_code == 403
    assert client_for(team["admin"]).get(url).status_code == 403


def test_review_page_shows_the_badge_when_a_version_arrives_during_review(client_for, team):
    triple = write_triple(team["author"])
    assignment = claim_next_assignment(project=default_project(), reviewer=team["r1"])
    url = reverse("curation:review", args=[assignment.pk])
    assert "superseded-badge" not in client_for(team["r1"]).get(url).content.decode()
    BlockVersionFactory(
        block=triple.current_revision.expected_block_version.block, version=2, text="v2"
    )
    assert "superseded-badge" in client_for(team["r1"]).get(url).content.decode()


def test_rereview_lists_every_live_superseded_pin_whatever_its_state(client_for, team, old):
    reasoned_gold = write_triple(team["author"], version=old, superseded_reason=REASON)
    review(team["r1"], reasoned_gold, "confirm")
    review(team["r2"], reasoned_gold, "confirm")
    pending = write_triple(team["author"], version=old, superseded_reason="pending one")
    current = write_triple(team["author"])
    assert reasoned_gold.state == TripleState.GOLD
    for who in ("lead", "admin"):
        page = client_for(team[who]).get(reverse("curation:rereview")).content.decode()
        assert reasoned_gold.external_id in page and pending.external_id in page
        assert current.external_id not in page
        assert REASON in page and "In review: its reviewers see the superseded badge" in page
    dashboard = client_for(team["lead"]).get(reverse("curation:dashboard")).content.decode()
    assert reasoned_gold.external_id in dashboard


def test_rereview_page_access(client, client_for, team):
    url = reverse("curation:rereview")
    assert client.get(url).status_code == 302
    assert client_for(team["author"]).get(url).status_code == 403
    assert client_for(team["lead"]).get(url).status_code == 200
    assert client_for(team["admin"]).get(url).status_code == 200


def test_lead_repins_a_gold_triple_pinned_to_superseded_text(client_for, team, old):
    triple = write_triple(team["author"], version=old, superseded_reason=REASON)
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    assert (
        client_for(team["author"]).post(reverse("curation:repin", args=[triple.pk])).status_code
        == 403
    )
    client_for(team["lead"]).post(reverse("curation:repin", args=[triple.pk]))
    triple.refresh_from_db()
    assert triple.state == TripleState.PENDING_REVIEW
    assert triple.current_revision.expected_block_version.version == 2
    page = client_for(team["lead"]).get(reverse("curation:rereview")).content.decode()
    assert triple.external_id not in page


@pytest.mark.parametrize("n", [4, 40])
def test_rereview_query_count_is_constant(client_for, team, old, django_assert_max_num_queries, n):
    for i in range(n):
        write_triple(
            team["author"], version=old, superseded_reason=f"reason {i}", question=f"Q{i}?"
        )
    c = client_for(team["lead"])
    with django_assert_max_num_queries(6):
        response = c.get(reverse("curation:rereview"))
    assert len(response.context["page"].object_list) == min(n, 25)


def test_split_needs_a_reason_for_a_superseded_part(client_for, team, old):
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "flag", ["answer_not_entailed"])
    other = block_version()
    data = {
        "question_1": "Which cipher?",
        "block_version_1": f"{old.block.block_id}@1",
        "expected_answer_1": "AES-256.",
        "question_2": "Key size?",
        "block_version_2": f"{other.block.block_id}@1",
        "expected_answer_2": "256 bits.",
    }
    c = client_for(team["author"])
    url = reverse("curation:split", args=[triple.pk])
    response = c.post(url, data)
    assert response.status_code == 422
    assert "is superseded" in response.context["form"].errors["superseded_reason"][0]
    assert c.post(url, {**data, "superseded_reason": REASON}).status_code == 302
    triple.refresh_from_db()
    assert triple.state == TripleState.SPLIT
    reasons = [c.current_revision.superseded_reason for c in triple.children.order_by("pk")]
    assert reasons == [REASON, ""]


def test_revise_needs_a_reason_for_a_superseded_pin(client_for, team, old):
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "flag", ["wrong_source_block"])
    c = client_for(team["author"])
    url = reverse("curation:revise", args=[triple.pk])
    data = {
        k: v for k, v in _form(old).items() if k in ("question", "block_version", "expected_answer")
    }
    assert c.post(url, data).context["form"].errors["superseded_reason"]
    assert c.post(url, {**data, "superseded_reason": REASON}).status_code == 302
    triple.refresh_from_db()
    assert triple.current_revision.superseded_reason == REASON


def _gold(team, version, **fields):
    triple = write_triple(team["author"], version=version, **fields)
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    return triple


def test_freeze_preview_lists_superseded_pins_and_the_admin_includes_them(client_for, team, old):
    current = _gold(team, block_version())
    reasoned = _gold(team, old, superseded_reason=REASON)
    c = client_for(team["admin"])
    url = reverse("exports:freeze")
    page = c.post(
        url, {"action": "preview"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="freeze-preview"
    ).content.decode()
    assert 'id="preview-superseded"' in page and reasoned.external_id in page and REASON in page
    assert "left out" in page and "Preview: 1 triple" in page
    included = c.post(url, {"action": "preview", "include_superseded": "on"}).content.decode()
    assert "Preview: 2 triples" in included and "<strong>included</strong>" in included
    response = c.post(url, {"action": "freeze"})
    assert response.status_code == 302
    version_page = c.get(response["Location"]).content.decode()
    assert reasoned.external_id in version_page and current.external_id not in version_page


def test_freeze_page_access(client, client_for, team):
    url = reverse("exports:freeze")
    assert client.get(url).status_code == 302
    assert client_for(team["author"]).get(url).status_code == 403
    assert client_for(team["lead"]).get(url).status_code == 403
    assert client_for(team["admin"]).get(url).status_code == 200


@pytest.mark.parametrize("motion", ["submit", "skip"])
def test_the_next_review_that_htmx_brings_badges_its_superseded_text(client_for, team, motion):
    """A submit or skip answers with the next revision's card: it reads the review page's own
    selector, so a superseded pin is badged there as on a reload of the page."""
    current = write_triple(team["author"])
    write_triple(team["author"], version=_superseded(), superseded_reason=REASON)
    first = claim_next_assignment(project=default_project(), reviewer=team["r1"])
    assert first.revision.triple_id == current.pk
    url = reverse(f"curation:{'review' if motion == 'submit' else 'review_skip'}", args=[first.pk])
    form = {"verdict": "confirm"} if motion == "submit" else {"reason": "Not my field."}
    response = client_for(team["r1"]).post(
        url, form, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="review-item"
    )
    assert response.status_code == 200 and "HX-Push-Url" in response
    page = response.content.decode()
    assert "superseded-badge" in page and REASON in page and "Version 2 is the block" in page


def _superseded():
    v1 = block_version()
    BlockVersionFactory(block=v1.block, version=2, text="Newer wording of the clause.")
    return v1


def test_the_review_that_undo_brings_back_badges_its_superseded_text(client_for, team):
    write_triple(team["author"], version=_superseded(), superseded_reason=REASON)
    assignment = claim_next_assignment(project=default_project(), reviewer=team["r1"])
    c = client_for(team["r1"])
    c.post(reverse("curation:review", args=[assignment.pk]), {"verdict": "confirm"})
    response = c.post(
        reverse("curation:review_undo"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="review-item"
    )
    assert response.status_code == 200 and "withdrawn" in response.content.decode()
    assert "superseded-badge" in response.content.decode()
