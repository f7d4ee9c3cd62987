"""Pairwise qualification through the API (issue 30): every endpoint for every role
(reviewer, lead, admin, non-member 404, anonymous 401); leads list the calibration pairs, read
the next candidate blind and add pairs with their reference (the calibration pages' services);
a reviewer reads their status, takes the calibration pairs blind on their own seeded sides and
qualifies (then claims real pairs); leads read the results; bad input is a 4xx naming the
field with nothing stored; no system, run, model or record id in any answer; the schema lists
the operations; lists keep a constant query count."""

import pytest
from django.urls import reverse

from goldset.models import (
    PairCalibrationAnswer,
    PairCalibrationItem,
    PairQualification,
    PairStatus,
    PairwisePair,
)
from goldset.rules.pairwise import choice_from_preference
from goldset.selectors.pairwise import BLIND_PAIR_FIELDS, calibration_left_for, left_for
from goldset.services.pairwise_calibration import add_calibration_pair
from tests.factories import UserFactory, default_project
from tests.goldset.pairwise_support import (
    assert_blind,
    build_runs,
    make_task,
    post_json,
    reviewers,
)

pytestmark = pytest.mark.django_db
REFERENCES = ("a", "b", "tie", "a")


@pytest.fixture
def world(lead):
    runs, _, _ = build_runs(n_systems=3, n_questions=4)
    task = make_task(runs, actor=lead, name="Calibration API")
    pairs = list(PairwisePair.objects.filter(task=task).order_by("position"))
    items = [
        add_calibration_pair(project=default_project(), actor=lead, pair=pair, reference=ref)
        for pair, ref in zip(pairs[:4], REFERENCES, strict=True)
    ]
    (fresh,) = reviewers(1, prefix="pw-cal-api", qualified=False)
    return {"task": task, "pairs": pairs, "items": items, "fresh": fresh}


def _urls(item="nope"):
    return {
        "calibration_pairs": ("get", reverse("api:pairwise_calibration_pairs")),
        "calibration_add": ("post", reverse("api:pairwise_calibration_pairs")),
        "candidate": ("get", reverse("api:pairwise_calibration_candidate")),
        "qualifications": ("get", reverse("api:pairwise_qualifications")),
        "qualification": ("get", reverse("api:pairwise_qualification")),
        "calibration_claim": ("post", reverse("api:pairwise_calibration_claim")),
        "calibration_judge": ("post", reverse("api:pairwise_calibration_judge", args=[item])),
    }


# endpoint: (reviewer, lead, admin, non-member). POSTs carry an empty body: a lead's add is a
# 400 naming "pair", a reviewer's judgment of a calibration pair a 400 naming "choice".
EXPECTED = {
    "calibration_pairs": (403, 200, 200, 404),
    "calibration_add": (403, 400, 400, 404),
    "candidate": (403, 200, 200, 404),
    "qualifications": (403, 200, 200, 404),
    "qualification": (200, 403, 403, 404),
    "calibration_claim": (200, 403, 403, 404),
    "calibration_judge": (400, 403, 403, 404),
}


@pytest.mark.parametrize("endpoint", sorted(EXPECTED))
def test_every_endpoint_answers_each_role(world, client_for, client, lead, admin_user, endpoint):
    method, url = _urls(world["items"][0].public_id)[endpoint]
    outsider = UserFactory(username="pw-cal-api-outsider")
    got = []
    for person in (world["fresh"], lead, admin_user, outsider):
        c = client_for(person)
        response = post_json(c, url) if method == "post" else c.get(url)
        got.append(response.status_code)
        if response.status_code >= 400:
            assert response["Content-Type"] == "application/problem+json"
        if response.status_code == 400:
            fields = {e["field"] for e in response.json()["errors"]}
            assert fields == ({"pair"} if endpoint == "calibration_add" else {"choice"})
    assert tuple(got) == EXPECTED[endpoint], (endpoint, got)
    anonymous = post_json(client, url) if method == "post" else client.get(url)
    assert anonymous.status_code == 401
    assert not PairCalibrationAnswer.objects.exists()
    assert PairCalibrationItem.objects.count() == 4


