"""Answer labeling is scoped per project (issue 27, DESIGN.md §15): a member of project A never
gets B's records in the label queue, the claim or the adjudication queue; B's record URLs answer
404 through A's pages; B's members do the same work under ``/p/<b>/``; A's settings (audit
sample rate, κ gate) change A's behaviour and leave B untouched; a calibration set of B used in
A is refused; routing rules and imports are the project's own."""

import json

import pytest
from django.urls import reverse

from goldset.models import (
    Adjudication,
    AnswerRecord,
    CalibrationItem,
    CalibrationSet,
    Domain,
    FailureCategory,
    Label,
    LabelAssignment,
    Project,
    Question,
    RecordStatus,
    Run,
    System,
    Tier,
)
from goldset.selectors.answers import (
    access_record_for_adjudication,
    count_records_by_status,
    list_adjudication_queue,
)
from goldset.services.answer_imports import import_answer_logs, import_questions
from goldset.services.calibration import (
    CalibrationError,
    score_calibration,
    set_reference_label,
    start_calibration,
)
from goldset.services.labeling import claim_next_item, in_audit_sample, submit_label
from goldset.services.projects import grant_role
from goldset.services.routing import get_active_rules, route_case, update_routing_rules
from tests.factories import (
    AnswerRecordFactory,
    BlockFactory,
    BlockVersionFactory,
    CalibrationResultFactory,
    DocumentFactory,
    QuestionFactory,
    RunFactory,
    SystemFactory,
    UserFactory,
)
from tests.goldset.answers_helpers import GOOD, default_project
from workbench.roles import Role, forget_roles

pytestmark = pytest.mark.django_db

ADJUDICATION = {
    "acceptability": "acceptable",
    "grounding": "fully_grounded",
    "severe_safety": "no",
    "rationale": "The memo governs.",
}


def _form(fields: dict) -> dict:
    data = {**fields, "severe_safety": "yes" if fields.get("severe_safety") else "no"}
    return {k: v for k, v in data.items() if v not in ("", [], None)}


def _in(project: Project, name: str, *args) -> str:
    """``name``'s URL inside ``project`` (``/p/<slug>/…``)."""
    return f"/p/{project.slug}" + reverse(name, args=args or None)


def _member(project: Project, role: Role, username: str):
    user = UserFactory(username=username)
    grant_role(project=project, user=user, role=role)
    return user


def _record(project: Project, domain: Domain, tag: str, **over) -> AnswerRecord:
    system = SystemFactory(project=project, system_id=f"system-{tag}")
    return AnswerRecordFactory(
        project=project,
        question=QuestionFactory(project=project, domain=domain, question_id=f"q-{tag}"),
        run=RunFactory(project=project, run_id=f"run-{tag}", system=system),
        **over,
    )


@pytest.fixture
def world():
    """Projects A and B, each with a ``supply_chain`` domain and a GOLD record; an annotator
    and a lead of each, and an annotator of both (qualified in both domains)."""
    a = Project.objects.create(name="Customer bot", slug="proj-a")
    b = Project.objects.create(name="RFP responder", slug="proj-b")
    da = Domain.objects.create(project=a, slug="supply_chain", name="Supply chain (A)")
    db = Domain.objects.create(project=b, slug="supply_chain", name="Supply chain (B)")
    people = {
        "ann_a": _member(a, Role.ANNOTATOR, "ann-a"),
        "ann_b": _member(b, Role.ANNOTATOR, "ann-b"),
        "both": _member(a, Role.ANNOTATOR, "ann-both"),
        "lead_a": _member(a, Role.LEAD, "lead-a"),
        "lead_b": _member(b, Role.LEAD, "lead-b"),
        "admin_a": _member(a, Role.ADMIN, "admin-a"),
    }
    grant_role(project=b, user=people["both"], role=Role.ANNOTATOR)
    for name, domain in (("ann_a", da), ("ann_b", db), ("both", da)):
        CalibrationResultFactory(annotator=people[name], domain=domain)
    CalibrationResultFactory(annotator=people["both"], domain=db)
    return {
        "a": a,
        "b": b,
        "da": da,
        "db": db,
        "ra": _record(a, da, "a"),
        "rb": _record(b, db, "b"),
        **people,
    }


