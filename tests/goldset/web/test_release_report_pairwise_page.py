"""The release report's pairwise section made from the releases page (issue 30: "a pairwise
section beside Table 5 — the ranking, win rates with CIs, agreement, position bias"): an admin
posts the form with a pairwise task on the report's gold version; the stored JSON, the
self-contained HTML and the report page carry the win rates with their CIs, Krippendorff's α
and Cohen's κ per reviewer pair, and each reviewer's share of "left" choices with its
binomial p, each equal to ``scoring.pairwise.analyse`` on the task's judgments read straight
from the rows. A task on another gold version is refused on the page (422, on the field)."""

import json
import re

import pytest
from django.template.defaultfilters import floatformat
from django.urls import reverse

from goldset.demo.seed import seed_demo
from goldset.models import GoldVersion, PairJudgment, ReleaseReport, Run
from scoring.pairwise import Judgment, analyse
from tests.factories import default_project
from tests.goldset.pairwise_support import judge_next, make_task, reviewers

pytestmark = pytest.mark.django_db

PLAN = (  # each reviewer's preferences (relative to A/B) in the queue's order
    ["a", "a", "b", "b", "tie", "a"],
    ["a", "b", "b", "a", "tie", "a"],
    ["b", "a", "b", "b", "both_unacceptable", "a"],
)


@pytest.fixture
def demo(settings, lead):
    settings.GOLDSET_EVALUATOR_RESAMPLES = 200
    seed_demo(password="pairwise-release-page-1")
    runs = list(
        Run.objects.filter(project=default_project(), records__is_calibration=False).distinct()
    )
    v2 = GoldVersion.objects.get(project=default_project(), number=2)
    task = make_task(
        runs,
        actor=lead,
        name="Release pairs",
        design="balanced",
        comparisons_per_question=1,
        gold_version=v2,
    )
    for person, plan in zip(reviewers(3, prefix="pw-relp"), PLAN, strict=True):
        for preference in plan:
            judge_next(person, preference, rationale="Because.")
    return {"runs": runs, "task": task}


def _expected(task):
    """``analyse`` on the task's judgments read straight from the rows: systems by their ids
    (as Table 5), reviewers as "Reviewer N" in the order of their ids (as the report)."""
    rows = list(
        PairJudgment.objects.filter(pair__task=task).select_related(
            "pair__question__domain", "pair__record_a__run__system", "pair__record_b__run__system"
        )
    )
    names = {pk: f"Reviewer {i}" for i, pk in enumerate(sorted({j.reviewer_id for j in rows}), 1)}
    judgments = []
    for j in rows:
        a = j.pair.record_a.run.system.system_id
        b = j.pair.record_b.run.system.system_id
        judgments.append(
            Judgment(
                question_id=j.pair.question.question_id,
                system_a=a,
                system_b=b,
                left=a if j.left == "a" else b,
                preference=j.preference,
                reviewer=names[j.reviewer_id],
                strength=j.strength or None,
                stratum=j.pair.question.domain.slug,
            )
        )
    return analyse(judgments)


def _same(got, want) -> bool:
    """Equal figures, or both undefined (None in the report's JSON)."""
    return got is None if want is None else got == pytest.approx(want)


def _table(html: str, element_id: str) -> str:
    start = html.index(f'id="{element_id}"')
    return html[start : html.index("</table>", start)]


def _f(value, digits=3) -> str:
    return floatformat(value, digits)


