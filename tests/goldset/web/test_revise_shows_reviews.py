"""The revise and split pages show the reviews they answer (flags, entailment direction,
disagreement category, comment) to those who may discuss the triple (the author, the flagging
reviewer, leads and admins) and to nobody else; a revision still under review shows none."""

import pytest
from django.urls import reverse

from goldset.models import TripleState
from goldset.services.resolution import revise_triple
from tests.goldset.curation_support import review, write_triple

pytestmark = pytest.mark.django_db

COMMENT = "The block says 30 days, not 35; the answer overstates the retention."


@pytest.fixture
def in_discussion(team):
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm", comment="Looks right to me.")
    review(
        team["r2"],
        triple,
        "flag",
        ["answer_not_entailed", "wrong_source_block"],
        entailment_direction="overstated",
        disagreement_category="numeric_precision",
        comment=COMMENT,
    )
    triple.refresh_from_db()
    assert triple.state == TripleState.IN_DISCUSSION
    return triple


def _answered(html: str) -> str:
    start = html.index('id="answered-reviews"')
    return html[start : html.index("</section>", start)]


@pytest.mark.parametrize("page", ["curation:revise", "curation:split"])
@pytest.mark.parametrize("who", ["author", "r2", "lead", "admin"])
def test_the_parties_see_the_flags_and_comments(client_for, team, in_discussion, page, who):
    response = client_for(team[who]).get(reverse(page, args=[in_discussion.pk]))
    assert response.status_code == 200
    shown = _answered(response.content.decode())
    assert "Wrong source block, Answer not entailed" in shown
    assert "Overstated" in shown and "Numeric precision" in shown
    assert "30 days, not 35" in shown
    assert "Looks right to me." in shown  # the confirming review is part of the resolution
    assert "answer_not_entailed" not in shown and "numeric_precision" not in shown  # names


@pytest.mark.parametrize("page", ["curation:revise", "curation:split"])
def test_nobody_else_learns_the_reviews(client, client_for, team, in_discussion, page):
    url = reverse(page, args=[in_discussion.pk])
    for who in ("r1", "r3"):  # the confirming reviewer, an unrelated annotator
        response = client_for(team[who]).get(url)
        assert response.status_code == 404
        assert COMMENT not in response.content.decode()
    assert client.get(url).status_code == 302  # anonymous: to the login page


def test_a_revision_under_review_shows_no_reviews(client_for, team, in_discussion):
    v = in_discussion.current_revision.expected_block_version
    revise_triple(
        triple=in_discussion,
        actor=team["author"],
        question="How long are backups retained?",
        block_version=v,
        expected_answer="30 days.",
    )
    review(team["r3"], in_discussion, "flag", ["question_unrealistic"], comment="Still wrong.")
    in_discussion.refresh_from_db()
    assert in_discussion.state == TripleState.PENDING_REVIEW
    html = client_for(team["author"]).get(reverse("curation:revise", args=[in_discussion.pk]))
    shown = _answered(html.content.decode())
    assert "Still wrong." not in shown and "Question unrealistic" not in shown
    assert "No reviews." in shown


def test_the_triple_page_shows_the_entailment_direction_too(client_for, team, in_discussion):
    html = client_for(team["author"]).get(reverse("curation:triple", args=[in_discussion.pk]))
    body = html.content.decode()
    assert "Overstated" in body and "30 days, not 35" in body


def test_the_revise_page_costs_the_same_queries_for_more_reviews(
    client_for, team, in_discussion, django_assert_max_num_queries
):
    c = client_for(team["author"])
    url = reverse("curation:revise", args=[in_discussion.pk])
    c.get(url)
    with django_assert_max_num_queries(8) as captured:
        c.get(url)
    review_queries = [q for q in captured.captured_queries if "goldset_review" in q["sql"]]
    assert len(review_queries) <= 2  # may_discuss's check and the one list, not one per review