def _to_lead(*records):
    AnswerRecord.objects.filter(pk__in=[r.pk for r in records]).update(
        status=RecordStatus.NEEDS_ADJUDICATION, adjudication_reason="no_majority"
    )


def test_a_member_of_a_never_gets_bs_records_in_queue_claim_or_adjudication_queue(
    world, client_for
):
    a, b, ra, rb = world["a"], world["b"], world["ra"], world["rb"]
    # the claim, through the page: A's item only (B's is open and needs labels too)
    c = client_for(world["ann_a"])
    response = c.post(_in(a, "answers:claim"))
    assert response.status_code == 302
    assert response["Location"] == _in(a, "answers:item", ra.public_id)
    page = c.get(response["Location"]).content.decode()
    assert ra.public_id in page and rb.public_id not in page
    queue = c.get(_in(a, "answers:queue")).content.decode()
    assert rb.public_id not in queue and "Supply chain (B)" not in queue
    assert not LabelAssignment.objects.filter(record=rb).exists()
    # an annotator of both projects holds one open item per project, each in its own
    both = world["both"]
    in_a = claim_next_item(project=a, annotator=both)
    in_b = claim_next_item(project=b, annotator=both)
    assert (in_a.assignment.record_id, in_a.reason) == (ra.pk, "claimed")
    assert (in_b.assignment.record_id, in_b.reason) == (rb.pk, "claimed")
    assert claim_next_item(project=a, annotator=both).assignment.record_id == ra.pk
    # the adjudication queue: A's lead sees A's items only
    _to_lead(ra, rb)
    lead = world["lead_a"]
    forget_roles(lead)
    items = list_adjudication_queue(user=lead, project=a, include_done=True, size=25).items
    assert [r.public_id for r in items] == [ra.public_id]
    html = client_for(lead).get(_in(a, "answers:adjudication_queue")).content.decode()
    assert ra.public_id in html and rb.public_id not in html
    # the unprefixed paths are the default project's: neither A's nor B's items
    html = client_for(lead).get(reverse("answers:adjudication_queue")).content.decode()
    assert ra.public_id not in html and rb.public_id not in html


def test_bs_record_urls_404_for_as_members(world, client_for):
    a, b, rb = world["a"], world["b"], world["rb"]
    # ann-both holds B's record: through A's pages it is still not theirs
    held = claim_next_item(project=b, annotator=world["both"]).assignment
    assert held.record_id == rb.pk
    c = client_for(world["both"])
    assert c.get(_in(a, "answers:item", rb.public_id)).status_code == 404
    assert c.post(_in(a, "answers:item", rb.public_id), _form(GOOD)).status_code == 404
    assert c.post(_in(a, "answers:skip", rb.public_id), {"reason": "x"}).status_code == 404
    assert not Label.objects.filter(record=rb).exists()
    assert LabelAssignment.objects.filter(pk=held.pk).exists()  # not skipped either
    # a member of A only: B's pages are not there for them at all
    only_a = client_for(world["ann_a"])
    assert only_a.get(_in(b, "answers:queue")).status_code == 404
    assert only_a.get(_in(b, "answers:item", rb.public_id)).status_code == 404
    # leads: B's item through A's adjudication page, fetch-and-authorize and the POST
    _to_lead(rb)
    lead = client_for(world["lead_a"])
    assert lead.get(_in(a, "answers:adjudicate", rb.public_id)).status_code == 404
    assert lead.post(_in(a, "answers:adjudicate", rb.public_id), ADJUDICATION).status_code == 404
    assert lead.get(_in(b, "answers:adjudicate", rb.public_id)).status_code == 404
    assert not Adjudication.objects.filter(record=rb).exists()
    with pytest.raises(Exception) as raised:
        access_record_for_adjudication(user=world["lead_a"], project=a, public_id=rb.public_id)
    assert raised.type.__name__ == "Http404"
    # promotion: B's TRIAGE record through A's tier page
    AnswerRecord.objects.filter(pk=rb.pk).update(
        tier=Tier.TRIAGE, status=RecordStatus.LABELING, labels_required=1
    )
    assert lead.get(_in(a, "promotion:record", rb.public_id)).status_code == 404
    assert lead.post(_in(a, "promotion:record", rb.public_id), {"reason": "x"}).status_code == 404
    assert AnswerRecord.objects.get(pk=rb.pk).tier == Tier.TRIAGE


