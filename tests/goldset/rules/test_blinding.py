"""Blinding has one field policy, ``goldset.rules.blinding``: the list of system fields lives
there, and the read models, downloads, promotion selectors, adjudication page and webhook
payloads are checked against it (read from the code, not restated here)."""

import dataclasses

import pytest

from goldset.models import AnswerRecord, WebhookDelivery, WebhookEvent
from goldset.rules.blinding import (
    RECORD_SYSTEM_COLUMNS,
    SYSTEM_FIELDS,
    sees_labelers,
    sees_systems,
    without_system_fields,
)
from goldset.selectors.answers import (
    BlindAssignment,
    BlindLabel,
    BlindQuestion,
    BlindRecord,
    BlindRef,
    list_blind_labels,
)
from goldset.selectors.promotion import get_record_for_promotion
from goldset.services import webhooks
from tests.factories import AnswerRecordFactory, DomainFactory, default_project
from tests.goldset.answers_helpers import GOOD, claim_and_label, qualified_annotators
from workbench.access import ALL_FIELDS, VERSION_FILE_FIELDS
from workbench.roles import Role


def _keys(spec) -> set[str]:
    if spec == ALL_FIELDS or not isinstance(spec, dict):
        return set()
    return set(spec) | {k for rule in spec.values() for k in _keys(rule)}


def test_only_admins_see_systems_and_labelers():
    for role in Role.values:
        assert sees_systems([role]) is (role == Role.ADMIN)
        assert sees_labelers([role]) is (role == Role.ADMIN)


def test_the_blind_read_models_have_no_system_field():
    models = [BlindRecord, BlindQuestion, BlindAssignment, BlindLabel, BlindRef]
    for model in models:
        fields = {f.name for f in dataclasses.fields(model)}
        assert fields and not fields & SYSTEM_FIELDS, model.__name__


def test_the_deferred_record_columns_are_the_record_system_fields():
    columns = {f.attname for f in AnswerRecord._meta.concrete_fields}
    assert set(RECORD_SYSTEM_COLUMNS) <= columns
    assert {c.removesuffix("_id") for c in RECORD_SYSTEM_COLUMNS} <= SYSTEM_FIELDS
    # every column of the record that is a system field is deferred
    assert {
        f.attname for f in AnswerRecord._meta.concrete_fields if f.name in SYSTEM_FIELDS
    } == set(RECORD_SYSTEM_COLUMNS)


def test_no_role_reduced_download_holds_a_system_field():
    reduced = [spec for roles in VERSION_FILE_FIELDS.values() for spec in roles.values()]
    assert any(_keys(spec) for spec in reduced)
    for spec in reduced:
        assert not _keys(spec) & SYSTEM_FIELDS


def test_system_fields_are_stripped_at_any_depth():
    data = {"version": 1, "run_id": "R", "items": [{"system_id": "S", "n": 2}], "cost": 3}
    assert without_system_fields(data) == {"version": 1, "items": [{"n": 2}]}


@pytest.mark.django_db
def test_a_promotion_read_never_loads_the_system_columns():
    record = AnswerRecordFactory()
    loaded = get_record_for_promotion(public_id=record.public_id, project=default_project())
    assert set(RECORD_SYSTEM_COLUMNS) <= loaded.get_deferred_fields()


@pytest.mark.django_db
def test_labelers_are_named_on_the_adjudication_labels_for_admins_only(lead, admin_user):
    domain = DomainFactory(slug="supply_chain")
    record = AnswerRecordFactory(question__domain=domain)
    (one,) = qualified_annotators(domain, 1)
    claim_and_label(one, **GOOD)
    assert [label.labeler_name for label in list_blind_labels(record, user=lead)] == [""]
    assert [label.labeler_name for label in list_blind_labels(record, user=admin_user)] == [
        one.username
    ]


@pytest.mark.django_db
def test_a_webhook_payload_carries_no_system_field(admin_user, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    webhooks.create_webhook_endpoint(
        project=default_project(),
        actor=admin_user,
        url="http://127.0.0.1:9/hook",
        events=[WebhookEvent.SCORING_JOB_SUCCEEDED],
    )
    webhooks.emit(
        WebhookEvent.SCORING_JOB_SUCCEEDED,
        {"job_id": 1, "run_id": "CANARY-RUN", "detail": {"system_id": "CANARY", "model": "m"}},
        project=default_project(),
    )
    (delivery,) = WebhookDelivery.objects.all()
    assert delivery.payload["data"] == {"job_id": 1, "detail": {}}
