"""Issue 12 item 3 on the version page: the agreement behind the version (reviews before
resolution with CIs, answer-label α), for leads and admins only; versions frozen before keep
their figures, labelled for what they are."""

import pytest
from django.urls import reverse

from goldset.services.freeze import FreezeFilters, freeze_gold_version, store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def version(make_user, admin_user, settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 100
    author = make_user(Role.ANNOTATOR, username="author")
    reviewers = [make_user(Role.ANNOTATOR, username=f"rev{i}") for i in range(4)]
    for i in range(2):
        triple = write_triple(author, question=f"Q{i}?")
        review(reviewers[2 * i], triple, "confirm")
        review(reviewers[2 * i + 1], triple, "confirm")
    return freeze_gold_version(project=default_project(), filters=FreezeFilters(), actor=admin_user)


def test_version_page_shows_the_agreement_behind_the_version(client_for, lead, admin_user, version):
    for user in (lead, admin_user):
        html = client_for(user).get(reverse("exports:version", args=[version.number])).content
        html = html.decode()
        assert 'id="version-agreement"' in html and "Agreement at freeze" not in html
        assert 'id="agreement-triple-reviews"' in html and "Confirm 4" in html
        assert "undefined: every pairable rating has the same value" in html
        assert "no production answer labels at freeze time" in html
        assert "Bootstrap seed 8821, 100 resamples" in html


def test_version_page_answers_each_role(client, client_for, annotator, lead, admin_user, version):
    url = reverse("exports:version", args=[version.number])
    assert client.get(url).status_code == 302
    assert client_for(annotator).get(url).status_code == 403
    assert client_for(lead).get(url).status_code == 200
    assert client_for(admin_user).get(url).status_code == 200


def test_a_version_frozen_before_says_what_its_old_figures_were(client_for, admin_user):
    versions = make_gold_corpus(2)
    old = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(versions)],
        actor=admin_user,
        agreement={"reviews": 4, "percent_agreement": 1.0},
    )
    html = client_for(admin_user).get(reverse("exports:version", args=[old.number])).content
    assert "Recorded before issue 12" in html.decode() and "percent_agreement: 1.0" in html.decode()
