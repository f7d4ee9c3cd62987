import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import AnswerRecord, Question
from goldset.services.adjudication import record_adjudication
from tests.factories import BlockFactory, BlockVersionFactory, DomainFactory
from tests.goldset.answers_helpers import BAD, GOOD, build_conflict_item, claim_and_label

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    domain = DomainFactory(slug="supply_chain")
    BlockVersionFactory(block=BlockFactory(block_id="blk-sc-nw-memo-02", document__domain=domain))
    return domain


QUESTION = {
    "question_id": "sc-1",
    "domain": "supply_chain",
    "task_family": "routing",
    "question": "Can ops approve expedite?",
    "flags": ["conflict"],
    "gold_evidence": [
        {"passage_id": "blk-sc-nw-memo-02", "role": "exception", "label": "sufficient"}
    ],
}


def upload(kind, text, name="file.jsonl"):
    return {"kind": kind, "file": SimpleUploadedFile(name, text.encode())}


def test_admin_imports_questions_then_answer_logs(
    client_for, admin_user, corpus, django_capture_on_commit_callbacks
):
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("answers:import"), upload("questions", json.dumps(QUESTION)))
    assert response.status_code == 302 and Question.objects.count() == 1
    answer = {
        "run_id": "run-a",
        "system_id": "sys-a",
        "question_id": "sc-1",
        "answer": "Needs budget control.",
        "citations": ["blk-sc-nw-memo-02@v1"],
        "retrieved_passages": [{"passage_id": "blk-sc-nw-memo-02", "rank": 1}],
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("answers:import"), upload("answers", json.dumps(answer)))
    assert response.status_code == 302 and AnswerRecord.objects.count() == 1
    runs = client.get(reverse("answers:runs")).content.decode()
    assert "sys-a" in runs and "run-a" in runs


def test_bad_upload_lists_line_and_field_and_stores_nothing(
    client_for, admin_user, corpus, django_capture_on_commit_callbacks
):
    bad = json.dumps({**QUESTION, "gold_evidence": [{"passage_id": "nope", "label": "sufficient"}]})
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("answers:import"), upload("questions", "\n" + bad))
    response = client.get(response.url)
    html = response.content.decode()
    assert response.status_code == 422
    assert "line 2: gold_evidence[0].passage_id: unknown passage &#x27;nope&#x27;" in html
    assert Question.objects.count() == 0


def test_admin_downloads_the_adjudication_export_as_jsonl(client_for, admin_user, lead):
    domain = DomainFactory(slug="supply_chain")
    record, (one, two, three) = build_conflict_item(domain)
    claim_and_label(one, **{**GOOD, "rationale": "memo"})
    claim_and_label(two, **{**GOOD, "grounding": "partially_grounded", "rationale": "partly"})
    claim_and_label(three, **BAD)
    record_adjudication(
        lead=lead,
        record=record,
        acceptability="acceptable",
        grounding="fully_grounded",
        rationale="memo governs",
    )
    response = client_for(admin_user).get(reverse("answers:export_download"))
    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson"
    assert "attachment" in response["Content-Disposition"]
    lines = b"".join(response.streaming_content).decode().splitlines()
    (row,) = [json.loads(line) for line in lines]
    assert row["item_id"] == record.public_id and row["adjudication"]["rationale"] == "memo governs"
    assert [label["rationale"] for label in row["labels"]] == ["memo", "partly", ""]


def test_django_admin_lists_records_with_their_system_for_admins_only(client_for, admin_user, lead):
    record, _ = build_conflict_item(DomainFactory(slug="supply_chain"))
    url = reverse("admin:goldset_answerrecord_changelist")
    html = client_for(admin_user).get(url).content.decode()
    assert record.public_id in html and record.run.run_id in html
    assert client_for(lead).get(url).status_code == 302  # not staff: sent to the admin login
