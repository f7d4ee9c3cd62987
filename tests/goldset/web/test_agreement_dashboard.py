import csv
import io

import pytest
from django.urls import reverse

from goldset.services.agreement import ratings_frame, spot_check_frame, store_agreement_snapshots
from tests.goldset.services.test_agreement import make_ratings

pytestmark = pytest.mark.django_db


def store(n_items, weeks=("2026-W44", "2026-W45", "2026-W46")):
    rows = [r for i, w in enumerate(weeks) for r in make_ratings(seed=i, n_items=n_items, week=w)]
    rows += [
        r for r in make_ratings(seed=7, n_items=n_items, task_type="factual_qa", week=weeks[-1])
    ]
    store_agreement_snapshots(
        ratings=ratings_frame(rows), spot_checks=spot_check_frame([]), n_resamples=50
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
    with django_assert_max_num_queries(7):
        response = c.get(
            reverse("quality:agreement"), {"protocol": "answer_label", "axis": "grounding"}
        )
    html = response.content.decode()
    assert response.status_code == 200
    assert '<svg class="chart"' in html and "Gold Krippendorff α by ISO week — grounding" in html
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
    assert data and all(r["metric"] == "cohen_kappa" and "|" in r["subject"] for r in data)
    assert c.get("/quality/agreement.xml").status_code == 404
