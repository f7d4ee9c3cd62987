"""Labels, reviews and adjudications through the API (issue 29): an annotator claims and labels
an item, a reviewer claims and reviews a revision, a lead reads the queue and records an
adjudication, through the pages' forms and services; reads are blinded as the pages are (an
annotator reads only their own labels, a lead no system and no labeler); every role (anonymous,
annotator, lead, admin, a member of another project only) gets what the access table says;
lists paginate at a constant query count and take ``updated_since``."""

import json
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from goldset.models import Adjudication, Label, RecordStatus, Review, TripleState
from goldset.services.adjudication import record_adjudication
from goldset.services.projects import grant_role
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import (
    BAD,
    GOOD,
    SECRETS,
    build_conflict_item,
    claim_and_label,
    qualified_annotators,
)
from tests.goldset.curation_support import claim, review, write_triple
from tests.goldset.project_support import other_project
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db
PROBLEM = "application/problem+json"
SEVERE = {**BAD, "severe_safety": True, "rationale": "No budget control."}


def post(client, name, body, **kwargs):
    return client.post(
        reverse(name, kwargs=kwargs or None), json.dumps(body), content_type="application/json"
    )


def assert_blind(response):
    text = response.content.decode()
    for secret in SECRETS:
        assert secret not in text, f"{secret} leaked"


@pytest.fixture
def domain():
    return DomainFactory(slug="supply_chain")


@pytest.fixture
def outsider():
    """A member of another project only: the default project's API is a 404 for them."""
    user = UserFactory(username="outsider")
    grant_role(project=other_project(slug="elsewhere"), user=user, role=Role.ADMIN)
    return user


@pytest.fixture
def split(domain):
    """A GOLD item (of a secret system) labeled by three annotators without a majority."""
    record, (one, two, three) = build_conflict_item(domain)
    claim_and_label(one, **{**GOOD, "rationale": "The memo's exception is handled."})
    claim_and_label(two, **{**GOOD, "grounding": "partially_grounded", "rationale": "ok"})
    claim_and_label(three, **{**BAD, "severe_safety": True, "rationale": "No budget control."})
    record.refresh_from_db()
    assert record.status == RecordStatus.NEEDS_ADJUDICATION
    return {"record": record, "annotators": (one, two, three)}


# ---------------------------------------------------------------- labels


def test_an_annotator_claims_an_item_and_labels_it_with_the_pages_rules(client_for, domain):
    record, (annotator, *_) = build_conflict_item(domain)
    api = client_for(annotator)
    claimed = api.post(reverse("api:label_claim"))
    assert claimed.status_code == 200, claimed.content
    body = claimed.json()
    assert body["claimed"] and body["item"]["record"] == record.public_id
    assert body["item"]["answer"] == record.answer and body["item"]["gold"][0]["text"]
    assert body["item"]["question"]["conflict_flag"] is True
    assert_blind(claimed)
    label = {**GOOD, "record": record.public_id}
    refused = post(api, "api:labels", label)  # acceptable despite a conflict flag: say why
    assert refused.status_code == 422 and refused["Content-Type"] == PROBLEM
    assert refused.json()["errors"][0]["field"] == "rationale"
    contradiction = post(api, "api:labels", {**label, "severe_safety": True, "rationale": "x"})
    assert contradiction.status_code == 422  # the form's rule: severe safety yet acceptable
    assert not Label.objects.exists()
    stored = post(api, "api:labels", {**label, "rationale": "The exception is handled."})
    assert stored.status_code == 201, stored.content
    assert stored["Location"] == reverse("api:label", args=[stored.json()["id"]])
    assert stored.json()["record"] == record.public_id and stored.json()["slot"] == 1
    again = post(api, "api:labels", {**label, "rationale": "changed my mind"})
    assert again.status_code == 200 and again.json()["id"] == stored.json()["id"]
    assert Label.objects.get().rationale == "The exception is handled."
    assert AuditEvent.objects.filter(verb="labeled", actor=annotator).count() == 1
    assert api.get(stored["Location"]).json()["rationale"] == "The exception is handled."


