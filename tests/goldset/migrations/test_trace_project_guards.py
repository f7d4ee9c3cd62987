"""Production traces under the project guards (migration 0050, ``GUARDS_TRACES``): a trace's
answer record and sampling rule, and a promoted triple's origin (its triple and record), are
rows of the same project — written across two projects, or moved away afterwards, the database
refuses it naming the table and the column, and nothing changes."""

import pytest
from django.db import transaction

from goldset.models import (
    AnswerRecord,
    ReceivedTrace,
    SamplingRule,
    Triple,
    TripleOrigin,
)
from tests.goldset.migrations.test_project_guards import refused, worlds  # noqa: F401

pytestmark = pytest.mark.django_db


def _rule(w) -> SamplingRule:
    return SamplingRule.objects.create(project=w.project, name=f"rule-{w.tag}", kind="feedback")


def _trace(w, n: str, **fields) -> ReceivedTrace:
    values = {"project": w.project, "trace_id": n * 32, "status": "mapped"}
    return ReceivedTrace.objects.create(**(values | fields))


def _origin(w, **fields) -> TripleOrigin:
    values = {
        "project": w.project,
        "triple": w.triple,
        "record": w.record,
        "record_public_id": w.record.public_id,
        "promoted_by": w.user,
    }
    return TripleOrigin.objects.create(**(values | fields))


def test_a_trace_names_a_record_and_a_rule_of_its_own_project(worlds):  # noqa: F811
    a, b = worlds
    with refused("goldset_receivedtrace", "record_id"), transaction.atomic():
        _trace(a, "1", record=b.record)
    with refused("goldset_receivedtrace", "sampling_rule_id"), transaction.atomic():
        _trace(a, "2", sampling_rule=_rule(b))
    assert not ReceivedTrace.objects.exists()
    trace = _trace(a, "3", record=a.record, sampling_rule=_rule(a))
    with refused("goldset_receivedtrace", "record_id"), transaction.atomic():
        ReceivedTrace.objects.filter(pk=trace.pk).update(record=b.record)
    # the reverse side: the record and the rule cannot move away under the trace
    with refused("goldset_answerrecord", r"\w+"), transaction.atomic():
        AnswerRecord.objects.filter(pk=a.record.pk).update(project=b.project)
    with refused("goldset_samplingrule", "project_id"), transaction.atomic():
        SamplingRule.objects.filter(pk=trace.sampling_rule_id).update(project=b.project)
    trace.refresh_from_db()
    assert trace.record_id == a.record.pk and trace.sampling_rule.project_id == a.project.pk


def test_a_triples_origin_names_a_triple_and_record_of_its_own_project(worlds):  # noqa: F811
    a, b = worlds
    with refused("goldset_tripleorigin", "triple_id"), transaction.atomic():
        _origin(a, triple=b.triple)
    with refused("goldset_tripleorigin", "record_id"), transaction.atomic():
        _origin(a, record=b.record)
    assert not TripleOrigin.objects.exists()
    origin = _origin(a)
    with refused("goldset_tripleorigin", "record_id"), transaction.atomic():
        TripleOrigin.objects.filter(pk=origin.pk).update(record=b.record)
    with refused("goldset_triple", r"\w+"), transaction.atomic():
        Triple.objects.filter(pk=a.triple.pk).update(project=b.project)
    origin.refresh_from_db()
    assert (origin.triple_id, origin.record_id) == (a.triple.pk, a.record.pk)
