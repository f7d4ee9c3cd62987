"""Builders for the pairwise review tests: systems and runs with canary identities, answer
records with fixed public ids (so seeded draws are the same on every run), reviewers."""

import json
import re

from goldset.models import PairAssignment, PairQualification
from goldset.rules.pairwise import choice_from_preference
from goldset.services.freeze import store_frozen_version
from goldset.services.pairwise import claim_next_pair, create_pairwise_task, submit_judgment
from tests.factories import (
    AnswerRecordFactory,
    DomainFactory,
    QuestionFactory,
    RunFactory,
    SystemFactory,
    UserFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from workbench.roles import Role

CANARY_SYSTEMS = ("CANARYSYS-alpha-retriever", "CANARYSYS-beta-hybrid", "CANARYSYS-gamma-rerank")
CANARY_RUNS = ("CANARYRUN-0001", "CANARYRUN-0002", "CANARYRUN-0003")
CANARY_MODEL = "CANARYMODEL-gpt-x"
CANARIES = ("CANARYSYS", "CANARYRUN", "CANARYMODEL", *CANARY_SYSTEMS, *CANARY_RUNS, CANARY_MODEL)
RECORD_ID = re.compile(r"pw-q\d+-s\d+")  # the answer records' public ids (build_runs)


def assert_blind(text: str):
    """No system, run, model or answer-record id of :func:`build_runs` in ``text``."""
    for canary in CANARIES:
        assert canary not in text, canary
    assert not RECORD_ID.search(text)


def post_json(client, url, body=None):
    return client.post(url, json.dumps(body or {}), content_type="application/json")


def build_runs(*, n_systems: int = 3, n_questions: int = 4, domain_slug: str = "supply_chain"):
    """``n_systems`` systems, one run each, answering the same ``n_questions`` questions; record
    public ids ``pw-q<i>-s<j>``. Returns (runs, questions, records by (question, system))."""
    domain = DomainFactory(slug=domain_slug)
    runs = [
        RunFactory(run_id=CANARY_RUNS[j], system=SystemFactory(system_id=CANARY_SYSTEMS[j]))
        for j in range(n_systems)
    ]
    questions = [
        QuestionFactory(question_id=f"pwq-{i:03d}", domain=domain) for i in range(n_questions)
    ]
    records = {}
    for i, question in enumerate(questions):
        for j, run in enumerate(runs):
            records[(i, j)] = AnswerRecordFactory(
                public_id=f"pw-q{i}-s{j}",
                run=run,
                question=question,
                answer=f"Answer of system {j} to question {i}: approve with budget control.",
                model={"generator": CANARY_MODEL},
                latency_ms=4242,
            )
    return runs, questions, records


def frozen_runs(actor, *, n_systems: int = 3, n_frozen: int = 3, n_later: int = 2):
    """:func:`build_runs` on ``n_frozen`` questions, then gold version v1 frozen (its question
    file holds those questions), then ``n_later`` more questions the same runs answered after
    the freeze (record ids ``pw-q<10+i>-s<j>``). Returns (runs, version, the frozen question
    ids, the later question ids)."""
    runs, questions, _ = build_runs(n_systems=n_systems, n_questions=n_frozen)
    block = make_gold_corpus(1)[0]
    version = store_frozen_version(
        project=default_project(), rows=[gold_row_for(block, triple_id="gt-pw-1")], actor=actor
    )
    later = [
        QuestionFactory(question_id=f"pwq-late-{i}", domain=questions[0].domain)
        for i in range(n_later)
    ]
    for i, question in enumerate(later):
        for j, run in enumerate(runs):
            AnswerRecordFactory(
                public_id=f"pw-q{10 + i}-s{j}",
                run=run,
                question=question,
                answer=f"Answer of system {j} to the later question {i}.",
                model={"generator": CANARY_MODEL},
            )
    return runs, version, [q.question_id for q in questions], [q.question_id for q in later]


def reviewers(n: int, prefix: str = "pw-rev", *, qualified: bool = True):
    """``n`` annotators; ``qualified`` ones carry a passed pairwise qualification of the default
    project (the calibration flow itself is tested in test_pairwise_calibration)."""
    people = [UserFactory(role=Role.ANNOTATOR, username=f"{prefix}{i}") for i in range(1, n + 1)]
    if qualified:
        for person in people:
            qualify(person)
    return people


def qualify(person, project=None):
    PairQualification.objects.update_or_create(
        project=project or default_project(),
        reviewer=person,
        defaults={"n_items": 4, "kappa": 1.0, "threshold": 0.7, "passed": True},
    )


def make_task(runs, *, actor, name="Compare systems", seed=3030, tier="tier_b", **kwargs):
    return create_pairwise_task(
        project=kwargs.pop("project", None) or default_project(),
        actor=actor,
        name=name,
        runs=runs,
        design=kwargs.pop("design", "all_pairs"),
        seed=seed,
        tier=tier,
        **kwargs,
    )


def choice_for(assignment: PairAssignment, preference: str) -> str:
    """What the reviewer presses on screen to state ``preference`` (relative to A/B)."""
    return choice_from_preference(preference, left=assignment.left)


def judge_next(reviewer, preference: str, *, strength: str = "", rationale: str = ""):
    """Claim the reviewer's next pair and judge it ``preference`` (relative to A/B)."""
    assignment = claim_next_pair(project=default_project(), reviewer=reviewer)
    assert assignment is not None
    if preference in ("a", "b") and not strength:
        strength = "clearly"
    return submit_judgment(
        assignment=assignment,
        choice=choice_for(assignment, preference),
        strength=strength,
        rationale=rationale,
    )
