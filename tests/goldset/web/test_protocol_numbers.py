"""Protocol numbers have one home, goldset/conf.py: templates print the value in force (the
``{% protocol %}`` tag), so changing a tunable changes both what a page says and what the code
does. One test per rule changes its tunable with the ``settings`` fixture and checks both."""

import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse

from goldset.models import AgreementSnapshot, Tier
from goldset.selectors.agreement import list_agreement_alerts
from goldset.selectors.answers import domain_loads
from goldset.services.agreement import (
    ratings_frame,
    spot_check_frame,
    store_agreement_snapshots,
    summary_figures,
)
from goldset.services.labeling import in_audit_sample, plan_settlement
from goldset.services.reviews import draw_spot_checks
from tests.factories import AnswerRecordFactory, DomainFactory, default_project
from tests.goldset.answers_helpers import qualified_annotators
from tests.goldset.services.test_agreement import make_ratings

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
# A number in a template's text (tags and variables removed) that a protocol could set: a
# decimal threshold, a percentage, a seed. "95 %" is the confidence level of every interval.
NUMBER = re.compile(r"(?<![\w.#-])(0\.\d+|\d+(?:\.\d+)? ?%|seed \d+)")
ALLOWED = {"95 %", "100 %"}

pytestmark = pytest.mark.django_db


def _text(template: str) -> str:
    """The words a template itself writes: no tags, variables, comments or <code> examples."""
    return re.sub(r"{%.*?%}|{{.*?}}|{#.*?#}|<code>.*?</code>", " ", template, flags=re.S)


def test_no_template_holds_a_protocol_number():
    found = {
        f"{path.relative_to(TEMPLATES)}: {m.group(0)}"
        for path in TEMPLATES.rglob("*.html")
        for m in NUMBER.finditer(_text(path.read_text()))
        if m.group(0) not in ALLOWED
    }
    assert found == set()
    # the scan sees a literal when there is one
    assert NUMBER.search(_text("gold α &lt; 0.75, 12 % in two weeks (seed 9314)"))


def _alert_kinds(**snapshot):
    base = {
        "protocol": "answer_label",
        "axis": "acceptability",
        "tier": Tier.GOLD,
        "task_type": "",
        "domain": "",
        "week": "",
        "subject": "",
        "n_items": 50,
        "n_annotators": 3,
        "data_version": "v",
        "ci_low": None,
        "ci_high": None,
    }
    return {
        a.kind
        for a in list_agreement_alerts(
            project=default_project(), snapshots=[AgreementSnapshot(**{**base, **snapshot})]
        )
    }


def _page(client_for, user, name) -> str:
    response = client_for(user).get(reverse(name))
    assert response.status_code == 200
    return response.content.decode()


def test_the_kappa_gate_moves_the_pages_the_pair_alert_and_the_calibration(
    client_for, lead, annotator, settings
):
    pair = {"metric": "cohen_kappa", "value": 0.75, "subject": "1|2"}
    assert "gold_kappa_low" not in _alert_kinds(**pair)
    assert "κ &lt; 0.70 for an annotator pair" in _page(client_for, lead, "quality:alerts")
    settings.KAPPA_GATE = 0.8
    assert "gold_kappa_low" in _alert_kinds(**pair)
    assert "κ &lt; 0.80 for an annotator pair" in _page(client_for, lead, "quality:alerts")
    assert "is at least 0.80 on grounding" in _page(client_for, annotator, "answers:calibration")
    assert "after your κ reaches 0.80" in _page(client_for, annotator, "answers:queue")


def test_the_alpha_target_moves_the_alerts_page_and_the_alert(client_for, lead, settings):
    low = {"metric": "krippendorff_alpha", "value": 0.78, "task_type": "rag_synthesis"}
    assert "gold_alpha_low" not in _alert_kinds(**low)
    settings.AGREEMENT_ALPHA_TARGET = 0.8
    assert "gold_alpha_low" in _alert_kinds(**low)
    assert "gold α &lt; 0.80 for a task type" in _page(client_for, lead, "quality:alerts")


