"""The client's labeling, review and adjudication methods against a live server, each with the
token of the role that does the work: annotators claim and label, reviewers claim and review,
a lead reads the queue and adjudicates; a refused rule reaches the caller as ``Unprocessable``
naming the field, and nothing of the system reaches an annotator or a lead; a reviewer takes the
pairwise calibration and judges a pair, skips one and undoes a judgment, and a lead creates a
pairwise task from the runs offered and adjudicates a split pair, each answer a typed model."""

import pytest
from django.core.cache import cache
from goldset_client import AsyncGoldsetClient, GoldsetClient, Unprocessable
from goldset_client.models import (
    BlindJudgment,
    BlindPair,
    CalibrationAnswer,
    PairAdjudication,
    PairDecision,
    PairQualification,
    PairSkip,
    PairwiseRun,
    PairwiseTask,
    QualificationStatus,
)

from goldset.models import PairJudgment, PairStatus, PairwisePair, RecordStatus
from goldset.models import PairSkip as PairSkipRow
from goldset.rules.pairwise import choice_from_preference, preference_from_choice
from goldset.selectors.pairwise import calibration_left_for, left_for, list_blind_judgments
from goldset.services.pairwise_calibration import add_calibration_pair
from tests.client._loop import run_in_own_loop
from tests.factories import DomainFactory, default_project
from tests.goldset.answers_helpers import BAD, GOOD, SECRETS, build_conflict_item
from tests.goldset.curation_support import write_triple
from tests.goldset.pairwise_support import (
    CANARIES,
    assert_blind,
    build_runs,
    judge_next,
    make_task,
    reviewers,
)
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


SPLIT_PLAN = (  # three reviewers' preferences (relative to A/B) in queue order: pair 1 splits
    ["a", "a", "b", "tie"],
    ["b", "a", "b", "tie"],
    ["tie", "a", "b", "tie"],
)


def test_a_lead_creates_a_task_a_reviewer_skips_and_undoes_and_the_lead_adjudicates_a_split(
    transactional_db, live_server, make_user, fast
):
    lead = make_user(Role.LEAD, username="client-pw-lead")
    runs, _, _ = build_runs(n_systems=2, n_questions=4, domain_slug="client_pw_split")
    task = make_task(runs, actor=lead, name="Client split")
    for person, plan in zip(reviewers(3, prefix="client-pw-j"), SPLIT_PLAN, strict=True):
        for preference in plan:
            judge_next(person, preference, rationale="Because.")
    split = PairwisePair.objects.get(task=task, status=PairStatus.NEEDS_ADJUDICATION)
    lead_token = token_of(lead)

    with GoldsetClient(live_server.url, lead_token) as gs:
        offered = gs.list_pairwise_runs()
        assert all(isinstance(r, PairwiseRun) for r in offered) and len(offered) == 2
        assert_blind(str([r.raw for r in offered]))  # a lead reads "Run N", not the run's id
        made = gs.create_pairwise_task("Client second look", [r.id for r in offered], seed=9)
        assert isinstance(made, PairwiseTask)
        assert (made.name, made.seed, made.gold_version, made.pairs) == (
            "Client second look", 9, None, 4,
        )  # fmt: skip

    (fresh,) = reviewers(1, prefix="client-pw-fresh")
    with GoldsetClient(live_server.url, token_of(fresh)) as gs:
        held = gs.claim_pair()
        skipped = gs.skip_pair(held.public_id, "Outside my expertise")
        assert isinstance(skipped, PairSkip) and skipped.created_at
        assert (skipped.pair, skipped.reason) == (held.public_id, "Outside my expertise")
        assert PairSkipRow.objects.get(reviewer=fresh).pair.public_id == held.public_id
        following = gs.claim_pair()
        assert following.public_id != held.public_id  # never offered to them again
        gs.judge_pair(following.public_id, "left", strength="clearly")
        undone = gs.undo_pair_judgment()
        assert isinstance(undone, BlindPair)
        assert (undone.public_id, undone.judgment) == (following.public_id, None)
        assert_blind(str(undone.raw))
        assert not PairJudgment.objects.filter(reviewer=fresh).exists()

    left = left_for(split, lead.pk)
    shown = [  # what the adjudication page shows the lead
        BlindJudgment(reviewer=j.reviewer, choice=j.choice, strength=j.strength,
                      rationale=j.rationale)
        for j in list_blind_judgments(split, user=lead, left=left)
    ]  # fmt: skip

    async def adjudicate():
        async with AsyncGoldsetClient(live_server.url, lead_token) as gs:
            waiting = [item async for item in gs.list_pair_adjudications(page_size=1)]
            read = await gs.get_pair_adjudication(split.public_id)
            final = await gs.adjudicate_pair(
                split.public_id, "left", strength="clearly", rationale="A is right."
            )
            after = [item async for item in gs.list_pair_adjudications()]
            return waiting, read, final, after

    waiting, read, final, after = run_in_own_loop(adjudicate())
    (row,) = waiting
    assert isinstance(row, PairAdjudication) and row == read
    assert (row.public_id, row.task, row.adjudication) == (split.public_id, "Client split", None)
    assert list(row.judgments) == shown
    assert [j.reviewer for j in row.judgments] == ["Reviewer 1", "Reviewer 2", "Reviewer 3"]
    assert_blind(str(row.raw))
    assert isinstance(final.adjudication, PairDecision) and final.adjudication.created_at
    assert (final.status, final.adjudication.choice, final.adjudication.rationale) == (
        PairStatus.ADJUDICATED, "left", "A is right.",
    )  # fmt: skip
    assert after == []
    split.refresh_from_db()
    assert split.final_preference == preference_from_choice("left", left=left)
