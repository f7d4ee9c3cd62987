"""End to end (issue 28), from production to gold: an application instrumented with the real
OpenTelemetry SDK exports through a ``BatchSpanProcessor`` and the real ``OTLPSpanExporter``
(protobuf) to the live test server. The project's sampling rule takes the trace a user gave a
thumbs-down and drops the other; the sampled record appears in an annotator's queue, blind
(everything the annotator and the lead reach in the project names no service or model), is
labeled on the item page, and the lead promotes it to a triple on the promotion page; the
triple's export line names its trace and sampling rule."""

import pytest
from django.test import Client
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from goldset.models import (
    AnswerRecord,
    Domain,
    LabelAssignment,
    Project,
    ReceivedTrace,
    Triple,
    TripleState,
)
from goldset.selectors.curation import gold_row
from goldset.selectors.projects import access_project
from goldset.services.projects import grant_role
from goldset.services.sampling import create_sampling_rule
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    CalibrationResultFactory,
    DocumentFactory,
    UserFactory,
)
from tests.goldset.answers_helpers import GOOD
from tests.goldset.otlp_support import otlp_url, write_token
from tests.goldset.rules.traces_support import (
    CHAT_MODEL,
    CORPUS,
    RERANK_MODEL,
    SERVICE,
    run_openinference,
)
from tests.workbench.web.test_blinding_crawl import _crawl
from workbench.roles import Role

pytestmark = pytest.mark.postgres
SLUG = "prod-to-gold"


@pytest.fixture
def crew(transactional_db):
    project = Project.objects.create(name="Production to gold", slug=SLUG)
    domain = Domain.objects.create(project=project, slug="controls", name="Security controls")
    for block_id, text in CORPUS.items():
        document = DocumentFactory(domain=domain, document_id=f"doc-{block_id}")
        BlockVersionFactory(block=BlockFactory(block_id=block_id, document=document), text=text)
    people = {}
    for username, role in [
        ("ops-admin", Role.ADMIN),
        ("lead-prod", Role.LEAD),
        ("ann-one", Role.ANNOTATOR),
        ("ann-two", Role.ANNOTATOR),
    ]:
        people[username] = UserFactory(username=username)
        grant_role(project=project, user=people[username], role=role)
        if role == Role.ANNOTATOR:
            CalibrationResultFactory(annotator=people[username], domain=domain)
    create_sampling_rule(
        project=project, actor=people["ops-admin"], name="unhappy-users", kind="feedback"
    )
    return project, people


def export(url: str, token: str, feedback: str, question: str):
    """One request of the application: the pipeline runs under a root span that records the
    user's feedback; the batch processor exports when the provider shuts down."""
    tracer_provider = TracerProvider(resource=Resource.create(SERVICE))
    exporter = OTLPSpanExporter(endpoint=url, headers={"Authorization": f"Bearer {token}"})
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = tracer_provider.get_tracer("policy-bot")
    with tracer.start_as_current_span("request") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", question)
        # summarization is not a GOLD task type: the record goes to TRIAGE (one label)
        root.set_attribute("goldset.task_type", "summarization")
        run = run_openinference(tracer, question=question)
        root.set_attribute("output.value", run.answer)
        root.set_attribute("goldset.feedback", feedback)
    tracer_provider.shutdown()
    return run


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_thumbs_down_trace_goes_from_the_sdk_to_a_gold_triple(crew, live_server):
    project, people = crew
    url = live_server.url + otlp_url(project)
    token = write_token(people["ops-admin"], project=project)
    sampled = export(url, token, "thumbs_down", "How are system accounts reviewed?")
    export(url, token, "thumbs_up", "Who reviews audit records?")

    traces = {t.status: t for t in ReceivedTrace.objects.filter(project=project)}
    assert set(traces) == {"mapped", "dropped"}
    trace = traces["mapped"]
    assert trace.sampled_by == "unhappy-users" and trace.sampling_rule.name == "unhappy-users"
    record = AnswerRecord.objects.get(project=project)
    assert record.answer == sampled.answer and record.tier == "tier_a"
    assert record.extra["trace"]["sampled_by"] == "unhappy-users"

    # the annotator's queue hands it out; the item page is blind; the label is given there
    secrets = {SERVICE["service.name"], CHAT_MODEL, RERANK_MODEL, record.run.run_id, "gpt-4o"}
    labelers = [people["ann-one"], people["ann-two"]]
    for annotator in labelers:  # a second label only when the weekly spot-check drew it
        record.refresh_from_db()
        if record.status != "labeling":
            break
        client = logged_in(annotator)
        claimed = client.post(f"/p/{SLUG}/answers/claim/")
        assert claimed.status_code == 302
        item = f"/p/{SLUG}/answers/items/{record.public_id}/"
        page = client.get(item).content.decode()
        assert record.answer in page and not [s for s in secrets if s in page]
        form = {k: v for k, v in GOOD.items() if v not in ("", [], None)}
        form["severe_safety"] = "no"
        assert client.post(item, form).status_code in (200, 302)
        assert LabelAssignment.objects.get(record=record, annotator=annotator).completed_at
    record.refresh_from_db()
    assert (record.status, record.final_acceptability) == ("final", "acceptable")

    # everything the annotators and the lead reach in the project: no system identity
    for username in ("ann-one", "lead-prod"):
        user = people[username]
        client = logged_in(user)
        bodies = _crawl(client, SLUG, access_project(user=user, slug=SLUG).roles)
        assert len(bodies) >= 5
        leaks = {u: [s for s in secrets if s in body] for u, (_, body) in bodies.items()}
        assert not {u: found for u, found in leaks.items() if found}

    # the lead promotes it to a triple in one step, from the promotion page
    lead = logged_in(people["lead-prod"])
    promote = f"/p/{SLUG}/promotion/records/{record.public_id}/triple/"
    page = lead.get(promote).content.decode()
    assert not [s for s in secrets if s in page]
    governing = record.retrieved.order_by("rank").first().block_version
    response = lead.post(
        promote,
        {
            "block_version": governing.pk,
            "expected_answer": record.answer,
            "source": "llm_generated",
        },
    )
    assert response.status_code == 302
    triple = Triple.objects.get(project=project)
    assert triple.state == TripleState.PENDING_REVIEW
    assert triple.current_revision.question == record.question.text
    assert triple.current_revision.expected_block_version == governing
    Triple.objects.filter(pk=triple.pk).update(
        state=TripleState.GOLD, resolution="single_review", human_verified_by=people["ann-one"]
    )
    metadata = gold_row(Triple.objects.get(pk=triple.pk))["metadata"]
    assert metadata["provenance"] == {
        "answer_record": record.public_id,
        "trace_id": trace.trace_id,
        "sampling_rule": "unhappy-users",
    }