def test_bs_members_do_the_same_work_under_p_b(world, client_for):
    b, rb = world["b"], world["rb"]
    AnswerRecord.objects.filter(pk=rb.pk).update(labels_required=1, tier=Tier.TRIAGE)
    c = client_for(world["ann_b"])
    response = c.post(_in(b, "answers:claim"))
    assert response["Location"] == _in(b, "answers:item", rb.public_id)
    assert c.get(response["Location"]).status_code == 200
    response = c.post(_in(b, "answers:item", rb.public_id), _form(GOOD))
    assert response.status_code == 302
    assert response["Location"] == _in(b, "answers:queue")  # nothing else to label in B
    assert Label.objects.filter(record=rb, annotator=world["ann_b"]).exists()
    # the lead of B adjudicates B's items under /p/<b>/
    other = _record(b, world["db"], "b2")
    _to_lead(other)
    lead = client_for(world["lead_b"])
    assert other.public_id in lead.get(_in(b, "answers:adjudication_queue")).content.decode()
    assert lead.get(_in(b, "answers:adjudicate", other.public_id)).status_code == 200
    response = lead.post(_in(b, "answers:adjudicate", other.public_id), ADJUDICATION)
    assert response.status_code == 302
    assert AnswerRecord.objects.get(pk=other.pk).status == RecordStatus.ADJUDICATED
    # B's lead is not a member of A
    assert lead.get(_in(world["a"], "answers:adjudication_queue")).status_code == 404


def _label_three_times(project, domain, record, prefix):
    for i in range(3):
        user = _member(project, Role.ANNOTATOR, f"{prefix}{i}")
        CalibrationResultFactory(annotator=user, domain=domain)
        claimed = claim_next_item(project=project, annotator=user)
        assert claimed.assignment.record_id == record.pk, claimed.reason
        submit_label(assignment=claimed.assignment, **GOOD)
    record.refresh_from_db()
    return record


def test_as_audit_sample_rate_changes_as_routing_and_not_bs(world, settings):
    settings.AUDIT_SAMPLE_RATE = 0.0  # the installation's: nothing is drawn
    a, b = world["a"], world["b"]
    a.settings = {"AUDIT_SAMPLE_RATE": 1.0}
    a.save(update_fields=["settings"])
    ra = _label_three_times(a, world["da"], world["ra"], "aud-a")
    rb = _label_three_times(b, world["db"], world["rb"], "aud-b")
    assert (ra.status, ra.in_audit_sample, ra.adjudication_reason) == (
        RecordStatus.AUDIT,
        True,
        "audit_sample",
    )
    assert (rb.status, rb.in_audit_sample) == (RecordStatus.FINAL, False)
    assert in_audit_sample(rb.public_id, project=a)[0] is True
    assert in_audit_sample(rb.public_id, project=b)[0] is False
    # the audit item goes to A's leads, not B's
    forget_roles(world["lead_a"])
    forget_roles(world["lead_b"])
    queue_a = list_adjudication_queue(user=world["lead_a"], project=a, size=25).items
    queue_b = list_adjudication_queue(user=world["lead_b"], project=b, size=25).items
    assert [r.pk for r in queue_a] == [ra.pk] and queue_b == []


# Reference labels of a ready set: (grounding, severe safety); and what the tests' annotator
# answers (one grounding step off on the first item: linear-weighted κ 0.78, severe κ 1.0).
REFERENCE = [
    ("fully_grounded", False),
    ("partially_grounded", False),
    ("misgrounded", False),
    ("ungrounded", True),
]
ANSWERED = ["partially_grounded", "partially_grounded", "misgrounded", "ungrounded"]


def _axes(grounding: str, severe: bool) -> dict:
    if not severe:
        return {"acceptability": "acceptable", "grounding": grounding, "severe_safety": False}
    return {"acceptability": "unacceptable", "grounding": grounding, "severe_safety": True}


def _calibration_set(project, domain, tag):
    calibration_set = CalibrationSet.objects.create(project=project, domain=domain)
    items = []
    for i in range(len(REFERENCE)):
        record = _record(project, domain, f"{tag}-cal{i}", is_calibration=True)
        items.append(CalibrationItem.objects.create(calibration_set=calibration_set, record=record))
    return calibration_set, items