def test_a_reviewer_qualifies_through_the_api_blind(world, client_for, lead):
    reviewer = world["fresh"]
    c = client_for(reviewer)
    # not qualified yet: real pairs are closed (409), the status says why
    assert post_json(c, reverse("api:pairwise_claim")).status_code == 409
    start = c.get(reverse("api:pairwise_qualification")).json()
    assert start == {"qualified": False, "total": 4, "answered": 0, "problems": [], "result": None}
    items = {i.public_id: i for i in world["items"]}
    references = dict(zip([i.public_id for i in world["items"]], REFERENCES, strict=True))
    for n in range(1, 5):
        claimed = post_json(c, reverse("api:pairwise_calibration_claim"))
        assert claimed.status_code == 200
        body = claimed.json()
        assert set(body) == set(BLIND_PAIR_FIELDS) and body["status"] == "calibration"
        assert_blind(claimed.content.decode())
        item = items[body["public_id"]]
        left = calibration_left_for(item, reviewer.pk)
        shown = (item.record_a, item.record_b) if left == "a" else (item.record_b, item.record_a)
        assert (body["left_answer"], body["right_answer"]) == tuple(r.answer for r in shown)
        # the same pair again until it is judged
        assert post_json(c, reverse("api:pairwise_calibration_claim")).json() == body
        choice = choice_from_preference(references[item.public_id], left=left)
        url = reverse("api:pairwise_calibration_judge", args=[item.public_id])
        judged = post_json(c, url, {"choice": choice})
        assert judged.status_code == 201, judged.content
        assert_blind(judged.content.decode())
        data = judged.json()
        assert data["pair"] == item.public_id and data["choice"] == choice
        assert data["qualification"]["answered"] == n
        if n < 4:
            assert data["qualification"]["result"] is None
            again = post_json(c, url, {"choice": "tie"})  # a repeat stores nothing
            assert again.status_code == 200 and again.json()["choice"] == choice
    result = data["qualification"]["result"]
    assert data["qualification"]["qualified"] is True
    assert result["passed"] is True and result["kappa"] == 1.0 and result["n_items"] == 4
    assert result["disagreements"] == []
    assert PairCalibrationAnswer.objects.filter(reviewer=reviewer).count() == 4
    # scored: no calibration pair waits, the calibration pairs are closed, real pairs open
    assert post_json(c, reverse("api:pairwise_calibration_claim")).status_code == 204
    first = world["items"][0].public_id
    closed = post_json(
        c, reverse("api:pairwise_calibration_judge", args=[first]), {"choice": "tie"}
    )
    assert closed.status_code == 404
    assert post_json(c, reverse("api:pairwise_claim")).status_code == 200
    # the lead reads the result, the reviewer not named
    results = client_for(lead).get(reverse("api:pairwise_qualifications"))
    assert_blind(results.content.decode())
    (row,) = results.json()["results"]
    assert row["reviewer"] == "Reviewer 1" and row["passed"] is True and row["kappa"] == 1.0
    assert reviewer.username not in results.content.decode()


def test_a_failed_attempt_lists_the_disagreements_as_the_reviewer_saw_them(world, client_for):
    reviewer = world["fresh"]
    c = client_for(reviewer)
    for _ in range(4):
        public_id = post_json(c, reverse("api:pairwise_calibration_claim")).json()["public_id"]
        url = reverse("api:pairwise_calibration_judge", args=[public_id])
        last = post_json(c, url, {"choice": "both_unacceptable"}).json()
    result = last["qualification"]["result"]
    assert last["qualification"]["qualified"] is False and result["passed"] is False
    assert {d["item_id"] for d in result["disagreements"]} == {i.public_id for i in world["items"]}
    assert {d["yours"] for d in result["disagreements"]} == {"Both unacceptable"}
    assert not PairQualification.objects.get(reviewer=reviewer).passed


def test_a_bad_choice_is_a_400_naming_the_field_and_stores_nothing(world, client_for):
    c = client_for(world["fresh"])
    public_id = post_json(c, reverse("api:pairwise_calibration_claim")).json()["public_id"]
    url = reverse("api:pairwise_calibration_judge", args=[public_id])
    bad = post_json(c, url, {"choice": "A"})
    assert bad.status_code == 400
    assert [e["field"] for e in bad.json()["errors"]] == ["choice"]
    assert not PairCalibrationAnswer.objects.exists()
    # a calibration pair of nobody's: 404
    assert (
        post_json(c, reverse("api:pairwise_calibration_judge", args=["nope"]), {}).status_code
        == 404
    )


def test_the_claim_is_a_409_while_the_calibration_pairs_cannot_qualify(lead, client_for):
    runs, _, _ = build_runs(n_systems=2, n_questions=2)
    task = make_task(runs, actor=lead, name="Too few")
    pair = task.pairs.order_by("position").first()
    add_calibration_pair(project=default_project(), actor=lead, pair=pair, reference="a")
    (novice,) = reviewers(1, prefix="pw-cal-novice", qualified=False)
    refused = post_json(client_for(novice), reverse("api:pairwise_calibration_claim"))
    assert refused.status_code == 409 and refused.json()["detail"]
    status = client_for(novice).get(reverse("api:pairwise_qualification")).json()
    assert status["problems"] and status["total"] == 1