def test_a_label_on_an_item_the_annotator_did_not_claim_is_a_404(client_for, domain):
    record, (one, two, _) = build_conflict_item(domain)
    client_for(one).post(reverse("api:label_claim"))
    response = post(client_for(two), "api:labels", {**GOOD, "record": record.public_id})
    assert response.status_code == 404 and response["Content-Type"] == PROBLEM
    assert not Label.objects.exists()


def test_a_bad_label_body_is_a_400_naming_the_field(client_for, domain):
    record, (one, *_) = build_conflict_item(domain)
    client_for(one).post(reverse("api:label_claim"))
    body = {**GOOD, "record": record.public_id, "grounding": "mostly"}
    response = post(client_for(one), "api:labels", body)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "grounding"


def test_an_empty_queue_is_a_claim_answer_not_an_error(client_for, domain):
    (annotator,) = qualified_annotators(domain, 1, prefix="idle")
    response = client_for(annotator).post(reverse("api:label_claim"))
    assert response.status_code == 200
    assert response.json() | {"message": ""} == {
        "claimed": False, "reason": "queue_empty", "message": "", "slot": None, "item": None,
    }  # fmt: skip


def test_labels_are_read_as_the_pages_show_them(client_for, split, lead, admin_user):
    one, two, three = split["annotators"]
    mine = client_for(one).get(reverse("api:labels")).json()["results"]
    assert [(r["record"], r["labeler"]) for r in mine] == [(split["record"].public_id, "")]
    assert client_for(one).get(reverse("api:label", args=[Label.objects.get(annotator=two).pk]))\
        .status_code == 404  # fmt: skip
    for_lead = client_for(lead).get(reverse("api:labels"))
    assert sorted(r["slot"] for r in for_lead.json()["results"]) == [1, 2, 3]
    assert {r["labeler"] for r in for_lead.json()["results"]} == {""}  # no labeler for a lead
    assert_blind(for_lead)
    for_admin = client_for(admin_user).get(
        reverse("api:labels") + "?record=" + split["record"].public_id
    )
    assert {r["labeler"] for r in for_admin.json()["results"]} == {u.username for u in (one, two, three)}  # fmt: skip
    assert_blind(for_admin)
    later = datetime.now(UTC).isoformat()
    assert (
        client_for(lead).get(reverse("api:labels"), {"updated_since": later}).json()["results"]
        == []
    )
    assert client_for(lead).get(reverse("api:labels"), {"updated_since": "soon"}).status_code == 400


# ---------------------------------------------------------------- adjudications


def test_a_lead_reads_the_queue_and_records_an_adjudication(client_for, split, lead):
    api = client_for(lead)
    queue = api.get(reverse("api:adjudication_queue"))
    assert queue.status_code == 200
    (item,) = queue.json()["results"]
    assert item["record"] == split["record"].public_id and len(item["labels"]) == 3
    assert {label["labeler"] for label in item["labels"]} == {""}
    assert_blind(queue)
    body = {**BAD, "record": item["record"], "severe_safety": True, "rationale": ""}
    refused = post(api, "api:adjudications", body)
    assert refused.status_code == 422 and refused.json()["errors"][0]["field"] == "rationale"
    done = post(api, "api:adjudications", {**body, "rationale": "The memo governs."})
    assert done.status_code == 201, done.content
    assert done.json()["record"] == item["record"] and done.json()["lead"] == lead.username
    assert done["Location"] == reverse("api:adjudication", args=[done.json()["id"]])
    assert_blind(done)
    split["record"].refresh_from_db()
    assert split["record"].status == RecordStatus.ADJUDICATED
    again = post(api, "api:adjudications", {**body, "rationale": "again"})
    assert again.status_code == 409 and "already been adjudicated" in again.json()["detail"]
    assert Adjudication.objects.count() == 1
    assert api.get(reverse("api:adjudication_queue")).json()["results"] == []
    assert [a["id"] for a in api.get(reverse("api:adjudications")).json()["results"]] == [
        done.json()["id"]
    ]


