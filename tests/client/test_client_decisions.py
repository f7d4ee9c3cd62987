"""The client's labeling, review and adjudication methods against a live server, each with the
token of the role that does the work: annotators claim and label, reviewers claim and review,
a lead reads the queue and adjudicates; a refused rule reaches the caller as ``Unprocessable``
naming the field, and nothing of the system reaches an annotator or a lead; a reviewer takes the
pairwise calibration and judges a pair, each answer a typed model."""

import pytest
from django.core.cache import cache
from goldset_client import AsyncGoldsetClient, GoldsetClient, Unprocessable
from goldset_client.models import (
    BlindPair,
    CalibrationAnswer,
    PairQualification,
    QualificationStatus,
)

from goldset.models import PairwisePair, RecordStatus
from goldset.rules.pairwise import choice_from_preference
from goldset.selectors.pairwise import calibration_left_for
from goldset.services.pairwise_calibration import add_calibration_pair
from tests.client._loop import run_in_own_loop
from tests.factories import DomainFactory, default_project
from tests.goldset.answers_helpers import BAD, GOOD, SECRETS, build_conflict_item
from tests.goldset.curation_support import write_triple
from tests.goldset.pairwise_support import CANARIES, build_runs, make_task, reviewers
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.postgres


def token_of(user) -> str:
    return create_api_token(user=user, name="work", scope="write")[1]


@pytest.fixture
def fast(settings):
    settings.API_TOKEN_RATE = "100000/min"
    cache.clear()


def test_annotators_label_and_a_lead_adjudicates_through_the_client(
    transactional_db, live_server, make_user, fast
):
    record, annotators = build_conflict_item(DomainFactory(slug="client_domain"))
    lead = make_user(Role.LEAD, username="client-lead")
    answers = [
        {**GOOD, "rationale": "The exception is handled."},
        {**GOOD, "grounding": "partially_grounded", "rationale": "Mostly."},
        {**BAD, "severe_safety": True, "rationale": "No budget control."},
    ]
    for annotator, answer in zip(annotators, answers, strict=True):
        with GoldsetClient(live_server.url, token_of(annotator)) as gs:
            claim = gs.claim_item()
            assert claim.claimed and claim.item["record"] == record.public_id
            assert not any(secret in str(claim.raw) for secret in SECRETS)
            if answer is answers[0]:
                with pytest.raises(Unprocessable) as refused:
                    gs.submit_label(record.public_id, **{**answer, "rationale": ""})
                assert refused.value.field == "rationale"
            label = gs.submit_label(record.public_id, **answer)
            assert label.record == record.public_id and label.labeler == ""
            assert [x.id for x in gs.list_labels()] == [label.id]

    lead_token = token_of(lead)

    async def adjudicate():
        async with AsyncGoldsetClient(live_server.url, lead_token) as gs:
            items = [item async for item in gs.list_adjudication_queue()]
            assert [i.record for i in items] == [record.public_id]
            assert not any(secret in str(items[0].raw) for secret in SECRETS)
            assert {label.labeler for label in items[0].labels} == {""}
            return await gs.adjudicate(
                record.public_id, acceptability="unacceptable", grounding="misgrounded",
                severe_safety=True, primary_failure="policy_boundary_over_answer",
                rationale="The memo governs.",
            )  # fmt: skip

    final = run_in_own_loop(adjudicate())
    assert final.lead == lead.username and final.reason
    record.refresh_from_db()
    assert record.status == RecordStatus.ADJUDICATED


def test_reviewers_claim_and_review_through_the_client(
    transactional_db, live_server, make_user, fast
):
    author = make_user(Role.ANNOTATOR, username="client-author")
    triple = write_triple(author)
    verdicts = []
    for name, verdict in (("client-r1", "confirm"), ("client-r2", "confirm")):
        with GoldsetClient(
            live_server.url, token_of(make_user(Role.ANNOTATOR, username=name))
        ) as gs:
            claim = gs.claim_review()
            assert claim.claimed and claim.task["triple"] == triple.external_id
            verdicts.append(gs.submit_review(claim.task["assignment"], verdict))
            assert gs.claim_review().claimed is False
    assert [v.reviewer for v in verdicts] == ["client-r1", "client-r2"]
    triple.refresh_from_db()
    assert triple.state == "gold"
    with GoldsetClient(live_server.url, token_of(author)) as gs:
        seen = list(gs.list_reviews(triple=triple.external_id))
    assert sorted(r.reviewer for r in seen) == ["client-r1", "client-r2"]


def test_a_reviewer_qualifies_and_judges_a_pair_through_the_client_with_typed_answers(
    transactional_db, live_server, make_user, fast
):
    lead = make_user(Role.LEAD, username="client-pw-lead")
    runs, _, _ = build_runs(n_systems=3, n_questions=4, domain_slug="client_pw")
    task = make_task(runs, actor=lead, name="Client pairs")
    pairs = list(PairwisePair.objects.filter(task=task).order_by("position"))
    added = [
        add_calibration_pair(project=default_project(), actor=lead, pair=pair, reference=reference)
        for pair, reference in zip(pairs, ("a", "b", "tie", "a"), strict=False)
    ]
    items = {item.public_id: item for item in added}
    (reviewer,) = reviewers(1, prefix="client-pw-rev", qualified=False)
    with GoldsetClient(live_server.url, token_of(reviewer)) as gs:
        status = gs.get_pair_qualification()
        assert isinstance(status, QualificationStatus)
        assert (status.qualified, status.total, status.answered, status.result) == (
            False, 4, 0, None,
        )  # fmt: skip
        for n in range(1, 5):
            shown = gs.claim_pair_calibration()
            assert isinstance(shown, BlindPair) and shown.status == "calibration"
            assert not any(secret in str(shown.raw) for secret in CANARIES)
            item = items[shown.public_id]
            left = calibration_left_for(item, reviewer.pk)
            answer = gs.judge_pair_calibration(
                shown.public_id, choice_from_preference(item.reference, left=left)
            )
            assert isinstance(answer, CalibrationAnswer) and answer.pair == shown.public_id
            assert answer.qualification.answered == n
        result = answer.qualification.result
        assert isinstance(result, PairQualification) and answer.qualification.qualified
        assert (result.passed, result.kappa, result.n_items) == (True, 1.0, 4)
        assert gs.claim_pair_calibration() is None  # scored: nothing waits

        held = gs.claim_pair()
        assert isinstance(held, BlindPair) and held.judgment is None
        assert gs.get_pair(held.public_id) == held
        judged = gs.judge_pair(held.public_id, "tie", rationale="Equally grounded.")
        assert (judged.public_id, judged.judgment) == (held.public_id, "tie")
