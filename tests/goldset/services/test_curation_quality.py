import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from goldset.exceptions import GoldsetError
from goldset.models import Source, TripleState
from goldset.selectors.curation import list_author_flag_rates, source_balance
from goldset.services.customers import grant_customer_permission
from goldset.services.quality import (
    allocate,
    draw_working_slice,
    gold_ids_by_domain,
    select_working_slice,
)
from tests.factories import BlockVersionFactory, CustomerFactory, DomainFactory
from tests.goldset.curation_support import review, write_triple
from tests.goldset.project_support import default_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def author(make_user):
    return make_user(Role.ANNOTATOR, username="author")


@pytest.fixture
def reviewer(make_user):
    return make_user(Role.ANNOTATOR, username="rev1")


def _triage_reviews(author, reviewer, *, confirms, flags):
    for i in range(confirms + flags):
        triple = write_triple(author, gold=False, question=f"Question {i}?")
        if i < flags:
            review(reviewer, triple, "flag", ["question_unrealistic"])
        else:
            review(reviewer, triple, "confirm")


def test_author_above_threshold_over_twenty_reviews_needs_calibration(author, reviewer):
    _triage_reviews(author, reviewer, confirms=14, flags=6)
    [rate] = list_author_flag_rates(project=default_project())
    assert (rate.username, rate.reviews, rate.flags) == ("author", 20, 6)
    assert rate.rate == Decimal("0.3")
    assert (rate.recent_reviews, rate.recent_flags) == (20, 6)
    assert rate.calibration_needed
    later = list_author_flag_rates(
        project=default_project(), now=timezone.now() + dt.timedelta(days=29)
    )[0]
    assert (later.recent_reviews, later.recent_rate) == (0, None)
    assert later.calibration_needed  # still above threshold over all 20 reviews


def test_alert_needs_the_minimum_reviews_and_a_rate_above_the_threshold(author, reviewer, settings):
    _triage_reviews(author, reviewer, confirms=13, flags=6)
    assert not list_author_flag_rates(project=default_project())[
        0
    ].calibration_needed  # 6/19 = 32 %, but only 19 reviews
    settings.CURATION_FLAG_RATE_MIN_REVIEWS = 10
    assert list_author_flag_rates(project=default_project())[0].calibration_needed
    settings.CURATION_FLAG_RATE_THRESHOLD = Decimal("0.40")
    assert not list_author_flag_rates(project=default_project())[0].calibration_needed


def _gold(author, reviewer, source, n, customer=None):
    for i in range(n):
        triple = write_triple(
            author, gold=False, source=source, customer=customer, question=f"{source} {i}?"
        )
        review(reviewer, triple, "confirm")
        assert triple.state == TripleState.GOLD


def test_source_balance_warns_when_a_source_drifts_more_than_ten_points(
    author, reviewer, admin_user
):
    customer = CustomerFactory()
    grant_customer_permission(customer=customer, actor=admin_user)
    _gold(author, reviewer, Source.PUBLIC_RFP, 5)
    _gold(author, reviewer, Source.CUSTOMER_PERMISSIONED, 3, customer)
    _gold(author, reviewer, Source.SYNTHETIC_HUMAN_VERIFIED, 2)
    shares = {s.group: s for s in source_balance(project=default_project())}
    assert [(g, s.count, s.share, s.target) for g, s in shares.items()] == [
        ("public_rfp", 5, 50, 40),
        ("customer_permissioned", 3, 30, 30),
        ("synthetic", 2, 20, 30),
    ]
    assert not any(s.warning for s in shares.values())  # exactly 10 points is not > 10
    _gold(author, reviewer, Source.PUBLIC_RFP, 2)
    shares = {s.group: s for s in source_balance(project=default_project())}
    assert shares["public_rfp"].warning and shares["synthetic"].warning
    assert not shares["customer_permissioned"].warning


def test_allocation_is_proportional_and_sums_to_the_size():
    assert allocate({"a": 60, "b": 30, "c": 10}, 10) == {"a": 6, "b": 3, "c": 1}
    assert allocate({"a": 1, "b": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}
    assert allocate({"a": 2, "b": 1}, 120) == {"a": 2, "b": 1}


def test_working_slice_is_stratified_by_domain_and_reproducible(author, reviewer, settings):
    settings.CURATION_WORKING_SLICE_SIZE = 5
    for slug, n in (("healthcare_ops", 6), ("federal_it", 4)):
        domain = DomainFactory(slug=slug)
        for i in range(n):
            version = BlockVersionFactory(block__document__domain=domain)
            triple = write_triple(author, gold=False, version=version, question=f"{slug} {i}?")
            review(reviewer, triple, "confirm")
    drawn = draw_working_slice(quarter="2026Q2", actor=author, seed=120)
    assert (drawn.size, drawn.gold_count, drawn.strata) == (
        5,
        10,
        {"federal_it": 2, "healthcare_ops": 3},
    )
    again = select_working_slice(gold_ids_by_domain(), size=5, seed=drawn.seed)
    assert sorted(pk for ids in again.values() for pk in ids) == drawn.triple_ids
    with pytest.raises(GoldsetError, match="already drawn"):
        draw_working_slice(quarter="2026Q2", actor=author)
    with pytest.raises(GoldsetError, match="look like"):
        draw_working_slice(quarter="2026-Q3", actor=author)
