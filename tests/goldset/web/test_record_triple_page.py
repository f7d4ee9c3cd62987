"""The promotion-to-gold page (issue 28): a lead or an admin turns a labeled record into a triple
in one step; annotators are refused, non-members get a 404; the page is blind (no service or
model name); bad input names the field and stores nothing."""

import pytest

from goldset.models import Triple, TripleOrigin
from tests.factories import UserFactory, default_project
from tests.goldset.promotion_to_gold_support import corpus, trace_born_record
from tests.goldset.rules.traces_support import CHAT_MODEL, RERANK_MODEL, SERVICE

pytestmark = pytest.mark.django_db


@pytest.fixture
def labeled(admin_user):
    project = default_project()
    corpus(project)
    record, trace = trace_born_record(project, admin_user)
    return project, record, trace


def url(project, record) -> str:
    return f"/p/{project.slug}/promotion/records/{record.public_id}/triple/"


@pytest.mark.parametrize("fixture", ["lead", "admin_user"])
def test_leads_and_admins_promote_in_one_step(request, client_for, labeled, fixture):
    project, record, trace = labeled
    client = client_for(request.getfixturevalue(fixture))
    page = client.get(url(project, record)).content.decode()
    assert record.question.text in page and record.answer in page
    for secret in (SERVICE["service.name"], CHAT_MODEL, RERANK_MODEL, record.run.run_id):
        assert secret not in page
    governing = record.retrieved.order_by("rank").first().block_version
    response = client.post(
        url(project, record),
        {
            "block_version": governing.pk,
            "expected_answer": record.answer,
            "source": "llm_generated",
        },
    )
    triple = Triple.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(
        f"/curation/triples/{triple.pk}/"
    )
    assert TripleOrigin.objects.get().trace_id == trace.trace_id
    link = client.get(f"/p/{project.slug}/promotion/records/{record.public_id}/").content.decode()
    assert url(project, record) in link


def test_annotators_are_refused_and_outsiders_get_404(client_for, annotator, labeled):
    project, record, _ = labeled
    assert client_for(annotator).get(url(project, record)).status_code == 403
    assert client_for(annotator).post(url(project, record), {}).status_code == 403
    outsider = client_for(UserFactory(username="outsider"))
    assert outsider.get(url(project, record)).status_code == 404
    assert not Triple.objects.exists()


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"block_version": "999999"}, "block_version"),
        ({"expected_answer": ""}, "expected_answer"),
        ({"source": "customer_permissioned"}, "source"),
    ],
)
def test_bad_input_names_the_field(client_for, lead, labeled, data, named):
    project, record, _ = labeled
    governing = record.retrieved.order_by("rank").first().block_version
    form = {"block_version": governing.pk, "expected_answer": "An answer.", "source": "public_rfp"}
    response = client_for(lead).post(url(project, record), form | data)
    assert response.status_code == 200
    assert f'id="id_{named}_error"' in response.content.decode()
    assert not Triple.objects.exists()


def test_a_record_still_collecting_labels_is_refused_with_the_reason(client_for, lead, admin_user):
    project = default_project()
    corpus(project)
    record, _ = trace_born_record(project, admin_user, status="labeling", acceptability="")
    governing = record.retrieved.order_by("rank").first().block_version
    form = {"block_version": governing.pk, "expected_answer": "x", "source": "public_rfp"}
    response = client_for(lead).post(url(project, record), form)
    assert response.status_code == 200
    assert "only a labeled record" in response.content.decode()
    assert not Triple.objects.exists()
