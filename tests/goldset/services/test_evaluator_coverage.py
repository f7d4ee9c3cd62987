"""Issue 24 in the app: a judge at 70 % coverage is reported with its coverage, its figures on
the records it judged, and is not trusted (EVALUATOR_MIN_COVERAGE); the page says so."""

import pytest
from django.urls import reverse

from goldset.services.evaluators import (
    compute_evaluator_report,
    create_evaluator,
    evaluator_key,
    import_evaluator_outputs,
)
from tests.factories import default_project
from tests.goldset.evaluators_helpers import build_gold_tier, copying_outputs

pytestmark = pytest.mark.django_db


@pytest.fixture
def partial_judge(settings):
    settings.GOLDSET_EVALUATOR_RESAMPLES = 200
    records = build_gold_tier(20)
    judge = create_evaluator(
        project=default_project(), name="skipper", version="1", kind="llm_judge", model_id="m"
    )
    import_evaluator_outputs(
        evaluator=judge, source=copying_outputs(records[:14]), source_name="s.jsonl"
    )
    return judge


def _row(snapshot, judge):
    return next(r for r in snapshot.report["rows"] if r["name"] == evaluator_key(judge.pk))


def test_judge_at_70_percent_coverage_is_not_trusted(partial_judge):
    snapshot = compute_evaluator_report(project=default_project())
    row = _row(snapshot, partial_judge)
    assert (row["n"], row["n_items"]) == (14, 20)
    assert row["coverage"] == pytest.approx(0.70)
    assert row["correct_decisions"]["value"] == pytest.approx(1.0)  # perfect where it judged
    assert row["correct_decisions"]["n"] == 14
    for axis in row["axes"]:
        assert axis["kappa"]["value"] == pytest.approx(1.0)
        assert not axis["trusted"] and axis["vote_weight"] == 0.0
        assert "coverage 70% below 90%" in axis["trust_reason"]
    assert snapshot.report["settings"]["min_coverage"] == 0.90


def test_min_coverage_is_the_tunable(partial_judge, settings):
    settings.EVALUATOR_MIN_COVERAGE = 0.70
    row = _row(compute_evaluator_report(project=default_project()), partial_judge)
    assert all(axis["trusted"] for axis in row["axes"])


def test_report_page_shows_coverage_denominators_and_vote_rule(partial_judge, client, lead):
    compute_evaluator_report(project=default_project())
    client.force_login(lead)
    page = client.get(reverse("evaluators:report")).content.decode()
    assert "14 of 20" in page and "70.0 %" in page
    assert "coverage ≥ 90.0 % of the gold tier" in page
    assert "computed on the records that evaluator judged" in page
    assert "coverage 70% below 90%" in page
    assert "not trusted</strong> on an axis votes with weight 0" in page
