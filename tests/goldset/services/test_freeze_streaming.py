"""Freeze at realistic size (issue 26): the gold rows and the adjudication export are streamed
from plain columns instead of model objects, and give exactly what the object-based code gave
(``tests/goldset/freeze_reference.py``, the code before the change) — compared as the canonical
JSON bytes the files are made of, on the demo's data plus the cases the demo lacks (a customer
triple, a superseded pin with its reason, page ranges, a decision with a guideline version)."""

import json

import pytest
from django.core.management import call_command
from django.test import TestCase

from goldset.models import (
    AnswerRecord,
    BlockVersion,
    GoldVersion,
    GuidelineVersion,
    Label,
    Question,
    Triple,
    TripleRevision,
)
from goldset.selectors.answers import (
    _export_statuses,
    iter_adjudication_export,
    iter_answer_question_packets,
    list_adjudication_export_people,
)
from goldset.selectors.curation import iter_gold_rows, list_gold_triples
from goldset.services import exports
from goldset.services.agreement import ratings_frame, summary_figures
from goldset.services.agreement_sources import (
    answer_label_frame,
    answer_label_ratings,
    triple_review_frame,
    triple_review_ratings,
)
from goldset.services.exports import canonical_json
from goldset.services.freeze import FreezeFilters, freeze_gold_version, selected_triples
from tests.factories import CustomerPermissionFactory, default_project
from tests.goldset import freeze_reference as reference

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(tmp_path):
    with TestCase.captureOnCommitCallbacks(execute=False):
        call_command("seed_demo", password="freeze-demo-1", credentials_file=tmp_path / "c.txt")
    # what the demo does not have: a customer's gold triple, a superseded pin with its reason,
    # page ranges (one open-ended), and decisions made under a guideline version
    gold = list(
        Triple.objects.filter(project=default_project(), state="gold").order_by("external_id")[:3]
    )
    assert len(gold) == 3
    grant = CustomerPermissionFactory(customer__slug="acme-freeze")
    Triple.objects.filter(pk=gold[0].pk).update(
        customer=grant.customer, source="customer_permissioned"
    )
    TripleRevision.objects.filter(pk=gold[1].current_revision_id).update(
        superseded_reason="Kept on the 2025 wording on purpose."
    )
    versions = [t.current_revision.expected_block_version_id for t in gold]
    BlockVersion.objects.filter(pk=versions[1]).update(page_start=3, page_end=5)
    BlockVersion.objects.filter(pk=versions[2]).update(page_start=7, page_end=None)
    # JSON lists of more than one value (read as text, decoded once per distinct text)
    question = Question.objects.filter(project=default_project()).order_by("id").first()
    Question.objects.filter(pk=question.pk).update(
        prohibited_behaviors=["promise_outcomes"], safety_flags=["protected_data", "pii"]
    )
    exported = Label.objects.filter(
        record__project=default_project(),
        record__status__in=_export_statuses(False),
        record__is_calibration=False,
    ).order_by("id")
    Label.objects.filter(pk=exported.first().pk).update(
        secondary_failures=["citation_coverage_gap", "stale_source"]
    )
    guideline = GuidelineVersion.objects.order_by("id").first()
    if guideline is not None:
        first = Label.objects.order_by("id").first()
        Label.objects.filter(pk=first.pk).update(guideline=guideline)


def _bytes(rows) -> list[str]:
    return [canonical_json(row) for row in rows]


def test_streamed_gold_rows_equal_the_object_built_rows(demo):
    triples = list_gold_triples()
    new = _bytes(iter_gold_rows(triples, batch=7))  # several batches
    old = _bytes(reference.gold_row(t) for t in triples.iterator(chunk_size=50))
    assert len(new) == len(old) > 10
    assert new == old
    joined = "\n".join(new)
    for case in ('"customer":"acme-freeze"', '"superseded_reason":', '"page_range":[3,5]'):
        assert case in joined, case
    assert '"page_range":[7,7]' in joined
    assert any('"reviewed_by":["' in line for line in new)


