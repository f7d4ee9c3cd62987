"""Re-route preview page (admin) and promotion pages (lead/admin): access, confirmation flow,
blinding and query counts."""

from decimal import Decimal

import pytest
from django.urls import reverse

from goldset.models import AnswerRecord, Tier, Triple
from goldset.services.promotion import preview_reroute
from tests.factories import DomainFactory
from tests.goldset.answers_helpers import (
    SECRETS,
    assert_blind,
    build_conflict_item,
    default_project,
)
from tests.goldset.promotion_support import answer_record, set_rules, triage_triple
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def cases(admin_user, annotator):
    set_rules(admin_user)
    triple = triage_triple(annotator, task_type="factual_qa")
    record = answer_record(task_type="factual_qa")
    return triple, record


def _urls(triple, record):
    return [
        reverse("routing:reroute"),
        reverse("promotion:index"),
        reverse("promotion:triple", args=[triple.pk]),
        reverse("promotion:record", args=[record.public_id]),
    ]


def test_annotators_get_403_on_every_new_page(cases, client_for, annotator):
    c = client_for(annotator)
    for url in _urls(*cases):
        assert c.get(url).status_code == 403, url
        assert c.post(url, {"reason": "x", "token": "t"}).status_code == 403, url


def test_anonymous_users_are_sent_to_login(cases, client):
    for url in _urls(*cases):
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]


def test_leads_cannot_open_the_re_route_preview(cases, client_for, lead):
    assert client_for(lead).get(reverse("routing:reroute")).status_code == 403


def test_unknown_or_calibration_cases_are_404(cases, client_for, lead):
    calibration = answer_record(is_calibration=True)
    c = client_for(lead)
    assert c.get(reverse("promotion:record", args=[calibration.public_id])).status_code == 404
    assert c.get(reverse("promotion:record", args=["nope"])).status_code == 404
    assert c.get(reverse("promotion:triple", args=[999999])).status_code == 404


def test_preview_page_lists_changes_and_applies_only_on_confirmation(cases, client_for, admin_user):
    triple, record = cases
    set_rules(admin_user, gold_task_types=["factual_qa"])
    c = client_for(admin_user)
    html = c.get(reverse("routing:reroute")).content.decode()
    assert triple.external_id in html and record.public_id in html
    assert "task_type:factual_qa" in html and "Apply these 2 changes" in html
    assert Triple.objects.get(pk=triple.pk).tier == Tier.TRIAGE

    token = preview_reroute(project=default_project()).token
    response = c.post(reverse("routing:reroute"), {"token": token}, follow=True)
    assert "Re-routed 2 open case(s)" in response.content.decode()
    assert Triple.objects.get(pk=triple.pk).tier == Tier.GOLD
    assert AnswerRecord.objects.get(pk=record.pk).labels_required == 3


def test_a_stale_confirmation_shows_the_new_preview_and_changes_nothing(
    cases, client_for, admin_user
):
    triple, _ = cases
    set_rules(admin_user, gold_task_types=["factual_qa"])
    stale = preview_reroute(project=default_project()).token
    set_rules(admin_user, gold_task_types=["factual_qa"], adversarial_routes_gold=True)
    response = client_for(admin_user).post(reverse("routing:reroute"), {"token": stale})
    html = response.content.decode()
    assert response.status_code == 200
    assert (
        "changed since this preview" in html
        and preview_reroute(project=default_project()).token in html
    )
    assert Triple.objects.get(pk=triple.pk).tier == Tier.TRIAGE
    assert not AuditEvent.objects.filter(verb="rerouted").exists()


def test_routing_page_links_to_the_preview(client_for, admin_user):
    html = client_for(admin_user).get(reverse("routing:rules")).content.decode()
    assert reverse("routing:reroute") in html


def test_lead_promotes_a_triple_with_a_reason_and_sees_the_history(cases, client_for, lead):
    triple, _ = cases  # TRIAGE: the fixture's rules send nothing to GOLD
    c = client_for(lead)
    url = reverse("promotion:triple", args=[triple.pk])
    response = c.post(url, {"reason": ""})
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    assert Triple.objects.get(pk=triple.pk).tier == Tier.TRIAGE
    html = c.post(url, {"reason": "release gate R-12"}, follow=True).content.decode()
    assert "is GOLD now" in html and "release gate R-12" in html and "lead-test" in html
    assert Triple.objects.get(pk=triple.pk).routing_rule == "promoted"
    detail = c.get(reverse("curation:triple", args=[triple.pk])).content.decode()
    assert "promoted" in detail and url in detail


