"""Pairwise review's writes through the API, on the pages' services (issue 30: "the same
through the API"): a lead creates a task from the runs as the task form offers them (blind),
on a gold version named by number or tag; a reviewer skips a pair and undoes a judgment; a
lead adjudicates a split. Every endpoint for every role (annotator, lead, admin, non-member
404, anonymous 401), errors as problem+json naming the field, and no system, run, model or
answer-record id in any answer to an annotator or a lead."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from goldset.models import PairJudgment, PairSkip, PairStatus, PairwisePair, PairwiseTask
from goldset.rules.pairwise import preference_from_choice
from goldset.selectors.pairwise import BLIND_PAIR_FIELDS, left_for, list_blind_judgments
from goldset.services.version_tags import set_version_tag
from tests.factories import UserFactory, default_project
from tests.goldset.pairwise_support import (
    CANARY_RUNS,
    assert_blind,
    build_runs,
    frozen_runs,
    judge_next,
    make_task,
    post_json,
    reviewers,
)

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"
PLAN = (  # three reviewers' preferences (relative to A/B) in queue order: pair 1 splits
    ["a", "a", "b", "tie"],
    ["b", "a", "b", "tie"],
    ["tie", "a", "b", "tie"],
)


@pytest.fixture
def world(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=4)
    task = make_task(runs, actor=lead, name="API writes")
    judged = reviewers(3, prefix="pw-w")
    for person, plan in zip(judged, PLAN, strict=True):
        for preference in plan:
            judge_next(person, preference, rationale="Because.")
    split = PairwisePair.objects.get(task=task, status=PairStatus.NEEDS_ADJUDICATION)
    make_task(runs, actor=lead, name="Second look")  # open pairs for a fresh reviewer
    (fresh,) = reviewers(1, prefix="pw-w-fresh")
    return {"runs": runs, "task": task, "judged": judged, "split": split, "fresh": fresh}


def _problem(response, status: int) -> dict:
    assert response.status_code == status, response.content[:400]
    assert response["Content-Type"] == PROBLEM
    return response.json()


# ---------------------------------------------------------------- every endpoint, every role


def _calls(world):
    split = world["split"].public_id
    return {
        "runs": ("get", reverse("api:pairwise_runs")),
        "create task": ("post", reverse("api:pairwise_tasks")),
        "skip": ("post", reverse("api:pairwise_skip", args=[world["held"]])),
        "undo": ("post", reverse("api:pairwise_undo")),
        "splits": ("get", reverse("api:pairwise_adjudications")),
        "split": ("get", reverse("api:pairwise_adjudication", args=[split])),
        "adjudicate": ("post", reverse("api:pairwise_adjudication", args=[split])),
    }


# endpoint: (the reviewer holding a pair, lead, admin, non-member); an empty body
EXPECTED = {
    "runs": (403, 200, 200, 404),
    "create task": (403, 400, 400, 404),  # no name, no runs
    "skip": (422, 403, 403, 404),  # no reason
    "undo": (422, 403, 403, 404),  # nothing to undo
    "splits": (403, 200, 200, 404),
    "split": (403, 200, 200, 404),
    "adjudicate": (403, 400, 400, 404),  # no choice
}


@pytest.mark.parametrize("endpoint", sorted(EXPECTED))
def test_every_new_endpoint_answers_each_role(
    world, client_for, client, lead, admin_user, endpoint
):
    reviewer = world["fresh"]
    world["held"] = post_json(client_for(reviewer), reverse("api:pairwise_claim")).json()[
        "public_id"
    ]
    method, url = _calls(world)[endpoint]
    outsider = UserFactory(username="pw-w-outsider")  # a member of no project
    got = []
    for person in (reviewer, lead, admin_user, outsider):
        c = client_for(person)
        response = post_json(c, url) if method == "post" else c.get(url)
        got.append(response.status_code)
        if response.status_code >= 400:
            assert response["Content-Type"] == PROBLEM, (endpoint, person)
        if person in (reviewer, lead):
            assert_blind(response.content.decode())
    assert tuple(got) == EXPECTED[endpoint], (endpoint, got)
    anonymous = post_json(client, url) if method == "post" else client.get(url)
    assert anonymous.status_code == 401 and anonymous["Content-Type"] == PROBLEM
    assert PairwiseTask.objects.count() == 2 and not PairSkip.objects.exists()


# ---------------------------------------------------------------- creating a task


def test_a_lead_creates_a_task_on_a_gold_version_named_by_its_tag(client_for, lead, admin_user):
    runs, version, frozen, later = frozen_runs(admin_user)
    set_version_tag(project=default_project(), actor=admin_user, name="pw-gold", version=version)
    c = client_for(lead)
    listed = c.get(reverse("api:pairwise_runs"))
    assert listed.status_code == 200
    assert_blind(listed.content.decode())  # "Run 1 (5 answers)": no run id for a lead
    offered = listed.json()
    assert {r["id"] for r in offered} == {run.pk for run in runs}
    assert all(r["label"].startswith("Run ") for r in offered)
    as_admin = client_for(admin_user).get(reverse("api:pairwise_runs")).json()
    assert {r["label"].split(" ")[0] for r in as_admin} == set(CANARY_RUNS)  # admins see ids
    body = {
        "name": "Versioned via API",
        "runs": [r["id"] for r in offered],
        "design": "balanced",
        "comparisons_per_question": 1,
        "tier": "tier_a",
        "seed": 77,
        "gold_version": "pw-gold",
    }
    created = post_json(c, reverse("api:pairwise_tasks"), body)
    assert created.status_code == 201, created.content
    assert_blind(created.content.decode())
    data = created.json()
    assert (data["name"], data["gold_version"], data["seed"], data["tier"]) == (
        "Versioned via API",
        1,
        77,
        "tier_a",
    )
    assert (data["reviewers_per_pair"], data["pairs"]) == (1, len(frozen))
    assert created["Location"].endswith(f"/pairwise/tasks/{data['id']}/analysis/")
    task = PairwiseTask.objects.get(pk=data["id"])
    assert task.gold_version == version
    assert set(task.pairs.values_list("question__question_id", flat=True)) == set(frozen)
    # the pages' service drew them: the same seed and runs there give the same pairs
    twin = make_task(
        runs,
        actor=lead,
        name="Twin",
        design="balanced",
        comparisons_per_question=1,
        tier="tier_a",
        seed=77,
        gold_version=version,
    )
    draw = ("question__question_id", "record_a__public_id", "record_b__public_id", "queue_rank")
    assert list(task.pairs.order_by("position").values_list(*draw)) == list(
        twin.pairs.order_by("position").values_list(*draw)
    )
    # by number, and without a version: every shared question
    by_number = post_json(
        c, reverse("api:pairwise_tasks"), {**body, "name": "v1", "gold_version": 1}
    )
    assert by_number.status_code == 201 and by_number.json()["gold_version"] == 1
    loose = post_json(
        c, reverse("api:pairwise_tasks"), {**body, "name": "Loose", "gold_version": None}
    )
    assert loose.json()["gold_version"] is None
    assert loose.json()["pairs"] == len(frozen) + len(later)
    rows = {
        t["name"]: t["gold_version"] for t in c.get(reverse("api:pairwise_tasks")).json()["results"]
    }
    assert rows["Versioned via API"] == 1 and rows["Loose"] is None


@pytest.mark.parametrize(
    "change,status,field",
    [
        ({"gold_version": "v99"}, 422, "gold_version"),  # no such frozen version
        ({"gold_version": "no-such-tag"}, 422, "gold_version"),
        ({"runs": [999999, 999998]}, 422, "runs"),  # not runs of this project
        ({"design": "balanced"}, 422, "comparisons_per_question"),
        ({"name": "   "}, 400, "name"),  # blank once trimmed
        ({"runs": [1]}, 400, "runs"),  # fewer than two
        ({"tier": "tier_z"}, 400, "tier"),
    ],
)
def test_a_bad_task_is_refused_naming_the_field(
    client_for, lead, admin_user, change, status, field
):
    runs, _, _, _ = frozen_runs(admin_user)
    body = {"name": "Refused", "runs": [r.pk for r in runs], "gold_version": "1", **change}
    problem = _problem(post_json(client_for(lead), reverse("api:pairwise_tasks"), body), status)
    assert field in [e["field"] for e in problem["errors"]], problem
    assert_blind(str(problem))
    assert not PairwiseTask.objects.exists()


# ---------------------------------------------------------------- a reviewer's skip and undo


def test_a_reviewer_skips_a_pair_and_undoes_a_judgment(world, client_for):
    reviewer = world["fresh"]
    c = client_for(reviewer)
    held = post_json(c, reverse("api:pairwise_claim")).json()["public_id"]
    skip_url = reverse("api:pairwise_skip", args=[held])
    no_reason = _problem(post_json(c, skip_url, {"reason": "  "}), 422)
    assert no_reason["errors"] == [{"field": "reason", "message": no_reason["detail"]}]
    skipped = post_json(c, skip_url, {"reason": "Outside my expertise"})
    assert skipped.status_code == 201 and skipped.json()["pair"] == held
    assert PairSkip.objects.get(reviewer=reviewer).reason == "Outside my expertise"
    assert c.get(reverse("api:pairwise_pair", args=[held])).status_code == 404  # given back
    following = post_json(c, reverse("api:pairwise_claim")).json()
    assert following["public_id"] != held  # never offered to them again
    judge_url = reverse("api:pairwise_judge", args=[following["public_id"]])
    post_json(c, judge_url, {"choice": "left", "strength": "clearly"})
    judged_skip = post_json(
        c, reverse("api:pairwise_skip", args=[following["public_id"]]), {"reason": "x"}
    )
    assert "use undo instead" in _problem(judged_skip, 422)["detail"]
    undone = post_json(c, reverse("api:pairwise_undo"))
    assert undone.status_code == 200
    assert_blind(undone.content.decode())
    body = undone.json()
    assert set(body) == {*BLIND_PAIR_FIELDS, "judgment"}
    assert (body["public_id"], body["judgment"]) == (following["public_id"], None)
    assert not PairJudgment.objects.filter(reviewer=reviewer).exists()
    nothing = _problem(post_json(c, reverse("api:pairwise_undo")), 422)
    assert nothing["detail"] == "You have no judgment to undo."
    # someone else's pair is not theirs to skip
    other = world["judged"][0]
    theirs = PairJudgment.objects.filter(reviewer=other).first().pair.public_id
    assert (
        post_json(c, reverse("api:pairwise_skip", args=[theirs]), {"reason": "x"}).status_code
        == 404
    )


def test_undo_after_the_window_is_refused_with_the_window_named(world, client_for):
    reviewer = world["fresh"]
    c = client_for(reviewer)
    public_id = post_json(c, reverse("api:pairwise_claim")).json()["public_id"]
    post_json(
        c, reverse("api:pairwise_judge", args=[public_id]), {"choice": "tie", "rationale": "Same."}
    )
    judgment = PairJudgment.objects.get(reviewer=reviewer)
    PairJudgment.objects.filter(pk=judgment.pk).update(
        created_at=timezone.now() - timedelta(seconds=121)
    )  # the default window: 120 s
    refused = _problem(post_json(c, reverse("api:pairwise_undo")), 422)
    assert refused["detail"] == "Undo is possible for 2 min after a submit; that has passed."
    assert PairJudgment.objects.filter(pk=judgment.pk).exists()


# ---------------------------------------------------------------- a lead adjudicates a split


def test_a_lead_adjudicates_a_split_through_the_api(world, client_for, lead, admin_user):
    split = world["split"]
    c = client_for(lead)
    waiting = c.get(reverse("api:pairwise_adjudications"))
    assert waiting.status_code == 200
    text = waiting.content.decode()
    assert_blind(text)
    for person in world["judged"]:
        assert person.username not in text
    (row,) = waiting.json()["results"]
    assert row["public_id"] == split.public_id and row["task"] == "API writes"
    left = left_for(split, lead.pk)
    page = list_blind_judgments(split, user=lead, left=left)  # what the page shows the lead
    assert row["judgments"] == [
        {
            "reviewer": j.reviewer,
            "choice": j.choice,
            "strength": j.strength,
            "rationale": j.rationale,
        }
        for j in page
    ]
    assert [j["reviewer"] for j in row["judgments"]] == ["Reviewer 1", "Reviewer 2", "Reviewer 3"]
    assert row["adjudication"] is None
    url = reverse("api:pairwise_adjudication", args=[split.public_id])
    assert c.get(url).json() == row
    no_rationale = _problem(post_json(c, url, {"choice": "left", "strength": "clearly"}), 422)
    assert no_rationale["errors"][0]["field"] == "rationale"
    no_strength = _problem(post_json(c, url, {"choice": "left", "rationale": "A."}), 422)
    assert no_strength["errors"][0]["field"] == "strength"
    done = post_json(c, url, {"choice": "left", "strength": "clearly", "rationale": "A is right."})
    assert done.status_code == 201
    assert_blind(done.content.decode())
    assert done.json()["adjudication"]["choice"] == "left"
    assert done.json()["status"] == PairStatus.ADJUDICATED
    split.refresh_from_db()
    assert split.status == PairStatus.ADJUDICATED
    assert split.final_preference == preference_from_choice("left", left=left)
    assert split.adjudication.lead == lead and split.adjudication.rationale == "A is right."
    assert c.get(reverse("api:pairwise_adjudications")).json()["results"] == []
    again = _problem(
        post_json(c, url, {"choice": "right", "strength": "slightly", "rationale": "B."}), 422
    )
    assert "not waiting for your adjudication" in again["detail"]
    # an admin reads the decision on their own sides
    shown = client_for(admin_user).get(url).json()["adjudication"]
    expected = "left" if left_for(split, admin_user.pk) == left else "right"
    assert shown["choice"] == expected


def test_updated_since_lists_the_pairs_split_since(world, client_for, lead):
    """A split pair's change time is the judgment that split it (a split pair takes no more
    judgments and no undo)."""
    split = world["split"]
    last = PairJudgment.objects.filter(pair=split).latest("created_at").created_at
    api = client_for(lead)
    url = reverse("api:pairwise_adjudications")
    listed = api.get(url, {"updated_since": last.isoformat()}).json()["results"]
    assert [row["public_id"] for row in listed] == [split.public_id]
    later = (last + timedelta(microseconds=1)).isoformat()
    assert api.get(url, {"updated_since": later}).json()["results"] == []
    PairJudgment.objects.filter(pair=split).update(created_at=last - timedelta(days=2))
    since = (last - timedelta(days=1)).isoformat()
    assert api.get(url, {"updated_since": since}).json()["results"] == []


def test_the_list_of_splits_keeps_a_constant_query_count(world, client_for, lead):
    c = client_for(lead)
    url = reverse("api:pairwise_adjudications")
    c.get(url)  # the session and role lookups, warmed
    with CaptureQueriesContext(connection) as one:
        assert len(c.get(url).json()["results"]) == 1
    for person, plan in zip(reviewers(3, prefix="pw-w-more"), PLAN, strict=True):
        for preference in plan:
            judge_next(person, preference, rationale="Because.")
    assert PairwisePair.objects.filter(status=PairStatus.NEEDS_ADJUDICATION).count() == 2
    with CaptureQueriesContext(connection) as two:
        assert len(c.get(url).json()["results"]) == 2
    assert len(two.captured_queries) == len(one.captured_queries) <= 12


def test_the_schema_lists_the_new_operations_and_their_statuses(client):
    paths = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()["paths"]
    expected = {
        ("/api/v1/pairwise/tasks/", "post"): {"201", "400", "403", "404", "422"},
        ("/api/v1/pairwise/runs/", "get"): {"200", "401", "403", "404"},
        ("/api/v1/pairwise/pairs/{public_id}/skip/", "post"): {"201", "400", "404", "422"},
        ("/api/v1/pairwise/undo/", "post"): {"200", "403", "422"},
        ("/api/v1/pairwise/adjudications/", "get"): {"200", "401", "403", "404"},
        ("/api/v1/pairwise/adjudications/{public_id}/", "get"): {"200", "403", "404"},
        ("/api/v1/pairwise/adjudications/{public_id}/", "post"): {"201", "400", "422", "503"},
    }
    for (path, method), statuses in expected.items():
        assert statuses <= set(paths[path][method]["responses"]), (path, method)