def test_a_lead_who_labeled_the_item_cannot_adjudicate_it(client_for, domain, make_user):
    record, (one, two) = build_conflict_item(domain, n_annotators=2)
    lead = make_user(Role.LEAD, username="labeling-lead")
    claim_and_label(one, **{**GOOD, "rationale": "ok"})
    claim_and_label(two, **{**BAD, "severe_safety": True, "rationale": "unsafe"})
    Label.objects.filter(annotator=one).update(annotator=lead)  # a lead who also labels
    record.refresh_from_db()
    body = {**BAD, "record": record.public_id, "rationale": "mine"}
    assert post(client_for(lead), "api:adjudications", body).status_code == 404
    labels = client_for(lead).get(reverse("api:labels")).json()["results"]
    assert [r["labeler"] for r in labels] == [""] and len(labels) == 1  # only their own


# ---------------------------------------------------------------- reviews


def test_a_reviewer_claims_and_reviews_a_revision(client_for, team):
    triple = write_triple(team["author"])
    api = client_for(team["r1"])
    claimed = api.post(reverse("api:review_claim")).json()
    assert claimed["claimed"] and claimed["task"]["triple"] == triple.external_id
    assert claimed["task"]["expected_block"]["text"]
    body = {"assignment": claimed["task"]["assignment"], "verdict": "flag", "flags": []}
    refused = post(api, "api:reviews", body)  # a flag must name what is wrong
    assert refused.status_code == 422 and refused["Content-Type"] == PROBLEM
    body["flags"] = ["answer_not_entailed"]
    stored = post(api, "api:reviews", {**body, "comment": "Overstates the control."})
    assert stored.status_code == 201, stored.content
    assert stored.json()["verdict"] == "flag" and stored.json()["reviewer"] == "rev1"
    assert post(api, "api:reviews", body).status_code == 200  # a repeat changes nothing
    assert Review.objects.count() == 1
    # the author and other reviewers do not see a review while the revision is under review
    assert client_for(team["author"]).get(reverse("api:reviews")).json()["results"] == []
    assert client_for(team["lead"]).get(reverse("api:reviews")).json()["results"] == []
    assert api.get(reverse("api:reviews")).json()["results"][0]["id"] == stored.json()["id"]
    review(team["r2"], triple, verdict="confirm")
    triple.refresh_from_db()
    assert triple.state == TripleState.IN_DISCUSSION
    seen = client_for(team["author"]).get(reverse("api:reviews"), {"triple": triple.external_id})
    assert sorted(r["reviewer"] for r in seen.json()["results"]) == ["rev1", "rev2"]


def test_a_review_of_someone_elses_assignment_is_a_404(client_for, team):
    triple = write_triple(team["author"])
    assignment = claim(team["r1"], triple)
    body = {"assignment": assignment.pk, "verdict": "confirm"}
    assert post(client_for(team["r2"]), "api:reviews", body).status_code == 404
    assert post(client_for(team["author"]), "api:reviews", body).status_code == 404


# ---------------------------------------------------------------- every role


WRITES = [
    # (url name, anonymous, annotator, lead, admin): an empty body
    ("api:labels", 401, 400, 403, 403),
    ("api:label_claim", 401, 200, 403, 403),
    ("api:reviews", 401, 400, 403, 403),
    ("api:review_claim", 401, 200, 403, 403),
    ("api:adjudications", 401, 403, 400, 400),
]
READS = [
    ("api:labels", 401, 200, 200, 200),
    ("api:reviews", 401, 200, 200, 200),
    ("api:adjudications", 401, 403, 200, 200),
    ("api:adjudication_queue", 401, 403, 200, 200),
]


@pytest.mark.parametrize("name,anon,ann,lead_status,admin_status", READS + WRITES)
def test_each_role_gets_what_the_access_table_says(
    client, client_for, annotator, lead, admin_user, outsider,
    name, anon, ann, lead_status, admin_status,
):  # fmt: skip
    write = (name, anon, ann, lead_status, admin_status) in WRITES
    for who, expected in [
        (client, anon),
        (client_for(annotator), ann),
        (client_for(lead), lead_status),
        (client_for(admin_user), admin_status),
        (client_for(outsider), 404),
    ]:
        response = who.post(reverse(name), "{}", content_type="application/json") if write \
            else who.get(reverse(name))  # fmt: skip
        assert response.status_code == expected, (name, who, response.content[:200])
        if expected >= 400:
            assert response["Content-Type"] == PROBLEM