def _set_references(project, lead, items):
    for item, (grounding, severe) in zip(items, REFERENCE, strict=True):
        set_reference_label(project=project, lead=lead, item=item, **_axes(grounding, severe))


def _take_calibration(project, user, domain, items):
    answers = {item.record_id: a for item, a in zip(items, ANSWERED, strict=True)}
    for assignment in start_calibration(project=project, annotator=user, domain=domain):
        item = assignment.record.calibration_item
        severe = item.reference_severe_safety
        fields = {**GOOD, **_axes(answers[item.record_id], severe)}
        if severe:
            fields |= {"primary_failure": FailureCategory.OVER_ANSWER, "rationale": "Unsafe."}
        submit_label(assignment=assignment, **fields)
    return score_calibration(annotator=user, domain=domain)


def test_a_calibration_set_of_b_is_refused_in_a(world, client_for):
    a, b = world["a"], world["b"]
    b_only = Domain.objects.create(project=b, slug="rfp_security", name="RFP security")
    _, items = _calibration_set(b, b_only, "rfp")
    # the services refuse B's domain and set in A, nothing is sealed or assigned
    with pytest.raises(CalibrationError, match="another project"):
        start_calibration(project=a, annotator=world["both"], domain=b_only)
    with pytest.raises(CalibrationError, match="another project"):
        set_reference_label(
            project=a,
            lead=world["lead_a"],
            item=items[0],
            acceptability="acceptable",
            grounding="fully_grounded",
            severe_safety=False,
        )
    assert not LabelAssignment.objects.filter(record__calibration_item__in=items).exists()
    assert CalibrationItem.objects.get(pk=items[0].pk).reference_grounding == ""
    # the pages: B's domain and set are not found through A
    c = client_for(world["both"])
    assert c.post(_in(a, "answers:calibration_start", "rfp_security")).status_code == 404
    assert "rfp_security" not in c.get(_in(a, "answers:calibration")).content.decode()
    lead = client_for(world["lead_a"])
    assert lead.get(_in(a, "answers:calibration_set", "rfp_security")).status_code == 404
    url = _in(a, "answers:calibration_reference", "rfp_security", items[0].record.public_id)
    assert lead.get(url).status_code == 404
    assert "rfp_security" not in lead.get(_in(a, "answers:calibration_status")).content.decode()
    # in B the same set works for B's people
    _set_references(b, world["lead_b"], items)
    assert len(start_calibration(project=b, annotator=world["both"], domain=b_only)) == 4


def test_the_kappa_gate_is_the_projects(world):
    a, b = world["a"], world["b"]
    a.settings = {"KAPPA_GATE": 0.99}
    a.save(update_fields=["settings"])
    b.settings = {"KAPPA_GATE": 0.5}
    b.save(update_fields=["settings"])
    results = {}
    for project, domain, lead in ((a, world["da"], "lead_a"), (b, world["db"], "lead_b")):
        _, items = _calibration_set(project, domain, project.slug)
        _set_references(project, world[lead], items)
        user = _member(project, Role.ANNOTATOR, f"kappa-{project.slug}")
        results[project.slug] = _take_calibration(project, user, domain, items)
    a_result, b_result = results["proj-a"], results["proj-b"]
    assert (a_result.threshold, b_result.threshold) == (0.99, 0.5)
    assert a_result.kappa_grounding == pytest.approx(b_result.kappa_grounding)
    assert 0.5 < a_result.kappa_grounding < 0.99
    assert a_result.passed is False and b_result.passed is True


def test_routing_rules_are_the_projects_newest(world, client_for):
    a, b = world["a"], world["b"]
    assert get_active_rules(project=a).version == get_active_rules(project=b).version == 1
    update_routing_rules(
        project=a,
        actor=world["admin_a"],
        gold_task_types=[],
        uncertainty_threshold=get_active_rules(project=a).uncertainty_threshold,
        adversarial_routes_gold=True,
        gold_domains=[],
        note="TRIAGE by default in A",
    )
    assert get_active_rules(project=a).version == 2
    assert get_active_rules(project=b).version == 1
    assert route_case(project=a, task_type="rag_synthesis").tier == Tier.TRIAGE
    assert route_case(project=b, task_type="rag_synthesis").tier == Tier.GOLD
    assert get_active_rules(project=default_project()).version == 1
    html = client_for(world["admin_a"]).get(_in(a, "routing:rules")).content.decode()
    assert "TRIAGE by default in A" in html
    assert client_for(world["admin_a"]).get(_in(b, "routing:rules")).status_code == 404


