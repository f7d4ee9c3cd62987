import csv
import io

import pytest
from django.urls import reverse

from goldset.services.agreement import ratings_frame, spot_check_frame, store_agreement_snapshots
from tests.goldset.project_support import default_project
from tests.goldset.services.test_agreement import make_ratings

pytestmark = pytest.mark.django_db


def store(n_items, weeks=("2026-W44", "2026-W45", "2026-W46")):
    rows = [r for i, w in enumerate(weeks) for r in make_ratings(seed=i, n_items=n_items, week=w)]
    rows += [
        r for r in make_ratings(seed=7, n_items=n_items, task_type="factual_qa", week=weeks[-1])
    ]
    store_agreement_snapshots(
        project=default_project(),
        ratings=ratings_frame(rows),
        spot_checks=spot_check_frame([]),
        n_resamples=50,
    )
    return rows


@pytest.mark.parametrize("fixture", ["annotator"])
def test_annotators_cannot_open_the_quality_pages(request, client_for, fixture):
    c = client_for(request.getfixturevalue(fixture))
    for url in (
        reverse("quality:agreement"),
        reverse("quality:alerts"),
        reverse("quality:agreement-download", args=["csv"]),
    ):
        assert c.get(url).status_code == 403


def test_dashboard_without_figures_says_so(client_for, lead):
    html = client_for(lead).get(reverse("quality:agreement")).content.decode()
    assert "No agreement figures yet" in html


@pytest.mark.parametrize("n_items", [12, 600])  # ~100 vs ~5,000 labels per axis
def test_dashboard_is_served_from_snapshots_with_a_constant_query_count(
    client_for, lead, django_assert_max_num_queries, n_items
):
    store(n_items)
    c = client_for(lead)
    # pairs by display name, how stale the figures are, and time on item (three kinds of
    # decision, fast flags, display names: five more), the logins behind the alerts' links
    with django_assert_max_num_queries(21):
        response = c.get(
            reverse("quality:agreement"), {"protocol": "answer_label", "axis": "grounding"}
        )
    html = response.content.decode()
    assert response.status_code == 200
    assert '<svg class="chart"' in html and "Gold Krippendorff α by ISO week — Grounding" in html
    assert html.count("<polyline") >= 1 and "target 0.75" in html
    assert "2026-W46" in html and "Fleiss κ" in html


def test_the_csv_download_holds_the_stored_figures(client_for, lead):
    store(20)
    response = client_for(lead).get(
        reverse("quality:agreement-download", args=["csv"]),
        {"protocol": "answer_label", "axis": "acceptability", "metric": "krippendorff_alpha"},
    )
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert response["Content-Disposition"].endswith('agreement.csv"')
    assert (
        rows
        and {r["metric"] for r in rows} == {"krippendorff_alpha"}
        and {r["axis"] for r in rows} == {"acceptability"}
    )
    overall = [r for r in rows if not r["tier"]][0]
    assert 0 < float(overall["value"]) <= 1 and float(overall["ci_low"]) < float(overall["value"])


def test_the_json_download_and_an_unknown_format(client_for, admin_user):
    store(20)
    c = client_for(admin_user)
    data = c.get(
        reverse("quality:agreement-download", args=["json"]), {"metric": "cohen_kappa"}
    ).json()
    assert data and all(r["metric"] == "cohen_kappa" and " & " in r["subject"] for r in data)
    assert not any("|" in r["subject"] for r in data)  # display names, never user keys
    assert c.get("/quality/agreement.xml").status_code == 404


def test_recompute_button_needs_post_and_a_lead(
    client_for, lead, annotator, django_capture_on_commit_callbacks
):
    assert client_for(annotator).post(reverse("quality:recompute")).status_code == 403
    c = client_for(lead)
    assert c.get(reverse("quality:recompute")).status_code == 405
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = c.post(reverse("quality:recompute"))
    assert response.status_code == 302 and len(callbacks) == 1


