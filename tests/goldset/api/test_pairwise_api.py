"""Pairwise review through the API (issue 30): every endpoint for every role (annotator, lead,
admin, non-member 404); reviewers claim, read and judge pairs blind (the pages' field policy,
canary system/run/model ids never sent); unqualified reviewers get a 409; rule failures are 422
naming the field; leads read judgments and analysis with systems hidden (admins see them); the
schema lists the endpoints and their statuses; lists keep a constant query count."""

import json

import pytest
from django.urls import reverse

from goldset.models import PairJudgment, PairStatus, PairwisePair
from goldset.selectors.pairwise import (
    BLIND_PAIR_FIELDS,
    analysis_data,
    get_pairwise_analysis,
)
from tests.factories import UserFactory
from tests.goldset.pairwise_support import (
    CANARY_SYSTEMS,
    assert_blind,
    build_runs,
    judge_next,
    make_task,
    post_json,
    reviewers,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(lead):
    runs, _, _ = build_runs(n_systems=3, n_questions=2)
    task = make_task(runs, actor=lead, name="API task")
    judged = reviewers(3, prefix="pw-api")
    for person, preferences in zip(
        judged, (["a", "a", "b"], ["a", "b", "b"], ["tie", "a", "b"]), strict=True
    ):
        for preference in preferences:
            judge_next(person, preference, rationale="Because." if preference == "tie" else "")
    (fresh,) = reviewers(1, prefix="pw-api-fresh")
    return {"task": task, "judged": judged, "fresh": fresh}


def _urls(world, public_id="nope"):
    pk = world["task"].pk
    return {
        "tasks": ("get", reverse("api:pairwise_tasks")),
        "judgments": ("get", reverse("api:pairwise_judgments", args=[pk])),
        "analysis": ("get", reverse("api:pairwise_analysis", args=[pk])),
        "claim": ("post", reverse("api:pairwise_claim")),
        "pair": ("get", reverse("api:pairwise_pair", args=[public_id])),
        "judge": ("post", reverse("api:pairwise_judge", args=[public_id])),
    }


# endpoint: (reviewer, lead, admin, non-member); a reviewer's "pair"/"judge" of a pair that is
# not theirs is a 404, a judge POST with an empty body on their own pair a 400 naming "choice"
EXPECTED = {
    "tasks": (403, 200, 200, 404),
    "judgments": (403, 200, 200, 404),
    "analysis": (403, 200, 200, 404),
    "claim": (200, 403, 403, 404),
    "pair": (200, 403, 403, 404),
    "judge": (400, 403, 403, 404),
}


@pytest.mark.parametrize("endpoint", sorted(EXPECTED))
def test_every_endpoint_answers_each_role(world, client_for, client, lead, admin_user, endpoint):
    reviewer = world["fresh"]
    claimed = post_json(client_for(reviewer), reverse("api:pairwise_claim")).json()
    method, url = _urls(world, claimed["public_id"])[endpoint]
    outsider = UserFactory(username="pw-api-outsider")
    got = []
    for person in (reviewer, lead, admin_user, outsider):
        c = client_for(person)
        got.append((post_json(c, url) if method == "post" else c.get(url)).status_code)
    assert tuple(got) == EXPECTED[endpoint], (endpoint, got)
    anonymous = post_json(client, url) if method == "post" else client.get(url)
    assert anonymous.status_code == 401


def test_a_reviewer_claims_reads_and_judges_blind(world, client_for):
    reviewer = world["fresh"]
    c = client_for(reviewer)
    claimed = post_json(c, reverse("api:pairwise_claim"))
    assert claimed.status_code == 200
    body = claimed.json()
    assert set(body) == {*BLIND_PAIR_FIELDS, "judgment"} and body["judgment"] is None
    assert_blind(claimed.content.decode())
    public_id = body["public_id"]
    assert c.get(reverse("api:pairwise_pair", args=[public_id])).json() == body
    url = reverse("api:pairwise_judge", args=[public_id])
    missing = post_json(c, url, {"choice": "left"})
    assert missing.status_code == 422
    assert missing.json()["errors"] == [{"field": "strength", "message": missing.json()["detail"]}]
    assert not PairJudgment.objects.filter(reviewer=reviewer).exists()
    done = post_json(c, url, {"choice": "left", "strength": "clearly"})
    assert done.status_code == 201 and done.json()["judgment"] == "left"
    assert done["Location"].endswith(f"/pairwise/pairs/{public_id}/")
    assert_blind(done.content.decode())
    again = post_json(c, url, {"choice": "right", "strength": "slightly"})
    assert again.status_code == 200 and again.json()["judgment"] == "left"
    assert PairJudgment.objects.filter(reviewer=reviewer).count() == 1
    # another reviewer's pair is not theirs
    other = post_json(client_for(world["judged"][0]), reverse("api:pairwise_claim"))
    assert other.status_code in (200, 204)
    if other.status_code == 200 and other.json()["public_id"] != public_id:
        assert (
            c.get(reverse("api:pairwise_pair", args=[other.json()["public_id"]])).status_code == 404
        )


def test_an_unqualified_reviewer_gets_409_and_an_empty_queue_204(world, client_for):
    (novice,) = reviewers(1, prefix="pw-api-novice", qualified=False)
    refused = post_json(client_for(novice), reverse("api:pairwise_claim"))
    assert refused.status_code == 409 and "Qualify first" in refused.json()["detail"]
    # once a reviewer has judged every pair they may take, none waits for them
    first = world["judged"][0]
    while judge_next_or_none(first):
        pass
    assert post_json(client_for(first), reverse("api:pairwise_claim")).status_code == 204


def test_a_bad_choice_is_a_400_naming_the_field(world, client_for):
    c = client_for(world["fresh"])
    public_id = post_json(c, reverse("api:pairwise_claim")).json()["public_id"]
    bad = post_json(c, reverse("api:pairwise_judge", args=[public_id]), {"choice": "A"})
    assert bad.status_code == 400
    assert "choice" in json.dumps(bad.json())


def test_leads_read_judgments_blind_and_admins_with_systems(world, client_for, lead, admin_user):
    url = reverse("api:pairwise_judgments", args=[world["task"].pk])
    as_lead = client_for(lead).get(url)
    rows = as_lead.json()["results"]
    assert len(rows) == PairJudgment.objects.filter(pair__task=world["task"]).count()
    assert_blind(as_lead.content.decode())
    assert {r["reviewer"] for r in rows} <= {"Reviewer 1", "Reviewer 2", "Reviewer 3"}
    assert all(r["system_a"] is None and r["system_b"] is None for r in rows)
    as_admin = client_for(admin_user).get(url).json()["results"]
    assert {r["system_a"] for r in as_admin} | {r["system_b"] for r in as_admin} <= set(
        CANARY_SYSTEMS
    )
    first = PairJudgment.objects.filter(pair__task=world["task"]).order_by("id").first()
    assert as_admin[0]["pair"] == first.pair.public_id
    assert as_admin[0]["preference"] == first.preference and as_admin[0]["left"] == first.left


def test_the_analysis_equals_the_pages(world, client_for, lead, admin_user):
    task = world["task"]
    url = reverse("api:pairwise_analysis", args=[task.pk])
    as_lead = client_for(lead).get(url)
    assert_blind(as_lead.content.decode())
    data = as_lead.json()
    expected = analysis_data(get_pairwise_analysis(task=task, user=lead))
    assert data["ranking"] == expected["ranking"]
    assert data["pairs"] == expected["pairs"]
    assert data["position_bias"] == expected["position_bias"]
    assert {r["system"] for r in data["ranking"]} == {"System 1", "System 2", "System 3"}
    as_admin = client_for(admin_user).get(url).json()
    assert {r["system"] for r in as_admin["ranking"]} == set(CANARY_SYSTEMS)


def test_an_analysis_without_judgments_says_why(lead, client_for):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    task = make_task(runs, actor=lead, name="Empty")
    data = client_for(lead).get(reverse("api:pairwise_analysis", args=[task.pk])).json()
    assert data["reason"] == "No judgments yet." and "ranking" not in data


def test_lists_keep_a_constant_query_count(world, client_for, lead, django_assert_max_num_queries):
    c = client_for(lead)
    url = reverse("api:pairwise_judgments", args=[world["task"].pk])
    with django_assert_max_num_queries(14):
        assert c.get(url).status_code == 200
    for person in reviewers(3, prefix="pw-api-more"):
        while PairwisePair.objects.filter(
            task=world["task"], status=PairStatus.JUDGING
        ).exists() and judge_next_or_none(person):
            pass
    with django_assert_max_num_queries(14):
        assert c.get(url).status_code == 200
    with django_assert_max_num_queries(12):
        assert c.get(reverse("api:pairwise_tasks")).status_code == 200


def judge_next_or_none(person):
    from goldset.services.pairwise import claim_next_pair
    from tests.factories import default_project

    if claim_next_pair(project=default_project(), reviewer=person) is None:
        return False
    judge_next(person, "tie", rationale="Same.")
    return True


def test_the_schema_lists_the_pairwise_endpoints_and_their_statuses(client):
    schema = client.get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    claim = paths["/api/v1/pairwise/claim/"]["post"]["responses"]
    assert {"200", "204", "409", "401", "403", "404", "422"} <= set(claim)
    judge = paths["/api/v1/pairwise/pairs/{public_id}/judgment/"]["post"]["responses"]
    assert {"200", "201", "400", "422", "503"} <= set(judge)
    for path in (
        "/api/v1/pairwise/tasks/",
        "/api/v1/pairwise/tasks/{id}/judgments/",
        "/api/v1/pairwise/tasks/{id}/analysis/",
        "/api/v1/pairwise/pairs/{public_id}/",
    ):
        assert {"200", "401", "403", "404"} <= set(paths[path]["get"]["responses"]), path


def test_a_judgment_through_the_api_counts_in_the_time_on_item_figures(world, client_for, lead):
    """Time on item as for the page (``submit_judgment``'s ``timing``): the server time from the
    claim, the client's active time kept within it; the stored figures of the lead's dashboard
    (and its time.json download) include the reviewer's pairwise judgments."""
    from goldset.selectors.time_on_item import get_time_on_item_summary
    from goldset.services.time_on_item import refresh_time_on_item_figures
    from tests.factories import default_project

    reviewer = world["fresh"]
    c = client_for(reviewer)
    public_id = post_json(c, reverse("api:pairwise_claim")).json()["public_id"]
    url = reverse("api:pairwise_judge", args=[public_id])
    garbled = post_json(c, url, {"choice": "tie", "rationale": "Same.", "active_ms": -5})
    assert garbled.status_code == 400
    assert [e["field"] for e in garbled.json()["errors"]] == ["active_ms"]
    done = post_json(c, url, {"choice": "tie", "rationale": "Same.", "active_ms": 1500})
    assert done.status_code == 201
    judgment = PairJudgment.objects.get(reviewer=reviewer)
    assert judgment.server_ms is not None and judgment.active_ms == 1500
    # the stored figures miss it until the recompute runs: the row is there, marked stale
    (before,) = [
        r for r in get_time_on_item_summary(project=default_project()) if r.user_id == reviewer.pk
    ]
    assert (before.kind, before.kind_label, before.stale) == (
        "pair_judgment",
        "Pairwise judgment",
        True,
    )
    assert refresh_time_on_item_figures() >= 1
    (row,) = [
        r for r in get_time_on_item_summary(project=default_project()) if r.user_id == reviewer.pk
    ]
    assert (row.kind, row.n, row.median_s, row.stale) == ("pair_judgment", 1, 1.5, False)
    # a second judgment without a client time: server time only, not in the active figures
    second = post_json(c, reverse("api:pairwise_claim")).json()["public_id"]
    post_json(c, reverse("api:pairwise_judge", args=[second]), {"choice": "tie", "rationale": "S."})
    untimed = PairJudgment.objects.filter(reviewer=reviewer).order_by("-id").first()
    assert untimed.server_ms is not None and untimed.active_ms is None
    refresh_time_on_item_figures()
    rows = (
        client_for(lead)
        .get(reverse("quality:table-download", kwargs={"name": "time", "fmt": "json"}))
        .json()
    )
    assert rows, rows
    text = json.dumps(rows)
    assert "pair_judgment" in text
