"""Pairwise pages for every role (annotator, lead, admin, non-member 404, anonymous → login), the
task form (422 on invalid input), one motion per pair, a blinding crawl of the judging and
adjudication pages with canary system, run and model ids (never in the page, nor any answer
record's public id), and the analysis page's figures equal ``scoring.pairwise.analyse`` on the
same judgments (systems named for admins only)."""

import re

import pytest
from django.test import Client

from goldset.models import PairJudgment, PairStatus, PairwisePair, PairwiseTask
from goldset.services.freeze import store_frozen_version
from goldset.services.pairwise import claim_next_pair, submit_judgment
from goldset.services.version_tags import set_version_tag
from scoring.pairwise import Judgment, analyse
from tests.factories import UserFactory, default_project, gold_row_for, make_gold_corpus
from tests.goldset.pairwise_support import (
    CANARY_MODEL,
    CANARY_RUNS,
    CANARY_SYSTEMS,
    build_runs,
    choice_for,
    judge_next,
    make_task,
    reviewers,
)

pytestmark = pytest.mark.django_db

CANARIES = ("CANARYSYS", "CANARYRUN", "CANARYMODEL", *CANARY_SYSTEMS, *CANARY_RUNS, CANARY_MODEL)
RECORD_ID = re.compile(r"pw-q\d+-s\d+")
PLAN = {  # each reviewer's preferences (relative to A/B) in the queue's order
    "one": ["a", "a", "a", "b", "b", "tie"],
    "two": ["b", "a", "a", "b", "a", "tie"],
    "three": ["tie", "a", "b", "b", "b", "both_unacceptable"],
}


@pytest.fixture
def world(lead, admin_user):
    runs, questions, records = build_runs(n_systems=3, n_questions=2)
    task = make_task(runs, actor=lead, name="Three systems")
    people = dict(zip(PLAN, reviewers(3), strict=True))
    for name, person in people.items():
        for preference in PLAN[name]:
            judge_next(person, preference, rationale="Because." if preference == "tie" else "")
    split = PairwisePair.objects.get(task=task, status=PairStatus.NEEDS_ADJUDICATION)
    # a second task where a fresh annotator holds a pair
    make_task(runs, actor=lead, name="Second look")
    (fresh,) = reviewers(1, prefix="pw-fresh")
    held = claim_next_pair(project=default_project(), reviewer=fresh)
    return {
        "task": task,
        "split": split,
        "people": people,
        "fresh": fresh,
        "held": held,
        "records": records,
    }


def _client(user):
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _body(response) -> str:
    return response.content.decode()


def _assert_blind(html: str):
    for canary in CANARIES:
        assert canary not in html, canary
    assert not RECORD_ID.search(html), RECORD_ID.search(html).group(0)


# ---------------------------------------------------------------- every page, every role


def _urls(world):
    return {
        "queue": "/pairwise/",
        "tasks": "/pairwise/tasks/",
        "create": "/pairwise/tasks/new/",
        "analysis": f"/pairwise/tasks/{world['task'].pk}/analysis/",
        "adjudicate": f"/pairwise/adjudication/{world['split'].public_id}/",
        "judge": f"/pairwise/pairs/{world['held'].pair.public_id}/",
    }


EXPECTED = {
    # page: (owner annotator, other annotator, lead, admin, non-member)
    "queue": (200, 200, 403, 403, 404),
    "tasks": (403, 403, 200, 200, 404),
    "create": (403, 403, 200, 200, 404),
    "analysis": (403, 403, 200, 200, 404),
    "adjudicate": (403, 403, 200, 200, 404),
    "judge": (200, 404, 403, 403, 404),
}


