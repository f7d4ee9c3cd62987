"""Adversarial files through the pairwise upload page (issue 30), as the other upload pages are
tested (test_import_bad_inputs): each bad file is refused whole, never with a 500 — a file the
request can refuse (not UTF-8, empty) is a 422 on the upload page itself, any other is a
rejected import job whose page answers 422 naming the line and the field — and nothing is
stored, not even the good line before the bad one. A 200 MB file is taken as the other pages
take one: stored and queued without being parsed in the request, then read in the background
job, which rejects it naming its lines."""

import hashlib
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from goldset.models import (
    ImportJob,
    ImportStatus,
    PairAssignment,
    PairJudgment,
    PairStatus,
    PairwisePair,
)
from goldset.services.import_jobs import run_import_job
from tests.factories import UserFactory
from tests.goldset.pairwise_support import build_runs, make_task, reviewers
from workbench.roles import Role

pytestmark = pytest.mark.django_db
RAW = "__raw__"


@pytest.fixture
def world(lead):
    """A task of two questions × two systems (two pairs), two qualified reviewers."""
    runs, _, _ = build_runs(n_systems=2, n_questions=2)
    task = make_task(runs, actor=lead, name="Adversarial")
    pairs = list(PairwisePair.objects.filter(task=task).order_by("position"))
    return task, pairs, reviewers(2, prefix="pw-adv")


def good_line(world) -> dict:
    _, pairs, people = world
    return {"pair": pairs[0].public_id, "reviewer": people[0].username, "preference": "tie"}


def second_line(world, field: str, raw: str) -> str:
    """A valid judgment by the second reviewer with ``field`` set to the raw JSON ``raw``."""
    _, pairs, people = world
    row = {"pair": pairs[1].public_id, "reviewer": people[1].username, "preference": "tie"}
    row[field] = RAW
    return json.dumps(row).replace(f'"{RAW}"', raw)


def upload(client, task, data: bytes, name="judgments.jsonl"):
    return client.post(
        reverse("pairwise:import", args=[task.pk]), {"file": SimpleUploadedFile(name, data)}
    )


def assert_nothing_stored(world):
    task, pairs, _ = world
    assert not PairJudgment.objects.exists() and not PairAssignment.objects.exists()
    for pair in pairs:
        pair.refresh_from_db()
        assert (pair.assigned_count, pair.status) == (0, PairStatus.JUDGING)


# (the field set on line 2 to a raw JSON value, or None for a raw line 2; that value or line;
# the (line, field) a problem names; words of its message)
CASES = {
    "nan": ("preference", "NaN", (2, "preference"), "NaN is not allowed"),
    "infinity-in-an-extra-number": (
        "confidence",
        "-Infinity",
        (2, "confidence"),
        "-Infinity is not allowed",
    ),
    "overflow": ("confidence", "1e400", (2, "confidence"), "1e400 is not allowed"),
    "nul-escaped": ("rationale", '"fine\\u0000then"', (2, "rationale"), "contains a NUL"),
    "nul-in-an-identifier": ("reviewer", '"pw-adv2\\u0000"', (2, "reviewer"), "NUL"),
    "malformed": (None, '{"pair": "pw-x", "reviewer": ', (2, ""), ""),
    "not-json": (None, "judgment: tie", (2, ""), ""),
    "not-an-object": (None, '["tie"]', (2, ""), "expected a JSON object"),
    "a-bare-nan": (None, "NaN", (2, ""), "NaN"),
    "unknown-pair": ("pair", '"pw-no-such-pair"', (2, "pair"), "unknown pair 'pw-no-such-pair'"),
    "unknown-reviewer": (
        "reviewer",
        '"nobody-here"',
        (2, "reviewer"),
        "'nobody-here' is not an annotator of this project",
    ),
    "unknown-preference": ("preference", '"system-b"', (2, "preference"), "system-b"),
    "a-number-for-strength": ("strength", "2", (2, "strength"), "got int"),
    "an-object-for-a-pair": ("pair", '{"id": 1}', (2, "pair"), ""),
    "a-list-for-left": ("left", '["a"]', (2, "left"), "got ['a']"),
    "too-long-rationale": ("rationale", json.dumps("x" * 20_001), (2, "rationale"), "20,001"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_line_rejects_the_whole_file_naming_line_and_field(
    case, world, client_for, admin_user, django_capture_on_commit_callbacks
):
    field_set, raw, (line, field), words = CASES[case]
    text = raw if field_set is None else second_line(world, field_set, raw)
    data = (json.dumps(good_line(world)) + "\n" + text + "\n").encode()
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, world[0], data)
    assert response.status_code == 302, response.content[:500]
    job = ImportJob.objects.get()
    assert job.status == ImportStatus.REJECTED, (job.status, job.message)
    assert (line, field) in [(p["line"], p["field"]) for p in job.errors], job.errors
    assert words in " ".join(p["message"] for p in job.errors), job.errors
    page = client.get(response.url)
    body = page.content.decode()
    assert page.status_code == 422 and "nothing was imported" in body
    assert (f"line {line}: {field}" if field else f"line {line}") in body
    assert_nothing_stored(world)


def test_a_key_given_twice_is_refused_not_resolved_to_the_last(
    world, client_for, admin_user, django_capture_on_commit_callbacks
):
    text = second_line(world, "preference", '"tie"').replace("{", '{"preference": "a", ', 1)
    data = (json.dumps(good_line(world)) + "\n" + text + "\n").encode()
    with django_capture_on_commit_callbacks(execute=True):
        upload(client_for(admin_user), world[0], data)
    job = ImportJob.objects.get()
    assert job.status == ImportStatus.REJECTED
    assert [(p["line"], p["field"]) for p in job.errors] == [(2, "preference")]
    assert "appears twice" in job.errors[0]["message"]
    assert_nothing_stored(world)


def test_a_raw_nul_byte_is_refused_naming_its_line(
    world, client_for, admin_user, django_capture_on_commit_callbacks
):
    data = (json.dumps(good_line(world)) + "\n").encode() + b'{"pair": "a\x00b"}\n'
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, world[0], data)
    job = ImportJob.objects.get()
    assert job.status == ImportStatus.REJECTED
    assert any(p["line"] == 2 and "NUL" in p["message"] for p in job.errors), job.errors
    assert client.get(response.url).status_code == 422
    assert_nothing_stored(world)