def test_runs_and_counts_are_the_projects(world, client_for):
    a, b = world["a"], world["b"]
    html = client_for(world["admin_a"]).get(_in(a, "answers:runs")).content.decode()
    assert "run-a" in html and "run-b" not in html and "system-b" not in html
    assert count_records_by_status(project=a) == {RecordStatus.LABELING: 1}
    _record(b, world["db"], "b-more")
    _record(b, world["db"], "b-cal", is_calibration=True)
    assert count_records_by_status(project=b) == {RecordStatus.LABELING: 2}
    assert count_records_by_status(project=a) == {RecordStatus.LABELING: 1}
    export = client_for(world["admin_a"]).get(_in(a, "answers:export_download"))
    body = b"".join(export.streaming_content).decode()
    assert world["rb"].public_id not in body


def _corpus(project, domain, tag):
    document = DocumentFactory(project=project, domain=domain)
    block = BlockFactory(project=project, block_id=f"blk-{tag}", document=document)
    BlockVersionFactory(block=block, version=1, text=f"Policy text {tag}.")


def test_imports_create_in_the_project_and_look_up_by_project(world):
    a, b = world["a"], world["b"]
    b_only = Domain.objects.create(project=b, slug="rfp_security", name="RFP security")
    _corpus(b, b_only, "rfp")
    question = {
        "question_id": "rfp-0001",
        "domain": "rfp_security",
        "task_family": "security_questionnaire",
        "question": "Is data encrypted at rest?",
        "gold_evidence": [{"passage_id": "blk-rfp", "role": "policy", "label": "sufficient"}],
    }
    answer = {
        "run_id": "rfp-run-1",
        "system_id": "rfp-system",
        "question_id": "rfp-0001",
        "answer": "Yes, with AES-256.",
        "citations": ["blk-rfp"],
    }
    # A has neither the domain nor the block: refused there, nothing stored
    with pytest.raises(Exception, match="unknown domain"):
        import_questions(project=a, source=json.dumps(question), actor=None)
    import_questions(project=b, source=json.dumps(question), actor=None)
    assert Question.objects.get(question_id="rfp-0001").project_id == b.pk
    with pytest.raises(Exception, match="unknown question"):
        import_answer_logs(project=a, source=json.dumps(answer), actor=None)
    import_answer_logs(project=b, source=json.dumps(answer), actor=None)
    record = AnswerRecord.objects.get(question__question_id="rfp-0001")
    assert record.project_id == b.pk
    assert Run.objects.get(run_id="rfp-run-1").project_id == b.pk
    assert System.objects.get(system_id="rfp-system").project_id == b.pk


def test_import_commands_take_the_project(world, tmp_path):
    from django.core.management import call_command

    b = world["b"]
    b_only = Domain.objects.create(project=b, slug="rfp_privacy", name="RFP privacy")
    _corpus(b, b_only, "priv")
    path = tmp_path / "questions.jsonl"
    path.write_text(
        json.dumps(
            {
                "question_id": "priv-0001",
                "domain": "rfp_privacy",
                "task_family": "privacy",
                "question": "Who is the processor?",
                "gold_evidence": [{"passage_id": "blk-priv", "label": "sufficient"}],
            }
        )
    )
    call_command("import_questions", str(path), "--project", "proj-b")
    assert Question.objects.get(question_id="priv-0001").project_id == b.pk


def test_pages_print_the_projects_values(world, client_for):
    a, b = world["a"], world["b"]
    a.settings = {"KAPPA_GATE": 0.9, "AUDIT_SAMPLE_RATE": 0.25}
    a.save(update_fields=["settings"])
    both = client_for(world["both"])
    assert "at least 0.90 on grounding" in both.get(_in(a, "answers:calibration")).content.decode()
    assert "at least 0.70 on grounding" in both.get(_in(b, "answers:calibration")).content.decode()
    lead = client_for(world["lead_a"]).get(_in(a, "answers:adjudication_queue")).content.decode()
    assert "the 25 % audit sample" in lead
    lead = client_for(world["lead_b"]).get(_in(b, "answers:adjudication_queue")).content.decode()
    assert "the 5 % audit sample" in lead