def test_the_author_sees_no_tier_link_on_the_triple_page(cases, client_for, annotator):
    triple, _ = cases
    html = client_for(annotator).get(reverse("curation:triple", args=[triple.pk])).content.decode()
    assert "tier-history-link" not in html


def test_record_page_and_list_are_blind(admin_user, client_for, lead):
    set_rules(admin_user)
    record, _ = build_conflict_item(DomainFactory(slug="logistics"))
    AnswerRecord.objects.filter(pk=record.pk).update(
        tier=Tier.TRIAGE, labels_required=1, routing_rule="default"
    )
    c = client_for(lead)
    page = c.get(reverse("promotion:record", args=[record.public_id])).content.decode()
    assert record.public_id in page
    assert_blind(page)
    listing = c.get(reverse("promotion:index"), {"kind": "answer_record"}).content.decode()
    assert record.public_id in listing
    assert_blind(listing)
    c.post(reverse("promotion:record", args=[record.public_id]), {"reason": "gate"})
    after = c.get(reverse("promotion:index"), {"kind": "answer_record"}).content.decode()
    assert_blind(after)
    event = AuditEvent.objects.get(verb="promoted")
    assert not any(secret in str(event.detail) for secret in SECRETS)


def test_batch_promotion_from_the_list(admin_user, annotator, client_for, lead):
    set_rules(admin_user)
    health = DomainFactory(slug="healthcare_ops")
    batch = [triage_triple(annotator, domain=health) for _ in range(3)]
    other = triage_triple(annotator)
    c = client_for(lead)
    url = reverse("promotion:index") + "?kind=triple&domain=healthcare_ops"
    html = c.get(url).content.decode()
    assert "3 promotable TRIAGE triples" in html
    token = html.split('name="token" value="')[1].split('"')[0]
    html = c.post(url, {"reason": "healthcare gate", "token": token}, follow=True).content.decode()
    assert "Promoted 3 case(s) to GOLD" in html
    assert set(Triple.objects.filter(tier=Tier.GOLD).values_list("pk", flat=True)) == {
        t.pk for t in batch
    }
    assert Triple.objects.get(pk=other.pk).tier == Tier.TRIAGE
    stale = c.post(url, {"reason": "again", "token": token}).content.decode()
    assert "No TRIAGE case matches" in stale


def test_a_stale_batch_token_promotes_nothing(admin_user, annotator, client_for, lead):
    set_rules(admin_user)
    triage_triple(annotator)
    c = client_for(lead)
    url = reverse("promotion:index") + "?kind=triple"
    token = c.get(url).content.decode().split('name="token" value="')[1].split('"')[0]
    triage_triple(annotator)
    html = c.post(url, {"reason": "gate", "token": token}).content.decode()
    assert "changed since you looked" in html
    assert not Triple.objects.filter(tier=Tier.GOLD).exists()


# ---------------------------------------------------------------- query counts


def _open_cases(n, annotator):
    for i in range(n):
        triage_triple(
            annotator,
            task_type="factual_qa",
            model_uncertainty=Decimal("0.1"),
            external_id=f"qc-{n}-{i}",
        )
        answer_record(task_type="factual_qa")


@pytest.mark.parametrize("n", [3, 30])
def test_re_route_preview_query_count_is_flat(
    n, admin_user, annotator, client_for, django_assert_max_num_queries
):
    set_rules(admin_user)
    _open_cases(n, annotator)
    set_rules(admin_user, gold_task_types=["factual_qa"])
    c = client_for(admin_user)
    with django_assert_max_num_queries(6):
        html = c.get(reverse("routing:reroute")).content.decode()
    assert f"Apply these {2 * n} changes" in html


@pytest.mark.parametrize("n", [3, 30])
def test_promotion_list_query_count_is_flat(
    n, admin_user, annotator, lead, client_for, django_assert_max_num_queries
):
    set_rules(admin_user)
    _open_cases(n, annotator)
    c = client_for(lead)
    for kind in ("triple", "answer_record"):
        with django_assert_max_num_queries(8):
            html = c.get(reverse("promotion:index"), {"kind": kind}).content.decode()
        assert f"{n} promotable TRIAGE" in html
