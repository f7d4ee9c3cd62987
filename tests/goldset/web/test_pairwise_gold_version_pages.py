"""The gold version of a pairwise task on the pages (issue 30): the task form takes it by
number or tag (``resolve_version``, as every version field), the tasks page and the task's
analysis page show it, a reference that names no frozen version is a 422 on the field."""

import re

import pytest
from django.urls import reverse

from goldset.models import PairwiseTask, Question
from goldset.services.version_tags import set_version_tag
from tests.factories import AnswerRecordFactory, RunFactory, default_project
from tests.goldset.pairwise_support import assert_blind, frozen_runs

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(admin_user):
    runs, version, frozen, later = frozen_runs(admin_user)
    set_version_tag(project=default_project(), actor=admin_user, name="pw-gold", version=version)
    return {"runs": runs, "version": version, "frozen": frozen, "later": later}


def _form(world, **fields) -> dict:
    return {
        "name": "Form task",
        "runs": [run.pk for run in world["runs"]],
        "design": "all_pairs",
        "tier": "tier_b",
        "seed": 5,
        **fields,
    }


def _row(html: str, name: str) -> str:
    """The tasks table's row of the task ``name``."""
    rows = re.findall(r"<tr>.*?</tr>", html, flags=re.S)
    (row,) = [r for r in rows if f"<td>{name}</td>" in r]
    return row


def test_a_lead_creates_a_task_on_a_version_named_by_its_tag(world, client_for, lead):
    c = client_for(lead)
    form = c.get(reverse("pairwise:create")).content.decode()
    assert 'name="gold_version"' in form and "pw-gold → v1" in form and "(none)" in form
    response = c.post(reverse("pairwise:create"), _form(world, gold_version="pw-gold"))
    assert response.status_code == 302
    task = PairwiseTask.objects.get(name="Form task")
    assert task.gold_version == world["version"]
    questions = set(task.pairs.values_list("question__question_id", flat=True))
    assert questions == set(world["frozen"])  # not the questions imported after v1
    c.post(reverse("pairwise:create"), _form(world, name="By number", gold_version="1"))
    assert PairwiseTask.objects.get(name="By number").gold_version == world["version"]
    c.post(reverse("pairwise:create"), _form(world, name="Unversioned", gold_version=""))
    loose = PairwiseTask.objects.get(name="Unversioned")
    assert loose.gold_version is None and loose.pairs.count() == 3 * 5
    tasks = c.get(reverse("pairwise:tasks")).content.decode()
    assert_blind(tasks)
    assert '<td class="gold-version">v1</td>' in _row(tasks, "Form task")
    assert '<td class="gold-version">—</td>' in _row(tasks, "Unversioned")
    analysis = c.get(reverse("pairwise:analysis", args=[task.pk])).content.decode()
    assert re.search(r'id="task-gold-version">Gold version: <strong>v1</strong>', analysis)
    unversioned = c.get(reverse("pairwise:analysis", args=[loose.pk])).content.decode()
    assert 'id="task-gold-version">Gold version: none' in unversioned


def test_a_reference_that_names_no_frozen_version_is_a_422_on_the_field(world, client_for, lead):
    c = client_for(lead)
    for ref in ("v7", "no-such-tag"):
        response = c.post(reverse("pairwise:create"), _form(world, gold_version=ref))
        assert response.status_code == 422, ref
        assert "gold_version" in response.context["form"].errors, ref
    assert not PairwiseTask.objects.exists()


def test_runs_without_a_question_of_the_version_are_a_422_on_the_field(world, client_for, lead):
    later_runs = [RunFactory(run_id=f"pw-late-run-{j}") for j in range(2)]
    for question in Question.objects.filter(question_id__in=world["later"]):
        for run in later_runs:
            AnswerRecordFactory(run=run, question=question)
    response = client_for(lead).post(
        reverse("pairwise:create"),
        _form(world, runs=[run.pk for run in later_runs], gold_version="pw-gold"),
    )
    assert response.status_code == 422
    assert response.context["form"].errors["gold_version"] == [
        "These runs share no question of gold version v1: there is nothing to compare."
    ]
    assert not PairwiseTask.objects.exists()
