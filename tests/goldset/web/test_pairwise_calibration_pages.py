"""Pairwise qualification pages for every role: the reviewer's calibration page (blind, with
canaries), a lead's "use as a calibration pair" and "grant a retake" actions; non-members 404."""

import pytest
from django.test import Client

from goldset.models import PairCalibrationItem, PairQualification, PairStatus, PairwisePair
from goldset.rules.pairwise import choice_from_preference
from goldset.selectors.pairwise import calibration_left_for, left_for
from goldset.services.pairwise_calibration import add_calibration_pair
from tests.factories import UserFactory, default_project
from tests.goldset.pairwise_support import (
    CANARY_MODEL,
    CANARY_RUNS,
    CANARY_SYSTEMS,
    build_runs,
    judge_next,
    make_task,
    reviewers,
)

pytestmark = pytest.mark.django_db

CANARIES = ("CANARYSYS", "CANARYRUN", "CANARYMODEL", *CANARY_SYSTEMS, *CANARY_RUNS, CANARY_MODEL)
REFERENCES = ("a", "b", "tie", "a")


@pytest.fixture
def world(lead):
    runs, _, _ = build_runs(n_systems=3, n_questions=4)
    task = make_task(runs, actor=lead, name="Calibration source")
    pairs = list(PairwisePair.objects.filter(task=task).order_by("position"))
    for pair, ref in zip(pairs[:4], REFERENCES, strict=True):
        add_calibration_pair(project=default_project(), actor=lead, pair=pair, reference=ref)
    # a split adjudicated by nobody yet: three reviewers disagree on the first pair in the queue
    for person, preference in zip(reviewers(3), ("a", "b", "tie"), strict=True):
        judge_next(person, preference, rationale="Because.")
    split = PairwisePair.objects.get(task=task, status=PairStatus.NEEDS_ADJUDICATION)
    (fresh,) = reviewers(1, prefix="pw-cal", qualified=False)
    return {"task": task, "split": split, "fresh": fresh}


def _client(user):
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def test_the_calibration_page_answers_each_role(world, lead, admin_user):
    outsider = UserFactory(username="pw-outsider")
    got = [
        _client(p).get("/pairwise/calibration/").status_code
        for p in (world["fresh"], lead, admin_user, outsider)
    ]
    assert got == [200, 403, 403, 404]
    assert _client(None).get("/pairwise/calibration/").status_code == 302


def test_a_reviewer_qualifies_through_the_pages_blind(world):
    client = _client(world["fresh"])
    queue = client.get("/pairwise/").content.decode()
    assert 'id="pairwise-qualify"' in queue
    items = list(PairCalibrationItem.objects.order_by("id"))
    for item, reference in zip(items, REFERENCES, strict=True):
        page = client.get("/pairwise/calibration/")
        body = page.content.decode()
        assert item.public_id in body
        for canary in CANARIES:
            assert canary not in body, canary
        assert item.record_a.public_id not in body and item.record_b.public_id not in body
        left = calibration_left_for(item, world["fresh"].pk)
        choice = choice_from_preference(reference, left=left)
        response = client.post("/pairwise/calibration/", {"item": item.public_id, "choice": choice})
        assert response.status_code == 302
    done = client.get("/pairwise/calibration/").content.decode()
    assert 'id="calibration-passed"' in done
    assert 'id="pairwise-qualify"' not in client.get("/pairwise/").content.decode()
    claimed = client.post("/pairwise/claim/")
    assert "/pairwise/pairs/" in claimed["Location"]


def test_a_bad_calibration_post_is_422_and_stores_nothing(world):
    client = _client(world["fresh"])
    item = PairCalibrationItem.objects.order_by("id").first()
    bad = client.post("/pairwise/calibration/", {"item": item.public_id, "choice": "left-ish"})
    assert bad.status_code == 422
    assert not item.answers.exists()
    missing = client.post("/pairwise/calibration/", {"item": "nope", "choice": "tie"})
    assert missing.status_code == 404


def test_use_as_calibration_pair_answers_each_role(world, lead, admin_user):
    url = f"/pairwise/adjudication/{world['split'].public_id}/calibration/"
    outsider = UserFactory(username="pw-outsider")
    assert _client(world["fresh"]).post(url).status_code == 403
    assert _client(outsider).post(url).status_code == 404
    before = PairCalibrationItem.objects.count()
    # an undecided split has no preference to use: refused with a message, nothing stored
    assert _client(lead).post(url).status_code == 302
    assert PairCalibrationItem.objects.count() == before
    split = world["split"]
    client = _client(lead)
    choice = choice_from_preference("a", left=left_for(split, lead.pk))
    client.post(
        f"/pairwise/adjudication/{split.public_id}/",
        {"choice": choice, "strength": "clearly", "rationale": "A cites the block."},
    )
    assert client.post(url).status_code == 302
    item = PairCalibrationItem.objects.get(source_pair=split)
    assert item.reference == "a"
    assert _client(admin_user).post(url).status_code == 302
    assert PairCalibrationItem.objects.count() == before + 1


def test_grant_a_retake_answers_each_role(world, lead, admin_user):
    person = world["fresh"]
    PairQualification.objects.create(
        project=default_project(),
        reviewer=person,
        n_items=4,
        kappa=0.1,
        threshold=0.7,
        passed=False,
    )
    url = f"/pairwise/qualifications/{person.pk}/reset/"
    outsider = UserFactory(username="pw-outsider")
    assert _client(person).post(url).status_code == 403
    assert _client(outsider).post(url).status_code == 404
    tasks = _client(lead).get("/pairwise/tasks/").content.decode()
    assert "Grant a retake" in tasks
    assert _client(lead).post(url).status_code == 302
    assert not PairQualification.objects.filter(reviewer=person).exists()
    assert _client(admin_user).post(url).status_code == 404  # nothing left to reset


def test_leads_build_calibration_pairs_blind_on_their_own_sides(world, lead, admin_user):
    outsider = UserFactory(username="pw-outsider")
    url = "/pairwise/calibration/set/"
    got = [_client(p).get(url).status_code for p in (world["fresh"], lead, admin_user, outsider)]
    assert got == [403, 200, 200, 404]
    client = _client(lead)
    page = client.get(url)
    body = page.content.decode()
    for canary in CANARIES:
        assert canary not in body, canary
    candidate = page.context["pair"]
    before = PairCalibrationItem.objects.count()
    bad = client.post(url, {"item": candidate.public_id, "choice": "sideways"})
    assert bad.status_code == 422 and PairCalibrationItem.objects.count() == before
    assert client.post(url, {"item": "nope", "choice": "tie"}).status_code == 404
    assert client.post(url, {"item": candidate.public_id, "choice": "left"}).status_code == 302
    pair = PairwisePair.objects.get(public_id=candidate.public_id)
    item = PairCalibrationItem.objects.get(source_pair=pair)
    assert item.reference == ("a" if left_for(pair, lead.pk) == "a" else "b")
    assert client.get(url).context["pair"].public_id != candidate.public_id