@pytest.mark.parametrize("page", sorted(EXPECTED))
def test_every_page_answers_each_role_as_the_access_table_says(world, lead, admin_user, page):
    outsider = UserFactory(username="outsider")  # a member of no project
    url = _urls(world)[page]
    people = (world["fresh"], world["people"]["one"], lead, admin_user, outsider)
    got = tuple(_client(person).get(url).status_code for person in people)
    assert got == EXPECTED[page], (page, got)
    anonymous = _client(None).get(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_the_same_pages_inside_the_project_mount(world, lead):
    response = _client(lead).get(f"/p/{default_project().slug}/pairwise/tasks/")
    assert response.status_code == 200
    assert world["task"].name in _body(response)


def test_reviewers_find_pairwise_in_their_queue(world):
    body = _body(_client(world["fresh"]).get("/answers/"))
    assert 'href="/pairwise/"' in body


# ---------------------------------------------------------------- the task form


def test_the_task_form_rejects_invalid_input_with_422_and_stores_nothing(world, lead):
    client = _client(lead)
    before = PairwiseTask.objects.count()
    run = world["records"][(0, 0)].run
    bad = client.post(
        "/pairwise/tasks/new/",
        {"name": "Only one", "runs": [run.pk], "design": "all_pairs", "tier": "tier_b", "seed": 5},
    )
    assert bad.status_code == 422
    assert "Choose two or more runs." in _body(bad)
    balanced = client.post(
        "/pairwise/tasks/new/",
        {
            "name": "No n",
            "runs": [world["records"][(0, j)].run.pk for j in range(3)],
            "design": "balanced",
            "tier": "tier_b",
            "seed": 5,
        },
    )
    assert balanced.status_code == 422
    assert "needs a number per question" in _body(balanced)
    assert PairwiseTask.objects.count() == before


def test_a_lead_creates_a_task_from_pseudonymous_runs(world, lead):
    client = _client(lead)
    page = _body(client.get("/pairwise/tasks/new/"))
    _assert_blind(page)  # the runs are offered as "Run 1", "Run 2", …
    assert "Run 1 (" in page
    response = client.post(
        "/pairwise/tasks/new/",
        {
            "name": "Balanced look",
            "runs": [world["records"][(0, j)].run.pk for j in range(3)],
            "design": "balanced",
            "comparisons_per_question": 2,
            "tier": "tier_a",
            "seed": 77,
        },
    )
    assert response.status_code == 302
    task = PairwiseTask.objects.get(name="Balanced look")
    assert (task.seed, task.reviewers_per_pair, task.pairs.count()) == (77, 1, 4)


def test_the_task_form_names_its_gold_version_by_tag_or_number(world, lead, admin_user):
    blocks = make_gold_corpus(2)
    rows = [gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(blocks)]
    v1 = store_frozen_version(project=default_project(), rows=rows, actor=admin_user)
    set_version_tag(project=default_project(), actor=admin_user, name="release-2026q4", version=v1)
    client = _client(lead)
    page = _body(client.get("/pairwise/tasks/new/"))
    assert "(none)" in page and "release-2026q4 → v1" in page
    runs = [world["records"][(0, j)].run.pk for j in range(3)]
    form = {"runs": runs, "design": "all_pairs", "tier": "tier_b", "seed": 5}
    for name, ref, expected in [("By tag", "release-2026q4", v1), ("By number", "1", v1),
                                ("None", "", None)]:  # fmt: skip
        response = client.post("/pairwise/tasks/new/", {**form, "name": name, "gold_version": ref})
        assert response.status_code == 302, _body(response)
        assert PairwiseTask.objects.get(name=name).gold_version == expected
    unknown = client.post("/pairwise/tasks/new/", {**form, "name": "x", "gold_version": "nope"})
    assert unknown.status_code == 422 and "no gold version is tagged" in _body(unknown)


# ---------------------------------------------------------------- judging, one motion per pair


def test_a_judgment_answers_with_the_next_pair_itself(world):
    client = _client(world["fresh"])
    url = f"/pairwise/pairs/{world['held'].pair.public_id}/"
    response = client.post(
        url,
        {"choice": "left", "strength": "clearly"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="pair-item",
    )
    assert response.status_code == 200
    following = response["HX-Push-Url"]
    assert following.startswith("/pairwise/pairs/") and following != url
    assert 'id="pair-item"' in _body(response) and "<html" not in _body(response)
    assert PairJudgment.objects.filter(reviewer=world["fresh"]).count() == 1
    _assert_blind(_body(response))


def test_an_invalid_judgment_is_422_with_the_field_named(world):
    client = _client(world["fresh"])
    url = f"/pairwise/pairs/{world['held'].pair.public_id}/"
    response = client.post(url, {"choice": "left"})
    assert response.status_code == 422
    assert "slightly or clearly" in _body(response)
    assert not PairJudgment.objects.filter(reviewer=world["fresh"]).exists()


def test_skip_and_undo_from_the_page(world):
    client = _client(world["fresh"])
    held = world["held"].pair.public_id
    skipped = client.post(f"/pairwise/pairs/{held}/skip/", {"reason": "Cannot judge"})
    assert skipped.status_code == 302 and held not in skipped["Location"]
    nxt = re.search(r"/pairwise/pairs/([^/]+)/", skipped["Location"]).group(1)
    client.post(f"/pairwise/pairs/{nxt}/", {"choice": "tie"})
    undone = client.post("/pairwise/undo/")
    assert undone.status_code == 200 and f"/pairwise/pairs/{nxt}/" in _body(undone)
    assert not PairJudgment.objects.filter(reviewer=world["fresh"]).exists()
    refused = client.post(f"/pairwise/pairs/{nxt}/skip/", {"reason": ""})
    assert refused.status_code == 422


# ---------------------------------------------------------------- blinding crawl


def test_the_judging_and_adjudication_pages_never_name_a_system(world, lead):
    annotator = _client(world["fresh"])
    judge = f"/pairwise/pairs/{world['held'].pair.public_id}/"
    bodies = {
        judge: _body(annotator.get(judge)),
        f"{judge} #pair-item": _body(
            annotator.get(judge, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="pair-item")
        ),
        f"{judge} (422)": _body(annotator.post(judge, {"choice": "right"})),
        "/pairwise/": _body(annotator.get("/pairwise/")),
    }
    # the reviewers' own pages after judging (their judgment shown)
    one = _client(world["people"]["one"])
    for pair in PairwisePair.objects.filter(task=world["task"]):
        url = f"/pairwise/pairs/{pair.public_id}/"
        bodies[url] = _body(one.get(url))
    lead_client = _client(lead)
    adjudicate = f"/pairwise/adjudication/{world['split'].public_id}/"
    bodies[adjudicate] = _body(lead_client.get(adjudicate))
    bodies[f"{adjudicate} #pair-adjudication"] = _body(
        lead_client.get(adjudicate, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="pair-adjudication")
    )
    bodies[f"{adjudicate} (422)"] = _body(lead_client.post(adjudicate, {"choice": "left"}))
    for url in ("/pairwise/tasks/", f"/pairwise/tasks/{world['task'].pk}/analysis/"):
        bodies[url] = _body(lead_client.get(url))
    # follow every link of the lead's and annotator's pages inside /pairwise/
    for client, start in ((lead_client, "/pairwise/tasks/"), (annotator, "/pairwise/")):
        for link in set(re.findall(r'href="(/pairwise/[^"#]*)"', _body(client.get(start)))):
            bodies[link] = _body(client.get(link))
    assert len(bodies) >= 14
    for url, html in bodies.items():
        try:
            _assert_blind(html)
        except AssertionError as exc:
            raise AssertionError(f"{url}: {exc}") from None
    # no reviewer's name on the lead's adjudication page either
    for person in world["people"].values():
        assert person.username not in bodies[adjudicate]
    assert "Reviewer 1" in bodies[adjudicate]


def test_the_answers_are_on_the_sides_drawn_for_each_person(world):
    pair = world["held"].pair
    html = _body(_client(world["fresh"]).get(f"/pairwise/pairs/{pair.public_id}/"))
    left = pair.record_a if world["held"].left == "a" else pair.record_b
    right = pair.record_b if world["held"].left == "a" else pair.record_a
    start, middle = html.index('id="answer-left"'), html.index('id="answer-right"')
    assert left.answer in html[start:middle]
    assert right.answer in html[middle:]
    assert "A (left)" in html and "B (right)" in html


def test_a_lead_adjudicates_a_split_from_the_page(world, lead):
    client = _client(lead)
    url = f"/pairwise/adjudication/{world['split'].public_id}/"
    missing = client.post(url, {"choice": "left", "strength": "clearly"})
    assert missing.status_code == 422 and "Rationale required" in _body(missing)
    done = client.post(url, {"choice": "left", "strength": "clearly", "rationale": "A is right."})
    assert done.status_code == 302
    world["split"].refresh_from_db()
    assert world["split"].status == PairStatus.ADJUDICATED
    assert "Adjudicated" in _body(client.get(url))


# ---------------------------------------------------------------- analysis


def _independent_judgments(task) -> list[Judgment]:
    """The task's judgments read straight from the rows, systems by their ids."""
    out = []
    for j in PairJudgment.objects.filter(pair__task=task).select_related(
        "pair__question__domain",
        "pair__record_a__run__system",
        "pair__record_b__run__system",
        "reviewer",
    ):
        a = j.pair.record_a.run.system.system_id
        b = j.pair.record_b.run.system.system_id
        out.append(
            Judgment(
                question_id=j.pair.question.question_id,
                system_a=a,
                system_b=b,
                left=a if j.left == "a" else b,
                preference=j.preference,
                reviewer=j.reviewer.username,
                strength=j.strength or None,
                stratum=j.pair.question.domain.slug,
            )
        )
    return out


def test_the_analysis_figures_equal_scoring_pairwise_analyse(world, admin_user):
    expected = analyse(_independent_judgments(world["task"]))
    response = _client(admin_user).get(f"/pairwise/tasks/{world['task'].pk}/analysis/")
    assert response.status_code == 200
    analysis = response.context["analysis"]
    got = {
        s["system"]: (s["rank"], s["strength"], s["ci"].low, s["ci"].high, s["n"])
        for s in analysis.strengths
    }
    want = {
        s.system: (s.rank, s.strength, s.ci.low, s.ci.high, s.n_judgments)
        for s in expected.strengths
    }
    assert set(got) == set(want) == set(CANARY_SYSTEMS)
    assert got == want  # the same systems in the same order: the same arithmetic
    pairs = {(p["a"], p["b"]): p["row"] for p in analysis.pairs}
    for p in expected.pairs:
        row = pairs.get((p.system_a, p.system_b))
        assert row is not None
        assert (row.wins_a, row.wins_b, row.ties, row.both_unacceptable) == (
            p.wins_a,
            p.wins_b,
            p.ties,
            p.both_unacceptable,
        )
        assert (row.win_rate_a, row.win_rate_a_ci) == (p.win_rate_a, p.win_rate_a_ci)
        assert (row.p_b_beats_a, row.p_b_beats_a_ci) == (p.p_b_beats_a, p.p_b_beats_a_ci)
        assert row.share_resamples_b_stronger == p.share_resamples_b_stronger
    report = analysis.report
    assert report.agreement.alpha == pytest.approx(expected.agreement.alpha)
    assert sorted(k.kappa for k in report.agreement.kappa) == pytest.approx(
        sorted(k.kappa for k in expected.agreement.kappa)
    )
    biases = {b["who"]: b["row"] for b in analysis.position_bias}
    for b in expected.position_bias:
        who = "All reviewers" if b.reviewer is None else b.reviewer
        assert (biases[who].n_decisive, biases[who].n_left) == (b.n_decisive, b.n_left)
        assert biases[who].pvalue == pytest.approx(b.pvalue)
    body = _body(response)
    assert CANARY_SYSTEMS[0] in body  # admins see the systems
    assert world["people"]["one"].username in body  # and the reviewers


def test_leads_see_pseudonyms_on_the_analysis(world, lead):
    response = _client(lead).get(f"/pairwise/tasks/{world['task'].pk}/analysis/")
    body = _body(response)
    _assert_blind(body)
    names = {s["system"] for s in response.context["analysis"].strengths}
    assert names == {"System 1", "System 2", "System 3"}
    assert "Reviewer 1" in body
    for person in world["people"].values():
        assert person.username not in body


def test_an_analysis_without_judgments_says_so(lead):
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    task = make_task(runs, actor=lead)
    response = _client(lead).get(f"/pairwise/tasks/{task.pk}/analysis/")
    assert response.status_code == 200 and "No judgments yet." in _body(response)


def test_a_planted_ranking_is_recovered_and_a_left_leaning_reviewer_is_flagged(lead, admin_user):
    runs, _, _ = build_runs(n_systems=3, n_questions=8)
    rank = {run.system_id: i for i, run in enumerate(runs)}  # CANARY_SYSTEMS order: best first
    planted = make_task(runs, actor=lead, name="Planted", tier="tier_a")
    (judge,) = reviewers(1, prefix="pw-planted")
    while (assignment := claim_next_pair(project=default_project(), reviewer=judge)) is not None:
        pair = assignment.pair
        better = (
            "a" if rank[pair.record_a.run.system_id] < rank[pair.record_b.run.system_id] else "b"
        )
        submit_judgment(
            assignment=assignment, choice=choice_for(assignment, better), strength="clearly"
        )
    biased_task = make_task(runs, actor=lead, name="Left leaning", tier="tier_a")
    (leaner,) = reviewers(1, prefix="pw-left")
    while (assignment := claim_next_pair(project=default_project(), reviewer=leaner)) is not None:
        submit_judgment(assignment=assignment, choice="left", strength="slightly")
    admin = _client(admin_user)
    ranking = admin.get(f"/pairwise/tasks/{planted.pk}/analysis/").context["analysis"]
    assert [s["system"] for s in ranking.strengths] == list(CANARY_SYSTEMS)
    overall = ranking.position_bias[0]["row"]
    assert overall.n_decisive == 24
    leaning = admin.get(f"/pairwise/tasks/{biased_task.pk}/analysis/").context["analysis"]
    biased = leaning.position_bias[0]["row"]
    assert (biased.n_decisive, biased.n_left, biased.share_left) == (24, 24, 1.0)
    assert biased.pvalue < 1e-6