def test_the_spot_check_limit_moves_the_alerts_page_and_the_alert(client_for, lead, settings):
    weeks = ("2026-W44", "2026-W45")
    rows = [("triple_review", f"{w}-{i}", w, i >= 100) for w in weeks for i in range(1000)]
    store_agreement_snapshots(
        project=default_project(),
        ratings=ratings_frame([]),
        spot_checks=spot_check_frame(rows),
        n_resamples=10,
    )
    kinds = {a.kind for a in list_agreement_alerts(project=default_project())}
    assert "spot_check_disagreement" not in kinds  # 10 % is below 12 %
    settings.SPOT_CHECK_DISAGREEMENT_LIMIT = 0.08
    assert "spot_check_disagreement" in {
        a.kind for a in list_agreement_alerts(project=default_project())
    }
    assert "disagreement &gt; 8 % in two" in _page(client_for, lead, "quality:alerts")


def test_the_audit_sample_rate_and_seed_move_the_queue_page_and_the_draw(
    client_for, lead, settings
):
    ids = [f"{n:016x}" for n in range(2000)]
    default = [i for i in ids if in_audit_sample(i, project=default_project())[0]]
    assert 0.04 <= len(default) / len(ids) <= 0.06
    page = _page(client_for, lead, "answers:adjudication_queue")
    assert "the 5 % audit sample (seed 9314)" in page
    settings.AUDIT_SAMPLE_RATE, settings.AUDIT_SAMPLE_SEED = 0.5, 77
    drawn = [i for i in ids if in_audit_sample(i, project=default_project())[0]]
    assert 0.45 <= len(drawn) / len(ids) <= 0.55
    assert (
        in_audit_sample(ids[0], project=default_project())[1]
        == in_audit_sample(ids[0], seed=77, project=default_project())[1]
    )
    page = _page(client_for, lead, "answers:adjudication_queue")
    assert "the 50 % audit sample (seed 77)" in page


def test_the_answer_spot_check_rate_and_seed_move_the_draw(settings):
    from django.utils import timezone

    def plan(public_id):
        return plan_settlement(
            public_id=public_id,
            tier=Tier.TRIAGE,
            spot_check_seed=None,
            labels_required=1,
            labels=[("acceptable", "fully_grounded", False)],
            now=timezone.now(),
            project=default_project(),
        )

    ids = [f"{n:016x}" for n in range(400)]
    assert 0.05 <= sum(plan(i).drawn for i in ids) / len(ids) <= 0.15
    settings.ANSWER_SPOT_CHECK_RATE = 1.0
    assert all(plan(i).drawn for i in ids)
    settings.ANSWER_SPOT_CHECK_RATE = 0.0
    assert not any(plan(i).drawn for i in ids)


def test_the_load_tolerance_moves_the_queue_page_and_the_cap(client_for, settings):
    domain = DomainFactory(slug="supply_chain")
    for _ in range(30):
        AnswerRecordFactory(question__domain=domain)
    me, *_ = qualified_annotators(domain, 3)
    before = domain_loads(me, [domain.pk], project=default_project())[domain.pk]
    assert "Your share (fair + 10 %)" in _page(client_for, me, "answers:queue")
    settings.LABEL_LOAD_TOLERANCE = 0.5
    after = domain_loads(me, [domain.pk], project=default_project())[domain.pk]
    fair = before.total_slots / 3
    assert (before.cap, after.cap) == (int(fair * 1.1), int(fair * 1.5))
    page = _page(client_for, me, "answers:queue")
    assert "Your share (fair + 50 %)" in page and f"<td>{after.cap}</td>" in page


def test_the_triple_spot_check_rate_moves_the_page_and_the_draw(client_for, lead, settings):
    assert "a seeded 10 % of the TRIAGE" in _page(client_for, lead, "curation:spot_checks")
    settings.CURATION_SPOT_CHECK_RATE = Decimal("0.25")
    draw = draw_spot_checks(
        project=default_project(), iso_year=2026, iso_week=3, actor=lead, seed=5
    )
    assert draw.rate == Decimal("0.25")
    assert "a seeded 25 % of the TRIAGE" in _page(client_for, lead, "curation:spot_checks")


def test_the_agreement_seed_moves_the_dashboard_and_the_figures(client_for, lead, settings):
    frame = ratings_frame(make_ratings(n_items=30))
    first = summary_figures(frame, n_resamples=50)
    assert "Bootstrap 95 % CIs (seed 8821)" in _page(client_for, lead, "quality:agreement")
    settings.AGREEMENT_BOOTSTRAP_SEED = 1234
    assert summary_figures(frame, n_resamples=50) == summary_figures(
        frame, n_resamples=50, seed=1234
    )
    assert summary_figures(frame, n_resamples=50) != first
    assert "Bootstrap 95 % CIs (seed 1234)" in _page(client_for, lead, "quality:agreement")
