"""End to end (issue 28): a small RAG pipeline instrumented with the real OpenTelemetry SDK
exports through the real ``OTLPSpanExporter`` (protobuf; gzip for one flavour) to the live test
server, span by span as they end (``SimpleSpanProcessor``: the children arrive before their
root, so each trace is incomplete until its last request), in both conventions, and a third
trace arrives as an OTLP/JSON request. Each becomes an answer record in the project's labeling
queue; an annotator's and the lead's pages (a crawl of everything they reach in the project)
show no service, model, system or run name, which the admin's runs page does show; the label
page shows the passages the trace retrieved that are not in the corpus, with their text."""

import pytest
import requests
from django.test import Client
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from goldset.models import (
    AnswerRecord,
    Domain,
    Project,
    ReceivedTrace,
    System,
    UnmatchedPassage,
)
from goldset.selectors.projects import access_project
from goldset.services.labeling import claim_next_item
from goldset.services.projects import grant_role
from tests.factories import CalibrationResultFactory, UserFactory
from tests.goldset.otlp_support import JSON, json_body, otlp_url, pipeline_spans, write_token
from tests.goldset.rules.traces_support import (
    CHAT_MODEL,
    QUESTION,
    RERANK_MODEL,
    SERVICE,
    run_genai,
    run_openinference,
)
from tests.workbench.web.test_blinding_crawl import _crawl
from workbench.roles import Role

pytestmark = pytest.mark.postgres
SLUG = "prod-assistant"


@pytest.fixture
def crew(transactional_db):
    project = Project.objects.create(name="Production assistant", slug=SLUG)
    domain = Domain.objects.create(project=project, slug="controls", name="Security controls")
    people = {}
    for username, role in [("ops-admin", Role.ADMIN), ("ann-prod", Role.ANNOTATOR)]:
        people[role] = UserFactory(username=username)
        grant_role(project=project, user=people[role], role=role)
    people[Role.LEAD] = UserFactory(username="lead-prod")
    grant_role(project=project, user=people[Role.LEAD], role=Role.LEAD)
    CalibrationResultFactory(annotator=people[Role.ANNOTATOR], domain=domain)
    return project, people


def export(url: str, token: str, pipeline, *, compression=Compression.NoCompression):
    tracer_provider = TracerProvider(resource=Resource.create(SERVICE))
    exporter = OTLPSpanExporter(
        endpoint=url, headers={"Authorization": f"Bearer {token}"}, compression=compression
    )
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    run = pipeline(tracer_provider.get_tracer("policy-bot"))
    tracer_provider.shutdown()
    return run


def test_sdk_exports_become_blinded_records_in_the_labeling_queue(crew, live_server):
    project, people = crew
    url = live_server.url + otlp_url(project)
    token = write_token(people[Role.ADMIN], project=project)
    genai = export(url, token, run_genai)
    openinference = export(url, token, run_openinference, compression=Compression.Gzip)
    spans, from_json = pipeline_spans("openinference", question="Which controls review audits?")
    response = requests.post(
        url,
        data=json_body(spans),
        headers={"Content-Type": JSON, "Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert (response.status_code, response.json()) == (200, {})

    traces = ReceivedTrace.objects.filter(project=project)
    assert sorted(traces.values_list("status", flat=True)) == ["mapped"] * 3
    answers = set(AnswerRecord.objects.filter(project=project).values_list("answer", flat=True))
    assert answers == {genai.answer, openinference.answer, from_json.answer}
    assert {t.convention for t in traces} == {"genai", "openinference"}
    systems = set(System.objects.filter(project=project).values_list("system_id", flat=True))
    service = f"{SERVICE['service.name']}@{SERVICE['service.version']}+{CHAT_MODEL}"
    assert systems == {service}

    # the annotator claims one: the item page shows the question and the answer, blind
    annotator = people[Role.ANNOTATOR]
    claim = claim_next_item(project=project, annotator=annotator)
    assert claim.assignment is not None, claim.reason
    record = claim.assignment.record
    secrets = {
        SERVICE["service.name"],
        CHAT_MODEL,
        "gpt-4o-mini",
        RERANK_MODEL,
        service,
        *(t.record.run.run_id for t in traces),
    }
    client = Client()
    client.force_login(annotator)
    page = client.get(f"/p/{SLUG}/answers/items/{record.public_id}/").content.decode()
    assert record.answer in page and record.question.text in page
    assert not [s for s in secrets if s in page]
    # what its trace retrieved (no corpus here: none of it is in the corpus), with the text
    unmatched = list(UnmatchedPassage.objects.filter(record=record).order_by("rank"))
    assert unmatched and all(p.text in page for p in unmatched)
    assert page.count("not in the corpus") == len(unmatched)
    assert QUESTION in {r.question.text for r in AnswerRecord.objects.filter(project=project)}

    # everything the annotator and the lead reach in the project: no system identity
    for role in (Role.ANNOTATOR, Role.LEAD):
        user = people[role]
        client = Client()
        client.force_login(user)
        bodies = _crawl(client, SLUG, access_project(user=user, slug=SLUG).roles)
        assert len(bodies) >= 5, sorted(bodies)
        leaks = {url: [s for s in secrets if s in body] for url, (_, body) in bodies.items()}
        assert not {url: found for url, found in leaks.items() if found}
    admin = Client()
    admin.force_login(people[Role.ADMIN])
    assert service in admin.get(f"/p/{SLUG}/answers/runs/").content.decode()
