"""The browser upload of pairwise judgments (issue 30: "import … validated like every import"),
like every other upload page: admins only (the file names reviewers, as through the API),
linked from the tasks and analysis pages for them; the file is stored and queued as an import
job, answered with the job's page; a bad file is rejected whole with every problem's line and
field (the job page 422), nothing stored; an empty file is a 422 on the upload page itself."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import ImportJob, ImportKind, ImportStatus, PairJudgment, PairwisePair
from tests.factories import UserFactory
from tests.goldset.pairwise_support import build_runs, make_task, reviewers

pytestmark = pytest.mark.django_db


@pytest.fixture
def task(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=2)
    return make_task(runs, actor=lead, name="Upload target")


def _file(*rows, name="judgments.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, "".join(json.dumps(r) + "\n" for r in rows).encode())


def _first_pair(task) -> PairwisePair:
    return PairwisePair.objects.filter(task=task).order_by("position").first()


def test_the_page_answers_each_role(task, client, client_for, annotator, lead, admin_user):
    url = reverse("pairwise:import", args=[task.pk])
    anonymous = client.get(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    outsider = UserFactory(username="pw-upload-outsider")  # a member of no project
    got = [client_for(u).get(url).status_code for u in (annotator, lead, admin_user, outsider)]
    assert got == [403, 403, 200, 404]
    refused = client_for(lead).post(url, {"file": _file({"pair": "x"})})
    assert refused.status_code == 403 and not ImportJob.objects.exists()
    assert client_for(admin_user).get(reverse("pairwise:import", args=[999999])).status_code == 404


def test_admins_find_it_on_the_pairwise_pages_and_leads_do_not(task, client_for, lead, admin_user):
    href = f'href="{reverse("pairwise:import", args=[task.pk])}"'
    for page in (reverse("pairwise:tasks"), reverse("pairwise:analysis", args=[task.pk])):
        assert href in client_for(admin_user).get(page).content.decode(), page
        assert href not in client_for(lead).get(page).content.decode(), page


def test_a_good_file_becomes_an_import_job_that_stores_the_judgments(
    task, client_for, admin_user, django_capture_on_commit_callbacks
):
    (person,) = reviewers(1, prefix="pw-upload")
    pair = _first_pair(task)
    c = client_for(admin_user)
    upload = _file({"pair": pair.public_id, "reviewer": person.username, "preference": "tie"})
    with django_capture_on_commit_callbacks(execute=True):
        response = c.post(reverse("pairwise:import", args=[task.pk]), {"file": upload})
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response.url == reverse("imports:job", args=[job.pk])
    assert (job.kind, job.options, job.created_by) == (
        ImportKind.PAIRWISE,
        {"task": task.pk},
        admin_user,
    )
    assert job.status == ImportStatus.SUCCEEDED, (job.message, job.errors)
    assert job.summary["judgments"] == 1
    judgment = PairJudgment.objects.get()
    assert (judgment.pair, judgment.reviewer, judgment.preference) == (pair, person, "tie")
    assert c.get(response.url).status_code == 200


def test_a_bad_file_is_rejected_whole_naming_line_and_field(
    task, client_for, admin_user, django_capture_on_commit_callbacks
):
    people = reviewers(2, prefix="pw-upload-bad")
    pair = _first_pair(task)
    c = client_for(admin_user)
    upload = _file(
        {"pair": pair.public_id, "reviewer": people[0].username, "preference": "tie"},  # fine
        {"pair": pair.public_id, "reviewer": people[1].username, "preference": "a"},  # strength?
        {"pair": "no-such-pair", "reviewer": people[1].username, "preference": "tie"},
        name="bad.jsonl",
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = c.post(reverse("pairwise:import", args=[task.pk]), {"file": upload})
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.status == ImportStatus.REJECTED
    assert [(p["line"], p["field"]) for p in job.errors] == [(2, "strength"), (3, "pair")]
    page = c.get(response.url)
    body = page.content.decode()
    assert page.status_code == 422 and "nothing was imported" in body
    assert "line 2: strength" in body and "line 3: pair" in body
    assert not PairJudgment.objects.exists()  # not even the good first line
    pair.refresh_from_db()
    assert pair.assigned_count == 0


def test_an_empty_file_is_refused_on_the_upload_page_with_422(task, client_for, admin_user):
    response = client_for(admin_user).post(
        reverse("pairwise:import", args=[task.pk]),
        {"file": SimpleUploadedFile("empty.jsonl", b"")},
    )
    assert response.status_code == 422
    body = response.content.decode()
    assert 'id="import-errors"' in body and "empty.jsonl is empty." in body
    assert not ImportJob.objects.exists() and not PairJudgment.objects.exists()