def test_a_report_made_on_the_releases_page_carries_the_pairwise_figures(
    demo, client_for, admin_user
):
    c = client_for(admin_user)
    form = c.get(reverse("evaluators:releases")).content.decode()
    assert "Release pairs (v2)" in form  # the task offered with its gold version
    response = c.post(
        reverse("evaluators:releases"),
        {
            "version": "2",
            "runs": [r.run_id for r in demo["runs"]],
            "pairwise_task": demo["task"].pk,
        },
    )
    report = ReleaseReport.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("evaluators:release", args=[report.pk])
    section = report.report["pairwise"]
    assert (section["task"], section["gold_version"]) == ("Release pairs", "v2")
    analysis = section["analysis"]
    expected = _expected(demo["task"])
    assert analysis["n_judgments"] == 18 == expected.n_judgments

    # win rates with their CIs (and P(B beats A)), pair of systems by pair of systems
    pairs = {(p["system_a"], p["system_b"]): p for p in analysis["pairs"]}
    assert len(pairs) == len(expected.pairs) >= 1
    for p in expected.pairs:
        got = pairs[(p.system_a, p.system_b)]
        assert (got["wins_a"], got["wins_b"], got["ties"]) == (p.wins_a, p.wins_b, p.ties)
        assert got["win_rate_a"] == p.win_rate_a
        assert (got["win_rate_a_ci"]["low"], got["win_rate_a_ci"]["high"]) == (
            p.win_rate_a_ci.low,
            p.win_rate_a_ci.high,
        )
        assert got["p_b_beats_a"] == pytest.approx(p.p_b_beats_a)
    # agreement: Krippendorff's α and Cohen's κ per reviewer pair
    agreement = analysis["agreement"]
    assert agreement["alpha"] is not None
    assert agreement["alpha"] == pytest.approx(expected.agreement.alpha)
    kappas = {(k["reviewer_a"], k["reviewer_b"]): k["kappa"] for k in agreement["kappa"]}
    assert len(kappas) == 3
    for k in expected.agreement.kappa:
        assert _same(kappas[(k.reviewer_a, k.reviewer_b)], k.kappa)
    assert any(v is not None for v in kappas.values())
    # position bias: overall and per reviewer, share of "left" choices with a binomial p
    bias = {b["reviewer"]: b for b in analysis["position_bias"]}
    assert set(bias) == {None, "Reviewer 1", "Reviewer 2", "Reviewer 3"}
    for b in expected.position_bias:
        got = bias[b.reviewer]
        assert (got["n_decisive"], got["n_left"]) == (b.n_decisive, b.n_left)
        assert _same(got["share_left"], b.share_left) and _same(got["pvalue"], b.pvalue)

    # the same figures in the JSON download, the self-contained HTML and on the page
    downloaded = json.loads(c.get(reverse("evaluators:release_json", args=[report.pk])).content)
    assert downloaded["pairwise"] == section
    html = c.get(reverse("evaluators:release_html", args=[report.pk])).content.decode()
    page = c.get(reverse("evaluators:release", args=[report.pk]))
    assert page.status_code == 200
    for where, text in (("html", html), ("page", page.content.decode())):
        assert (
            'id="pairwise-version">The pairwise task compares the questions of gold version v2.'
            in text
        )
        win_rates = _table(text, "pairwise-win-rates")
        for p in analysis["pairs"]:
            ci = p["win_rate_a_ci"]
            row = (
                f"<td>{p['system_a']}</td><td>{p['system_b']}</td><td>{p['n_judgments']}</td>"
                f"<td>{_f(p['win_rate_a'])}</td><td>{_f(ci['low'])} – {_f(ci['high'])}</td>"
            )
            assert row in win_rates, (where, row)
        alpha = f"Krippendorff's α {_f(agreement['alpha'])} over {agreement['n_items']} items"
        assert alpha in text.replace("&#x27;", "'"), where
        kappa_table = _table(text, "pairwise-kappas")
        for k in agreement["kappa"]:
            shown = "undefined" if k["kappa"] is None else _f(k["kappa"])
            row = f"<td>{k['reviewer_a']}</td><td>{k['reviewer_b']}</td><td>{shown}</td>"
            assert row in kappa_table, (where, row)
        bias_table = _table(text, "pairwise-position-bias")
        for b in analysis["position_bias"]:
            row = (
                f"<td>{b['reviewer'] or 'All reviewers'}</td><td>{b['n_decisive']}</td>"
                f"<td>{_f(b['share_left'])}</td><td>{_f(b['pvalue'], 4)}</td>"
            )
            assert row in bias_table, (where, row)
        assert re.search(r'id="pairwise-ranking"', text)


def test_a_task_on_another_gold_version_is_refused_on_the_page(demo, client_for, admin_user):
    response = client_for(admin_user).post(
        reverse("evaluators:releases"),
        {
            "version": "1",
            "runs": [r.run_id for r in demo["runs"]],
            "pairwise_task": demo["task"].pk,
        },
    )
    assert response.status_code == 422
    assert response.context["form"].errors["pairwise_task"] == [
        "pairwise task 'Release pairs' compares the questions of gold version v2, but this "
        "report is on v1: choose a pairwise task on v1 (or none)"
    ]
    assert "choose a pairwise task on v1" in response.content.decode()
    assert not ReleaseReport.objects.exists()
