"""The upload form's measures field, the job page's measure list and the compare page's
measures and Wilcoxon method (issue 12 item 10), for every role."""

import io

import pytest
from django.urls import reverse

from goldset.models import ImportJob, JobStatus, ScoringJob
from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(6)
    frozen = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(versions)],
        actor=admin_user,
    )
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


def run_file(version, *, shift=0, name="run.trec"):
    lines = [
        f"Q-{i} Q0 {version.blocks[(i + shift) % 6]} 1 2.0 s\n"
        f"Q-{i} Q0 {version.blocks[(i + 1) % 6]} 2 1.0 s"
        for i in range(6)
    ]
    upload = io.BytesIO(("\n".join(lines) + "\n").encode())
    upload.name = name
    return upload


def upload(client, version, file, *, name="bm25", metrics=""):
    return client.post(
        reverse("exports:jobs"),
        {"version": version.number, "name": name, "k": 10, "file": file, "metrics": metrics},
    )


@pytest.fixture
def two_jobs(client_for, admin_user, version, django_capture_on_commit_callbacks):
    admin = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        upload(admin, version, run_file(version), metrics="map,rprec,bpref,ndcg@20,hit@2")
        upload(
            admin,
            version,
            run_file(version, shift=3, name="dense.trec"),
            name="dense",
            metrics="map,ndcg@20,hit@2,recall@5",
        )
    a, b = ScoringJob.objects.order_by("pk")
    assert a.status == b.status == JobStatus.SUCCEEDED, (a.error, b.error)
    return a, b


def test_a_bad_measure_name_is_a_form_error_and_stores_nothing(client_for, admin_user, version):
    response = upload(client_for(admin_user), version, run_file(version), metrics="map,ndgc@10")
    html = response.content.decode()
    assert response.status_code == 422  # a refused upload form (issue 24)
    assert "unknown measure &#x27;ndgc@10&#x27;" in html and 'name="metrics"' in html
    assert not ImportJob.objects.exists() and not ScoringJob.objects.exists()


def test_the_job_page_and_downloads_list_the_chosen_measures(client_for, admin_user, two_jobs):
    a, _ = two_jobs
    admin = client_for(admin_user)
    page = admin.get(reverse("exports:job", args=[a.pk])).content.decode()
    measures = page.split('id="job-measures"')[1].split("</dd>")[0]
    assert [m.split("</code>")[0] for m in measures.split("<code>")[1:]] == [
        "map",
        "rprec",
        "bpref",
        "ndcg@20",
        "hit@2",
    ]
    aggregates = page.split('id="aggregates"')[1].split("</table>")[0]
    assert all(f"<td>{m}</td>" in aggregates for m in ("map", "rprec", "bpref", "ndcg@20"))
    assert "<td>recall@10</td>" not in aggregates
    csv_text = b"".join(
        admin.get(reverse("exports:job_download", args=[a.pk, "csv"])).streaming_content
    ).decode()
    assert csv_text.splitlines()[0] == "query_id,domain,task_type,bpref,hit@2,map,ndcg@20,rprec"


def test_the_compare_page_shows_the_shared_measures_and_the_wilcoxon_method(
    client_for, admin_user, two_jobs
):
    a, b = two_jobs
    admin = client_for(admin_user)
    url = reverse("exports:compare")
    html = admin.get(url, {"jobs": [a.pk, b.pk]}).content.decode()
    shared = html.split('id="compared-measures"')[1].split("</p>")[0]
    assert [m.split("</code>")[0] for m in shared.split("<code>")[1:]] == [
        "map",
        "ndcg@20",
        "hit@2",
    ]
    table = html.split('id="paired-tests"')[1].split("</table>")[0]
    assert "<td>rprec</td>" not in table and "<td>recall@5</td>" not in table
    assert '<td class="method">exact</td>' in table and "McNemar" in table
    assert 'id="wilcoxon-method">auto<' in html
    asymptotic = admin.get(url, {"jobs": [a.pk, b.pk], "method": "asymptotic"}).content.decode()
    assert '<td class="method">asymptotic</td>' in asymptotic
    assert admin.get(url, {"jobs": [a.pk, b.pk], "method": "bogus"}).status_code == 400


def test_the_compare_page_answers_each_role(
    client, client_for, annotator, lead, admin_user, two_jobs
):
    a, b = two_jobs
    url = reverse("exports:compare") + f"?jobs={a.pk}&jobs={b.pk}&method=exact"
    assert client.get(url).status_code == 302
    assert client_for(annotator).get(url).status_code == 403
    assert client_for(lead).get(url).status_code == 403
    assert client_for(admin_user).get(url).status_code == 200
