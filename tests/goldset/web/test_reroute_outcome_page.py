"""Issue 12 item 2 on the re-route preview page: the cases that resolve at once are named, for
the admin only (every role checked)."""

import pytest
from django.urls import reverse

from goldset.models import TripleState
from tests.goldset.promotion_support import review_directly, reviewers, set_rules, triage_triple

pytestmark = pytest.mark.django_db


@pytest.fixture
def demoting(admin_user, annotator):
    set_rules(admin_user, gold_task_types=["factual_qa"])
    confirmed = triage_triple(annotator, task_type="factual_qa")
    waiting = triage_triple(annotator, task_type="factual_qa")
    review_directly(reviewers(1)[0], confirmed, "confirm")
    set_rules(admin_user)
    return confirmed, waiting


def test_preview_page_names_the_cases_that_resolve_at_once(client_for, admin_user, demoting):
    confirmed, waiting = demoting
    c = client_for(admin_user)
    html = c.get(reverse("routing:reroute")).content.decode()
    assert 'id="reroute-resolving"' in html and "1 case resolves at once" in html
    assert f'id="resolves-triple-{confirmed.pk}"' in html
    assert "becomes gold at once (TRIAGE single review)" in html
    assert f'id="resolves-triple-{waiting.pk}"' not in html and "keeps collecting" in html
    token = c.get(reverse("routing:reroute")).context["preview"].token
    c.post(reverse("routing:reroute"), {"token": token})
    confirmed.refresh_from_db()
    waiting.refresh_from_db()
    assert (confirmed.state, waiting.state) == (TripleState.GOLD, TripleState.PENDING_REVIEW)


def test_nothing_resolving_shows_no_resolving_list(client_for, admin_user, annotator):
    set_rules(admin_user, gold_task_types=["factual_qa"])
    triage_triple(annotator, task_type="factual_qa")
    set_rules(admin_user)
    html = client_for(admin_user).get(reverse("routing:reroute")).content.decode()
    assert "Apply these 1 change" in html and 'id="reroute-resolving"' not in html


def test_preview_page_answers_each_role(client, client_for, annotator, lead, admin_user, demoting):
    url = reverse("routing:reroute")
    assert client.get(url).status_code == 302
    assert client_for(annotator).get(url).status_code == 403
    assert client_for(lead).get(url).status_code == 403
    assert client_for(admin_user).get(url).status_code == 200
