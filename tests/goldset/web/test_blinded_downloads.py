"""A lead's downloads of a frozen version hold only the fields declared for leads in
workbench.access: the adjudication export names no system, run, model, configuration, prompt
hash, latency or cost, and people appear as the version's pseudonyms, never ids or usernames;
an admin's download keeps everything."""

import json

import pytest
from django.urls import reverse

from goldset.models import ExportFormat, Pseudonym
from goldset.rules.blinding import SYSTEM_FIELDS
from goldset.services.adjudication import record_adjudication
from goldset.services.freeze import store_frozen_version
from goldset.services.probe_exports import render_adjudication_export
from tests.factories import (
    AnswerRecordFactory,
    DomainFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from tests.goldset.answers_helpers import BAD, GOOD, claim_and_label, qualified_annotators

pytestmark = pytest.mark.django_db


def _legacy_adjudication(version):
    """A file as frozen before pseudonyms: reviewer-<pk>, and system fields a lead must not get."""
    lines = list(render_adjudication_export(version))
    by_label = dict(Pseudonym.objects.values_list("label", "user_id"))
    for line in lines:
        row = json.loads(line)
        for label in [*row["labels"], row["adjudication"]]:
            label["reviewer"] = f"reviewer-{by_label[label['reviewer']]}"
        row.update({"model": "gpt-canary", "config": {"k": 5}, "prompt_hash": "abc", "cost": 1})
        yield (json.dumps(row, sort_keys=True) + "\n").encode()


@pytest.fixture
def frozen(admin_user, lead):
    domain = DomainFactory(slug="supply_chain")
    record = AnswerRecordFactory(
        question__domain=domain, run__run_id="RUN-CANARY", run__system__system_id="SYS-CANARY"
    )
    people = qualified_annotators(domain, 3)
    claim_and_label(people[0], **GOOD)
    claim_and_label(people[1], **GOOD)
    claim_and_label(people[2], **{**BAD, "severe_safety": True, "rationale": "Unsafe."})
    record.refresh_from_db()
    record_adjudication(
        lead=lead,
        record=record,
        acceptability="unacceptable",
        grounding="misgrounded",
        primary_failure="stale_source_acceptance",
        rationale="Superseded.",
    )
    blocks = make_gold_corpus(2)
    version = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(blocks)],
        actor=admin_user,
        extra_files={ExportFormat.ADJUDICATION: render_adjudication_export},
    )
    version.people = [*people, lead]
    return version


def _download(client, version, fmt):
    response = client.get(reverse("exports:download", args=[version.number, fmt]))
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    return body, [json.loads(line) for line in body.splitlines()]


def test_a_leads_adjudication_export_names_no_system_and_no_person(client_for, lead, frozen):
    body, rows = _download(client_for(lead), frozen, "adjudication")
    assert rows and "SYS-CANARY" not in body and "RUN-CANARY" not in body
    assert not SYSTEM_FIELDS & set(rows[0])
    reviewers = [label["reviewer"] for label in rows[0]["labels"]]
    assert all(r.startswith("person-") for r in reviewers) and len(set(reviewers)) == 3
    for person in frozen.people:
        assert person.username not in body and f"reviewer-{person.pk}" not in body
    assert rows[0]["labels"][2]["rationale"] == "Unsafe."


def test_an_admins_adjudication_export_keeps_the_system(client_for, admin_user, frozen):
    body, rows = _download(client_for(admin_user), frozen, "adjudication")
    assert rows[0]["system_id"] == "SYS-CANARY" and rows[0]["run_id"] == "RUN-CANARY"


def test_a_leads_gold_jsonl_names_people_by_the_versions_pseudonyms(
    client_for, lead, admin_user, frozen
):
    admin_body, admin_rows = _download(client_for(admin_user), frozen, "gold_jsonl")
    body, rows = _download(client_for(lead), frozen, "gold_jsonl")
    author = admin_rows[0]["metadata"]["added_by"]
    assert author in admin_body and author not in body
    assert rows[0]["metadata"]["added_by"].startswith("person-")
    again, _ = _download(client_for(lead), frozen, "gold_jsonl")
    assert again == body  # stable within the version


def test_a_legacy_file_is_blinded_on_the_way_out(client_for, admin_user, lead, frozen):
    legacy = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"L-{i}") for i, bv in enumerate(make_gold_corpus(2))],
        actor=admin_user,
        extra_files={ExportFormat.ADJUDICATION: _legacy_adjudication},
    )
    admin_body, _ = _download(client_for(admin_user), legacy, "adjudication")
    assert "reviewer-" in admin_body  # the stored file really is the legacy shape
    body, rows = _download(client_for(lead), legacy, "adjudication")
    assert not (SYSTEM_FIELDS | {"model", "config", "prompt_hash", "cost"}) & set(rows[0])
    assert "gpt-canary" not in body and "reviewer-" not in body


def test_annotators_get_no_version_download(client_for, annotator, frozen):
    url = reverse("exports:download", args=[frozen.number, "adjudication"])
    assert client_for(annotator).get(url).status_code == 403
