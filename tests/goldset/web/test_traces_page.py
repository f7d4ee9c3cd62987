"""The traces page (admins): counts by status and the latest traces with their reasons and
records, in the project of the URL; annotators and leads are refused, non-members get a 404."""

import pytest
from django.test import Client

from goldset.models import Domain, Project, ReceivedTrace, TraceStatus
from tests.factories import UserFactory, default_project
from tests.goldset.otlp_support import pipeline_spans, post, protobuf_body, write_token

pytestmark = pytest.mark.django_db
URL = "/p/{slug}/traces/"


@pytest.fixture
def received(client, admin_user, django_capture_on_commit_callbacks):
    """One trace mapped and one rejected (no domain in a project of two) in the default project,
    and a rejected trace in another project."""
    project = default_project()
    Domain.objects.create(project=project, slug="controls", name="Controls")
    token = write_token(admin_user)
    mapped, _ = pipeline_spans("openinference")
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, project, protobuf_body(mapped), token=token).status_code == 200
    Domain.objects.create(project=project, slug="audit", name="Audit")
    rejected, _ = pipeline_spans("genai", question="Which controls review audit records?")
    with django_capture_on_commit_callbacks(execute=True):
        assert post(client, project, protobuf_body(rejected), token=token).status_code == 200
    other = Project.objects.create(name="Other", slug="other-bot")
    ReceivedTrace.objects.create(
        project=other, trace_id="f" * 32, status=TraceStatus.REJECTED, reason="OTHER-PROJECT"
    )
    return project


def test_admins_see_counts_reasons_and_records(client_for, admin_user, received):
    html = client_for(admin_user).get(URL.format(slug=received.slug)).content.decode()
    mapped = ReceivedTrace.objects.get(project=received, status="mapped")
    rejected = ReceivedTrace.objects.get(project=received, status="rejected")
    assert mapped.record.public_id in html and mapped.trace_id in html
    assert rejected.trace_id in html and "goldset.domain" in html
    assert "Mapped to an answer record</a> 1" in html and "Rejected</a> 1" in html
    assert "OTHER-PROJECT" not in html
    only = client_for(admin_user).get(URL.format(slug=received.slug) + "?status=rejected")
    assert mapped.trace_id not in only.content.decode()


@pytest.mark.parametrize("fixture", ["annotator", "lead"])
def test_annotators_and_leads_are_refused(request, client_for, fixture, received):
    user = request.getfixturevalue(fixture)
    assert client_for(user).get(URL.format(slug=received.slug)).status_code == 403


def test_non_members_get_404_and_anonymous_callers_the_login(client_for, received):
    outsider = UserFactory(username="outsider")
    assert client_for(outsider).get(URL.format(slug=received.slug)).status_code == 404
    response = Client().get(URL.format(slug=received.slug))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_admins_read_a_traces_spans_as_received_in_its_project_only(
    client_for, admin_user, received
):
    mapped = ReceivedTrace.objects.get(project=received, status="mapped")
    client = client_for(admin_user)
    html = client.get(URL.format(slug=received.slug) + f"{mapped.trace_id}/").content.decode()
    assert "openinference.span.kind" in html and "retrieval.documents.0.document.id" in html
    assert mapped.record.public_id in html and html.count('class="card" id="span-') == 4
    other = ReceivedTrace.objects.exclude(project=received).get()
    assert client.get(URL.format(slug=received.slug) + f"{other.trace_id}/").status_code == 404
    assert client.get(URL.format(slug="other-bot") + f"{other.trace_id}/").status_code == 200