def test_streamed_adjudication_export_equals_the_object_built_export(demo):
    people = list_adjudication_export_people(project=default_project())
    pseudonyms = {pk: f"reviewer-{pk}" for pk in people}
    new = _bytes(iter_adjudication_export(project=default_project(), pseudonyms=pseudonyms))
    old = _bytes(
        reference.iter_adjudication_export(project=default_project(), pseudonyms=pseudonyms)
    )
    exported = AnswerRecord.objects.filter(
        project=default_project(), is_calibration=False, status__in=_export_statuses(False)
    )
    assert len(new) == len(old) == exported.count() > 5
    assert new == old
    joined = "\n".join(new)
    assert '"adjudication":{' in joined and '"audit_sample":{' in joined
    assert '"labels":[{' in joined
    assert '"secondary_failures":["citation_coverage_gap","stale_source"]' in joined
    with_open = _bytes(
        iter_adjudication_export(
            project=default_project(), pseudonyms=pseudonyms, include_open=True
        )
    )
    old_open = _bytes(
        reference.iter_adjudication_export(
            project=default_project(), pseudonyms=pseudonyms, include_open=True
        )
    )
    assert with_open == old_open and len(with_open) > len(new)


def test_a_freeze_stores_the_rows_and_files_the_object_built_rows_give(demo, admin_user):
    filters = FreezeFilters(include_superseded=True)
    version = freeze_gold_version(project=default_project(), filters=filters, actor=admin_user)
    expected = _bytes(
        reference.gold_row(t) for t in selected_triples(filters, project=default_project())
    )
    assert list(version.rows.order_by("position").values_list("line", flat=True)) == expected
    gold_file = version.files.get(format="gold_jsonl", redacted=False)
    assert gold_file.size == sum(len(line.encode()) + 1 for line in expected)
    assert GoldVersion.objects.get(pk=version.pk).sealed


@pytest.mark.postgres
def test_the_freeze_agreement_summary_reads_columns_with_the_same_figures(demo, settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 200
    triples = selected_triples(
        FreezeFilters(include_superseded=True), project=default_project()
    ).values("pk")
    project = default_project()
    for columns, tuples in (
        (
            triple_review_frame(project=project, triples=triples),
            triple_review_ratings(project=project, triples=triples),
        ),
        (answer_label_frame(project=project), answer_label_ratings(project=project)),
    ):
        expected = summary_figures(ratings_frame(tuples), n_resamples=200)
        assert expected and summary_figures(columns, n_resamples=200) == expected


def test_streamed_question_packets_equal_the_object_built_packets(demo):
    new = _bytes(iter_answer_question_packets(project=default_project()))
    old = _bytes(reference.iter_answer_question_packets(project=default_project()))
    assert len(new) == len(old) == Question.objects.filter(project=default_project()).count() > 5
    assert new == old
    assert any('"gold_evidence":[{' in line for line in new)
    assert any('"near_miss":[{' in line for line in new)
    assert any('"prohibited_answer_behavior":["promise_outcomes"]' in line for line in new)
    assert any('"safety_flags":["protected_data","pii"]' in line for line in new)


def test_a_freeze_writes_the_gold_packets_the_packet_dicts_give(demo, admin_user):
    """The packet lines are composed around their evidence, encoded once per pin and variant;
    they are the canonical JSON of the packet dicts of before, full and redacted."""
    version = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(include_superseded=True), actor=admin_user
    )
    rows = [
        json.loads(line)
        for line in version.rows.order_by("position").values_list("line", flat=True)
    ]
    pins = [(r["expected_block"]["block_id"], r["expected_block"]["version"]) for r in rows]
    pinned = exports._pinned_data(sorted(set(pins)), project_id=version.project_id)
    assert any(pinned[pin].page_range for pin in pins)
    for redacted in (False, True):
        stored = version.files.get(format="probe_packets", redacted=redacted)
        lines = exports.read_verified_bytes(stored).decode().splitlines()[: len(rows)]
        expected = [
            canonical_json(reference.gold_packet(row, pinned[pin], redacted=redacted))
            for row, pin in zip(rows, pins, strict=True)
        ]
        assert len(expected) > 10
        assert lines == expected
