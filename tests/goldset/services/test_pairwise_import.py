"""Import of pairwise judgments (issue 30): a valid file stores every judgment and decides the
pairs as the page would; a file with any bad line is rejected whole, each problem with its
line and field, nothing stored; through the API it is an admin's background import job."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.exceptions import ImportRejected
from goldset.models import ImportJob, PairAssignment, PairJudgment, PairStatus, PairwisePair
from goldset.services.pairwise_imports import import_pair_judgments
from tests.factories import UserFactory
from tests.goldset.pairwise_support import build_runs, make_task, reviewers
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def task(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=2)
    return make_task(runs, actor=lead, name="Import target", tier="tier_b")


def _lines(*rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _pairs(task):
    return list(PairwisePair.objects.filter(task=task).order_by("position"))


def test_a_valid_file_stores_judgments_and_decides_pairs(task, admin_user):
    people = reviewers(3, prefix="pw-imp")
    first, second = _pairs(task)
    needed = first.reviewers_required
    rows = [
        {"pair": first.public_id, "reviewer": p.username, "preference": "a", "strength": "clearly"}
        for p in people[:needed]
    ]
    rows.append(
        {"pair": second.public_id, "reviewer": people[0].username, "preference": "tie", "left": "b"}
    )
    summary = import_pair_judgments(task=task, source=_lines(*rows), actor=admin_user)
    assert summary.judgments == needed + 1 and summary.pairs_decided == 1
    first.refresh_from_db()
    assert first.status == PairStatus.FINAL and first.final_preference == "a"
    assert first.assigned_count == needed
    judgment = PairJudgment.objects.get(pair=second)
    assert judgment.left == "b" and judgment.assignment.completed_at is not None
    second.refresh_from_db()
    assert second.status == PairStatus.JUDGING and second.assigned_count == 1


def test_a_bad_file_is_rejected_whole_naming_line_and_field(task, admin_user):
    (good,) = reviewers(1, prefix="pw-imp-ok")
    (novice,) = reviewers(1, prefix="pw-imp-novice", qualified=False)
    lead_user = UserFactory(role=Role.LEAD, username="pw-imp-lead")
    first, second = _pairs(task)
    text = (
        _lines(
            {
                "pair": first.public_id,
                "reviewer": good.username,
                "preference": "a",
                "strength": "clearly",
            },
            {"pair": "nope", "reviewer": good.username, "preference": "a", "strength": "clearly"},
            {"pair": second.public_id, "reviewer": novice.username, "preference": "tie"},
            {"pair": second.public_id, "reviewer": lead_user.username, "preference": "tie"},
            {"pair": second.public_id, "reviewer": good.username, "preference": "b"},
            {"pair": first.public_id, "reviewer": good.username, "preference": "tie"},
            {"pair": second.public_id, "reviewer": good.username, "preference": "best"},
        )
        + "{not json\n"
    )
    with pytest.raises(ImportRejected) as caught:
        import_pair_judgments(task=task, source=text, actor=admin_user)
    found = {(p.line, p.field) for p in caught.value.problems}
    assert {
        (2, "pair"),  # unknown pair
        (3, "reviewer"),  # not qualified
        (4, "reviewer"),  # not an annotator
        (5, "strength"),  # a preference for B needs a strength
        (6, "reviewer"),  # judges pair 1 twice
        (7, "preference"),
    } <= found
    assert any(line == 8 for line, _ in found)
    assert not PairJudgment.objects.exists() and not PairAssignment.objects.exists()


def test_a_pair_takes_no_more_judgments_than_its_reviewers(task, admin_user):
    first, _ = _pairs(task)
    people = reviewers(first.reviewers_required + 1, prefix="pw-imp-many")
    text = _lines(
        *[{"pair": first.public_id, "reviewer": p.username, "preference": "tie"} for p in people]
    )
    with pytest.raises(ImportRejected) as caught:
        import_pair_judgments(task=task, source=text, actor=admin_user)
    assert (len(people), "pair") in {(p.line, p.field) for p in caught.value.problems}
    assert not PairJudgment.objects.exists()


def test_through_the_api_it_is_an_admins_import_job(
    task, client_for, admin_user, lead, django_capture_on_commit_callbacks
):
    (person,) = reviewers(1, prefix="pw-imp-api")
    first, _ = _pairs(task)
    url = reverse("api:pairwise_judgments_import", args=[task.pk])
    good = _lines({"pair": first.public_id, "reviewer": person.username, "preference": "tie"})
    bad = _lines({"pair": first.public_id, "reviewer": person.username, "preference": "a"})
    assert (
        client_for(lead)
        .post(url, {"file": SimpleUploadedFile("j.jsonl", good.encode())})
        .status_code
        == 403
    )
    api = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        rejected = api.post(url, {"file": SimpleUploadedFile("j.jsonl", bad.encode())})
    assert rejected.status_code == 202 and rejected.json()["kind"] == "pairwise"
    job = api.get(rejected["Location"]).json()
    assert job["status"] == "rejected"
    assert [(e["line"], e["field"]) for e in job["errors"]] == [(1, "strength")]
    assert not PairJudgment.objects.exists()
    empty = api.post(url, {"file": SimpleUploadedFile("j.jsonl", b"")})
    assert empty.status_code == 422
    with django_capture_on_commit_callbacks(execute=True):
        done = api.post(url, {"file": SimpleUploadedFile("j.jsonl", good.encode())})
    assert api.get(done["Location"]).json()["status"] == "succeeded"
    assert ImportJob.objects.get(pk=done.json()["id"]).summary["judgments"] == 1
    assert PairJudgment.objects.get().reviewer == person
    assert api.post(reverse("api:pairwise_judgments_import", args=[999999]), {}).status_code == 404


def test_the_command_imports_a_file_and_exits_2_on_a_bad_one(task, tmp_path, capsys):
    from django.core.management import CommandError, call_command

    (person,) = reviewers(1, prefix="pw-imp-cli")
    first, _ = _pairs(task)
    good = tmp_path / "judgments.jsonl"
    good.write_text(
        _lines({"pair": first.public_id, "reviewer": person.username, "preference": "tie"})
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_lines({"pair": first.public_id, "reviewer": "nobody", "preference": "tie"}))
    with pytest.raises(CommandError) as exc:
        call_command("import_pair_judgments", str(bad), "--task", task.name)
    assert exc.value.returncode == 2 and "line 1: reviewer" in str(exc.value)
    call_command("import_pair_judgments", str(good), "--task", task.name)
    assert json.loads(capsys.readouterr().out)["judgments"] == 1
    with pytest.raises(CommandError) as exc:
        call_command("import_pair_judgments", str(good), "--task", "nope")
    assert exc.value.returncode == 2