def test_invalid_utf8_is_a_422_on_the_upload_page_and_no_job(world, client_for, admin_user):
    data = (json.dumps(good_line(world)) + "\n").encode() + b'{"pair": "caf\xe9"}\n'
    response = upload(client_for(admin_user), world[0], data, name="latin1.jsonl")
    assert response.status_code == 422
    body = response.content.decode()
    assert 'id="import-errors"' in body
    assert "latin1.jsonl, line 2: not valid UTF-8 text" in body
    assert not ImportJob.objects.exists()
    assert_nothing_stored(world)


def test_a_reviewer_who_is_a_lead_or_of_no_project_is_named_not_stored(
    world, client_for, admin_user, django_capture_on_commit_callbacks
):
    _, pairs, people = world
    UserFactory(role=Role.LEAD, username="pw-adv-lead")
    UserFactory(username="pw-adv-nobody")  # a member of no project
    rows = [
        good_line(world),
        {"pair": pairs[1].public_id, "reviewer": "pw-adv-lead", "preference": "tie"},
        {"pair": pairs[1].public_id, "reviewer": "pw-adv-nobody", "preference": "tie"},
    ]
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    with django_capture_on_commit_callbacks(execute=True):
        upload(client_for(admin_user), world[0], data)
    job = ImportJob.objects.get()
    assert job.status == ImportStatus.REJECTED
    assert [(p["line"], p["field"]) for p in job.errors] == [(2, "reviewer"), (3, "reviewer")]
    assert_nothing_stored(world)


def test_a_200_mb_file_is_queued_unparsed_then_rejected_in_the_background(
    world, client_for, admin_user, django_capture_on_commit_callbacks, settings, tmp_path
):
    """As every upload page: the request streams the file to the import storage (the cap,
    IMPORT_MAX_UPLOAD_BYTES, is 1 GiB) and answers with the queued job; the job reads it line
    by line and rejects it naming the lines, storing nothing."""
    settings.IMPORT_STORAGE_DIR = tmp_path / "storage"
    task, pairs, people = world
    path = tmp_path / "big.jsonl"
    padding = "x" * (1 << 20)  # a 1 MiB note on every line
    digest = hashlib.sha256()
    with path.open("wb") as out:
        lines = [json.dumps(good_line(world))]
        lines += [
            json.dumps({"pair": f"pw-pad-{i}", "reviewer": people[1].username, "note": padding})
            for i in range(200)
        ]
        for text in lines:
            chunk = (text + "\n").encode()
            digest.update(chunk)
            out.write(chunk)
    size = path.stat().st_size
    assert size > 200 * 10**6
    client = client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=False), path.open("rb") as handle:
        response = client.post(reverse("pairwise:import", args=[task.pk]), {"file": handle})
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert (job.status, job.size, job.sha256) == (
        ImportStatus.QUEUED,
        size,
        digest.hexdigest(),
    )
    assert client.get(response.url).status_code == 200  # queued: the page says so
    assert_nothing_stored(world)

    job = run_import_job(job_id=job.pk)
    assert job.status == ImportStatus.REJECTED, (job.status, job.message)
    assert (job.errors[0]["line"], job.errors[0]["field"]) == (2, "pair")
    assert "unknown pair 'pw-pad-0'" in job.errors[0]["message"]
    assert client.get(reverse("imports:job", args=[job.pk])).status_code == 422
    assert_nothing_stored(world)