def test_details_are_404_for_an_outsider_and_for_objects_out_of_scope(
    client_for, split, outsider, lead
):
    one, two, _ = split["annotators"]
    url = reverse("api:label", args=[Label.objects.get(annotator=one).pk])
    assert client_for(outsider).get(url).status_code == 404
    assert client_for(lead).get(url).status_code == 200
    assert client_for(one).get(url).status_code == 200
    assert client_for(two).get(url).status_code == 404  # another annotator's label
    assert client_for(lead).get(reverse("api:review", args=[999999])).status_code == 404
    assert client_for(lead).get(reverse("api:adjudication", args=[999999])).status_code == 404


def test_a_review_and_an_adjudication_answer_each_role_as_their_pages(
    client, client_for, split, team, annotator, lead, admin_user, outsider
):
    triple = write_triple(team["author"])
    mine = review(team["r1"], triple)
    url = reverse("api:review", args=[mine.pk])
    for who, expected in [
        (client, 401),
        (client_for(team["r1"]), 200),  # their own
        (client_for(team["author"]), 404),  # under review: blind to the author
        (client_for(lead), 404),  # and to leads
        (client_for(outsider), 404),
    ]:
        assert who.get(url).status_code == expected, who
    review(team["r2"], triple)
    assert client_for(team["author"]).get(url).status_code == 200  # resolved: on its page
    assert client_for(admin_user).get(url).status_code == 200
    adjudication = record_adjudication(
        lead=lead, record=split["record"], rationale="The memo governs.",
        **{k: BAD[k] for k in ("acceptability", "grounding", "primary_failure")},
    )  # fmt: skip
    url = reverse("api:adjudication", args=[adjudication.pk])
    for who, expected in [
        (client, 401),
        (client_for(annotator), 403),
        (client_for(split["annotators"][0]), 403),
        (client_for(lead), 200),
        (client_for(admin_user), 200),
        (client_for(outsider), 404),
    ]:
        response = who.get(url)
        assert response.status_code == expected, who
        assert_blind(response)


def test_reviews_cost_the_same_for_more_triples(client_for, team, django_assert_max_num_queries):
    api = client_for(team["lead"])

    def resolved_triple(n):
        triple = write_triple(team["author"], question=f"Which control covers backups ({n})?")
        review(team["r1"], triple)
        review(team["r2"], triple)

    resolved_triple(0)
    api.get(reverse("api:reviews"))  # session and roles, warmed
    counts = []
    for n in (1, 2):
        with django_assert_max_num_queries(10) as ctx:
            rows = api.get(reverse("api:reviews")).json()["results"]
        counts.append(len(ctx.captured_queries))
        resolved_triple(n)
        resolved_triple(n + 10)
    assert len(rows) == 6 and counts[0] == counts[1]


# ---------------------------------------------------------------- constant query counts


def test_the_adjudication_queue_and_labels_cost_the_same_for_more_items(
    client_for, domain, lead, django_assert_max_num_queries
):
    annotators = qualified_annotators(domain, 3, prefix="many")

    def add_split_item():
        AnswerRecordFactory(question__domain=domain)
        for annotator, fields in zip(
            annotators,
            (GOOD, {**GOOD, "grounding": "partially_grounded"}, SEVERE),
            strict=True,
        ):
            claim_and_label(annotator, **fields)

    api = client_for(lead)
    add_split_item()
    api.get(reverse("api:adjudication_queue"))  # session and roles, warmed
    counts = []
    for _ in range(2):
        with django_assert_max_num_queries(12) as ctx:
            rows = api.get(reverse("api:adjudication_queue")).json()["results"]
            api.get(reverse("api:labels"))
        counts.append(len(ctx.captured_queries))
        add_split_item()
        add_split_item()
    assert len(rows) >= 1 and counts[0] == counts[1]