def test_leads_list_and_add_calibration_pairs_blind(world, client_for, lead, admin_user):
    for person in (lead, admin_user):
        listed = client_for(person).get(reverse("api:pairwise_calibration_pairs"))
        assert_blind(listed.content.decode())
        rows = listed.json()["results"]
        assert [r["public_id"] for r in rows] == [i.public_id for i in world["items"]]
        assert [r["reference"] for r in rows] == list(REFERENCES)
        assert rows[0]["answer_a"] == world["items"][0].record_a.answer
        assert all(r["answers"] == 0 for r in rows)
    c = client_for(lead)
    candidate = c.get(reverse("api:pairwise_calibration_candidate"))
    assert candidate.status_code == 200
    assert_blind(candidate.content.decode())
    shown = candidate.json()
    assert set(shown) == set(BLIND_PAIR_FIELDS)
    pair = PairwisePair.objects.get(project=default_project(), public_id=shown["public_id"])
    assert pair not in world["pairs"][:4]
    added = post_json(c, reverse("api:pairwise_calibration_pairs"), {"pair": pair.public_id,
                                                                "choice": "left"})  # fmt: skip
    assert added.status_code == 201, added.content
    assert_blind(added.content.decode())
    item = PairCalibrationItem.objects.get(public_id=added.json()["public_id"])
    # "left" as the lead saw the pair: the record on their left is the reference's winner
    assert item.reference == left_for(pair, lead.pk)
    assert (item.record_a_id, item.record_b_id) == (pair.record_a_id, pair.record_b_id)
    again = post_json(c, reverse("api:pairwise_calibration_pairs"), {"pair": pair.public_id})
    assert again.status_code == 200 and again.json()["public_id"] == item.public_id
    assert c.get(reverse("api:pairwise_calibration_candidate")).json()["public_id"] != (
        pair.public_id
    )


def test_bad_calibration_pairs_are_refused_naming_the_field(world, client_for, lead):
    c = client_for(lead)
    url = reverse("api:pairwise_calibration_pairs")
    undecided = world["pairs"][5]
    assert undecided.status == PairStatus.JUDGING
    refused = post_json(c, url, {"pair": undecided.public_id})  # no reference, nothing decided
    assert refused.status_code == 422
    assert [e["field"] for e in refused.json()["errors"]] == ["reference"]
    bad = post_json(c, url, {"pair": undecided.public_id, "choice": "A better"})
    assert bad.status_code == 400 and [e["field"] for e in bad.json()["errors"]] == ["choice"]
    assert post_json(c, url, {"pair": "nope", "choice": "tie"}).status_code == 404
    assert PairCalibrationItem.objects.count() == 4


def test_the_candidate_is_204_when_every_pair_calibrates(lead, client_for):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    task = make_task(runs, actor=lead, name="One pair")
    add_calibration_pair(
        project=default_project(), actor=lead, pair=task.pairs.get(), reference="tie"
    )
    assert client_for(lead).get(reverse("api:pairwise_calibration_candidate")).status_code == 204


def test_another_projects_calibration_is_404(world, client_for, make_user):
    from goldset.services.projects import create_project, grant_role
    from workbench.roles import Role

    admin = make_user(Role.ADMIN, username="pw-cal-other-admin")
    other = create_project(name="Other", slug="pw-cal-other", by=admin)
    grant_role(project=other, user=world["fresh"], role=Role.ANNOTATOR, by=admin)
    c = client_for(world["fresh"])
    public_id = world["items"][0].public_id
    url = f"/api/v1/projects/{other.slug}/pairwise/calibration/pairs/{public_id}/judgment/"
    assert post_json(c, url, {"choice": "tie"}).status_code == 404
    status = c.get(f"/api/v1/projects/{other.slug}/pairwise/qualification/").json()
    assert status["total"] == 0
    assert not PairCalibrationAnswer.objects.exists()


def test_lists_keep_a_constant_query_count(world, client_for, lead, django_assert_max_num_queries):
    c = client_for(lead)
    for url in (reverse("api:pairwise_calibration_pairs"), reverse("api:pairwise_qualifications")):
        with django_assert_max_num_queries(12):
            assert c.get(url).status_code == 200
    for person in reviewers(3, prefix="pw-cal-more", qualified=False):
        pc = client_for(person)
        for _ in range(4):
            public_id = post_json(pc, reverse("api:pairwise_calibration_claim")).json()["public_id"]
            post_json(
                pc, reverse("api:pairwise_calibration_judge", args=[public_id]), {"choice": "tie"}
            )
    for url in (reverse("api:pairwise_calibration_pairs"), reverse("api:pairwise_qualifications")):
        with django_assert_max_num_queries(12):
            assert c.get(url).status_code == 200


def test_the_schema_lists_the_qualification_operations(client):
    paths = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()["paths"]
    pairs = paths["/api/v1/pairwise/calibration/pairs/"]
    assert {"200", "401", "403", "404"} <= set(pairs["get"]["responses"])
    assert {"200", "201", "400", "422"} <= set(pairs["post"]["responses"])
    claim = paths["/api/v1/pairwise/calibration/claim/"]["post"]["responses"]
    assert {"200", "204", "409"} <= set(claim)
    judge = paths["/api/v1/pairwise/calibration/pairs/{public_id}/judgment/"]["post"]
    assert {"200", "201", "400", "404", "422"} <= set(judge["responses"])
    for path in (
        "/api/v1/pairwise/calibration/candidate/",
        "/api/v1/pairwise/qualification/",
        "/api/v1/pairwise/qualifications/",
    ):
        assert {"200", "401", "403", "404"} <= set(paths[path]["get"]["responses"]), path
