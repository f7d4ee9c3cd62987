"""A submitted review answers with the next revision in the same htmx response."""

import pytest
from django.urls import reverse

from goldset.models import ReviewAssignment
from goldset.services.reviews import claim_next_assignment
from tests.factories import default_project
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db

HX_ITEM = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "review-item"}


def test_review_submit_returns_the_next_revision_then_the_recorded_review(make_user, client_for):
    author = make_user(Role.ANNOTATOR, username="author")
    reviewer = make_user(Role.ANNOTATOR, username="reviewer")
    write_triple(author, question="First question about key rotation?")
    write_triple(author, question="Second question about key rotation?")
    client = client_for(reviewer)
    first = claim_next_assignment(project=default_project(), reviewer=reviewer)
    response = client.post(
        reverse("curation:review", args=[first.pk]), {"verdict": "confirm"}, **HX_ITEM
    )
    following = ReviewAssignment.objects.exclude(pk=first.pk).get(reviewer=reviewer)
    html = response.content.decode()
    assert response.status_code == 200 and html.lstrip().startswith('<div id="review-item"')
    assert response["HX-Push-Url"] == reverse("curation:review", args=[following.pk])
    assert following.revision.question in html and "Review saved." in html
    last = client.post(
        reverse("curation:review", args=[following.pk]), {"verdict": "confirm"}, **HX_ITEM
    )
    assert "Your review is recorded" in last.content.decode()
    assert "Nothing else is waiting" in last.content.decode()
    assert "HX-Push-Url" not in last