# Seeded and computed once for the class's tests (each in a savepoint, rolled back after it):
# they only read the pages and downloads, and seeding costs more than that.
@pytest.fixture(scope="class")
def demo_with_figures(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.core.management import call_command
    from django.test import TestCase

    from goldset.services.agreement import recompute_agreement_snapshots
    from tests.conftest import shared_test_data

    tmp_path = tmp_path_factory.mktemp("dash-demo")
    with shared_test_data(django_db_blocker):
        with django_db_blocker.unblock():
            with TestCase.captureOnCommitCallbacks(execute=False):
                call_command(
                    "seed_demo", password="dash-demo-pass-1", credentials_file=tmp_path / "c.txt"
                )
            recompute_agreement_snapshots(project=default_project())
        yield


@pytest.mark.usefixtures("demo_with_figures")
class TestOnTheDemoWithFigures:
    def test_dashboard_shows_annotator_bars_tiers_cost_and_throughput(self, client_for):
        from django.contrib.auth import get_user_model

        from goldset.models import AnswerRecord, Triple

        lead = get_user_model().objects.get(username="lead")
        html = (
            client_for(lead)
            .get(
                reverse("quality:agreement"), {"protocol": "answer_label", "axis": "acceptability"}
            )
            .content.decode()
        )
        assert "Agreement with adjudicated label" in html and "ann1" in html
        gold = (
            Triple.objects.filter(project=default_project(), tier="tier_b").count()
            + AnswerRecord.objects.filter(
                project=default_project(), tier="tier_b", is_calibration=False
            ).count()
        )
        triage = (
            Triple.objects.filter(project=default_project(), tier="tier_a").count()
            + AnswerRecord.objects.filter(
                project=default_project(), tier="tier_a", is_calibration=False
            ).count()
        )
        assert f"{gold} GOLD × $0.40 + {triage} TRIAGE × $0.16" in html
        assert f"${gold * 0.40 + triage * 0.16:.2f}" in html

    def test_confusion_matrix_is_a_partial_for_htmx_and_part_of_the_page_otherwise(
        self, client_for
    ):
        from django.contrib.auth import get_user_model

        from goldset.models import Label

        users = get_user_model().objects
        lead, a, b = (
            users.get(username="lead"),
            users.get(username="ann1"),
            users.get(username="ann2"),
        )
        params = {
            "protocol": "answer_label",
            "axis": "acceptability",
            "a": a.username,
            "b": b.username,
        }
        c = client_for(lead)
        fragment = c.get(
            reverse("quality:agreement"), params, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="confusion"
        )
        body = fragment.content.decode()
        assert body.lstrip().startswith('<div id="confusion">') and "<html" not in body
        shared = Label.objects.filter(
            annotator=a,
            record__is_calibration=False,
            assignment__is_calibration=False,
            record__labels__annotator=b,
        ).count()
        assert f"{shared} items rated by both on acceptability" in body
        assert fragment["Vary"] and "HX-Request" in fragment["Vary"]
        full = c.get(reverse("quality:agreement"), params).content.decode()
        assert "<html" in full and f"{shared} items rated by both" in full
        assert f'<option value="{a.username}"' in full and f'<option value="{a.pk}"' not in full
        assert f"{a.pk}|" not in full and f"|{b.pk}" not in full  # pairs by name, not "pair 4|5"

    def test_confusion_and_workload_downloads(self, client_for, annotator):
        from django.contrib.auth import get_user_model

        users = get_user_model().objects
        lead, a, b = (
            users.get(username="lead"),
            users.get(username="ann1"),
            users.get(username="ann2"),
        )
        c = client_for(lead)
        params = {
            "protocol": "answer_label",
            "axis": "acceptability",
            "a": a.username,
            "b": b.username,
        }
        rows = c.get(reverse("quality:table-download", args=["confusion", "json"]), params).json()
        shown = c.get(
            reverse("quality:agreement"), params, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="confusion"
        ).content.decode()
        total = sum(r["count"] for r in rows)
        assert {(r["first"], r["second"]) for r in rows} == {
            (x, y) for x in ("acceptable", "unacceptable") for y in ("acceptable", "unacceptable")
        }
        assert f"{total} items rated by both" in shown
        workload = c.get(
            reverse("quality:table-download", args=["workload", "csv"])
        ).content.decode()
        assert workload.startswith("figure,what,tier,value") and "estimated_cost_usd" in workload
        assert (
            client_for(annotator)
            .get(reverse("quality:table-download", args=["workload", "csv"]))
            .status_code
            == 403
        )
