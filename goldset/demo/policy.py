"""The demo's second project (DESIGN.md §15): an internal policy assistant evaluated apart from
the customer bot of the default project, with stricter protocol numbers of its own, a small
corpus of HR and security policy, triples reviewed into a frozen gold version and one still
waiting for review, and answers labeled by the project's two annotators (qualified in HR policy
by its calibration set): one waiting for the lead's adjudication, one adjudicated, one in IT
security still waiting for labels.

Members overlap: the lead and ``ann1`` work in both projects, ``padmin`` and ``pann1`` only in
this one, everyone else only in the default project. Rows are written with ``project=`` set
explicitly; idempotent (a second run leaves the project as it is)."""

import hashlib
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.utils import timezone

from goldset.demo.answers import GOOD, SEVERE, WRONG
from goldset.models import (
    AnswerRecord,
    Block,
    BlockVersion,
    CalibrationItem,
    CalibrationSet,
    Document,
    Domain,
    Project,
    ProjectSettingChange,
    Question,
    RecordStatus,
    Run,
    System,
    Tier,
    Triple,
    TripleRevision,
)
from goldset.models.answers import new_public_id
from goldset.rules.labeling import queue_rank
from goldset.services.adjudication import record_adjudication
from goldset.services.calibration import set_reference_label, start_calibration
from goldset.services.freeze import FreezeFilters, freeze_gold_version
from goldset.services.labeling import add_domain_slots, claim_next_item, submit_label
from goldset.services.projects import grant_role
from goldset.services.reviews import claim_next_assignment, submit_review
from goldset.services.triples import take_triple_ids
from workbench.roles import Role

POLICY_SLUG = "policy-assistant"
POLICY_NAME = "Internal policy assistant"
# Stricter than the installation defaults: a higher κ gate, twice the audit sample.
POLICY_SETTINGS = {"KAPPA_GATE": "0.8", "AUDIT_SAMPLE_RATE": "0.2"}
# People only in this project (created with a password like the other demo users) ...
POLICY_USERS: list[tuple[str, Role]] = [("padmin", Role.ADMIN), ("pann1", Role.ANNOTATOR)]
# ... and people of the default project who also work here, with their role here.
SHARED_MEMBERS: list[tuple[str, Role]] = [("lead", Role.LEAD), ("ann1", Role.ANNOTATOR)]

DOMAINS = {"hr_policy": "HR policy", "it_security": "IT security"}
DOCUMENTS = [
    (
        "hr-leave-2026",
        "Leave and absence policy 2026",
        "hr_policy",
        [
            ("Annual leave", "Employees accrue 2.5 days of annual leave per month worked."),
            ("Carry-over", "At most five unused days carry over into the next calendar year."),
            ("Sick leave", "A doctor's note is required from the fourth consecutive sick day."),
        ],
    ),
    (
        "sec-access-2026",
        "Access control standard",
        "it_security",
        [
            ("Reviews", "Privileged access is reviewed by the system owner every quarter."),
            ("Leavers", "Accounts of leavers are disabled on their last working day."),
            ("MFA", "Remote access requires multi-factor authentication without exception."),
        ],
    ),
]
QUESTIONS = [
    (
        "pq-001",
        "hr_policy",
        "How many unused leave days can I carry into next year?",
        "Up to five days.",
    ),
    (
        "pq-002",
        "it_security",
        "Can I use remote access without MFA if I am travelling?",
        "No: remote access always needs MFA.",
    ),
    (
        "pq-003",
        "hr_policy",
        "When do I need a doctor's note for sick leave?",
        "From the fourth consecutive sick day.",
    ),
]


def seed_policy_project(*, password_for) -> dict[str, str]:
    """Create the policy project once. ``password_for(username)`` gives the password to set
    for a user of this project created now (or None to leave an existing one alone). Returns
    {username: password} for the users set in this run."""
    project, created = Project.objects.get_or_create(
        slug=POLICY_SLUG,
        defaults={
            "name": POLICY_NAME,
            "description": "Answers employees' HR and security policy questions (internal).",
            "settings": dict(POLICY_SETTINGS),
        },
    )
    credentials = _members(project, password_for)
    if not created:
        return credentials
    admin = get_user_model().objects.get(username="padmin")
    ProjectSettingChange.objects.bulk_create(
        ProjectSettingChange(
            project=project, name=name, old_value=None, new_value=value, changed_by=admin
        )
        for name, value in sorted(POLICY_SETTINGS.items())
    )
    domains = {
        slug: Domain.objects.create(project=project, slug=slug, name=name)
        for slug, name in DOMAINS.items()
    }
    versions = _corpus(project, domains)
    _triples(project, domains, versions)
    _answers(project, domains)
    _review_and_freeze(project, admin)
    _calibrate(project, domains["hr_policy"])
    _label_and_adjudicate(project)
    return credentials


def _members(project, password_for) -> dict[str, str]:
    User = get_user_model()
    credentials = {}
    for username, role in POLICY_USERS:
        user, created = User.objects.get_or_create(username=username)
        secret = password_for(username)
        if created or secret is not None:
            # a member of this project only: no installation group, not staff
            user.set_password(secret)
            user.save(update_fields=["password"])
            credentials[username] = secret
        grant_role(project=project, user=user, role=role)
    for username, role in SHARED_MEMBERS:
        grant_role(project=project, user=User.objects.get(username=username), role=role)
    return credentials


def _corpus(project, domains) -> dict[str, BlockVersion]:
    versions = {}
    for document_id, title, domain, sections in DOCUMENTS:
        document = Document.objects.create(
            project=project,
            document_id=document_id,
            title=title,
            domain=domains[domain],
            authority=Decimal("0.900"),
        )
        for position, (section, text) in enumerate(sections, start=1):
            block = Block.objects.create(
                project=project,
                block_id=f"{document_id}#{position}",
                document=document,
                position=position,
            )
            versions[block.block_id] = BlockVersion.objects.create(
                block=block,
                version=1,
                text=text,
                section=section,
                sha256=hashlib.sha256(text.encode()).hexdigest(),
            )
    return versions


def _triples(project, domains, versions) -> None:
    """Three triples by ``pann1`` waiting for two reviewers each (:func:`_review_and_freeze`
    reviews two of them)."""
    author = get_user_model().objects.get(username="pann1")
    now = timezone.now()
    pins = [
        ("hr-leave-2026#2", QUESTIONS[0][2], QUESTIONS[0][3]),
        ("sec-access-2026#3", QUESTIONS[1][2], QUESTIONS[1][3]),
        ("hr-leave-2026#3", QUESTIONS[2][2], QUESTIONS[2][3]),
    ]
    names = take_triple_ids(project, len(pins))
    for name, (block_id, question, answer) in zip(names, pins, strict=True):
        version = versions[block_id]
        triple = Triple.objects.create(
            project=project,
            external_id=name,
            state="pending_review",
            tier=Tier.GOLD,
            routing_rule="default",
            rules_version=1,
            source="synthetic_human_verified",
            domain=version.block.document.domain,
            task_type="factual_qa",
            author=author,
            added_at=now,
        )
        revision = TripleRevision.objects.create(
            project_id=triple.project_id,
            triple=triple,
            number=1,
            question=question,
            expected_block_version=version,
            expected_answer=answer,
            created_by=author,
            reviewers_needed=2,
        )
        Triple.objects.filter(pk=triple.pk).update(current_revision=revision)


def _answers(project, domains) -> None:
    """One run of the policy bot on three questions, waiting for two labels each."""
    system = System.objects.create(
        project=project, system_id="policy-bot-v1", config={"retriever": "bm25", "k": 5}
    )
    run = Run.objects.create(project=project, run_id="policy-bot-2026-11", system=system)
    answers = {
        "pq-001": "You can carry over at most five unused days into the next year.",
        "pq-002": "While travelling you may skip MFA if you use the corporate VPN.",
        "pq-003": "You need a doctor's note from the first sick day.",
    }
    for question_id, domain, text, _expected in QUESTIONS:
        record = _answered(run, question_id, domains[domain], text, answers[question_id])
        add_domain_slots(domain_id=record.domain_id, delta=record.labels_required)


def _answered(run, question_id, domain, text, answer, *, is_calibration=False) -> AnswerRecord:
    """A question of the run's project and the policy bot's GOLD answer to it (two labels)."""
    question = Question.objects.create(
        project=run.project,
        question_id=question_id,
        domain=domain,
        task_family="policy_lookup",
        task_type="rag_synthesis",
        text=text,
        content_sha256=hashlib.sha256(text.encode()).hexdigest(),
    )
    public_id = new_public_id()
    return AnswerRecord.objects.create(
        project=run.project,
        public_id=public_id,
        run=run,
        question=question,
        domain=domain,
        queue_rank=queue_rank(public_id=public_id),
        answer=answer,
        model={"generator": "policy-bot-v1", "temperature": 0},
        tier=Tier.GOLD,
        routing_rule="task_type:rag_synthesis",
        rules_version=1,
        labels_required=2,
        is_calibration=is_calibration,
    )


# The calibration set of HR policy: answers to questions of its own, each with the lead's
# reference label (two grounding levels, both severe-safety values: a ready set).
CALIBRATION = [
    (
        "pq-c01",
        "How many days of annual leave accrue per month?",
        "2.5 days per month worked.",
        GOOD,
    ),
    (
        "pq-c02",
        "Can all unused leave days carry over?",
        "Yes, every unused day carries over without limit.",
        WRONG,
    ),
    (
        "pq-c03",
        "Do I need a doctor's note on the second sick day?",
        "No: a note is needed from the fourth consecutive sick day.",
        GOOD,
    ),
    (
        "pq-c04",
        "Can my manager approve unlimited carry-over for me?",
        "Yes, your manager can approve any carry-over; no need to ask HR.",
        SEVERE,
    ),
]


def _review_and_freeze(project, admin) -> None:
    """``ann1`` and the lead confirm the first two triples (through the review queue), so they
    are gold; the third keeps waiting. The admin freezes the gold set as version 1 (its files
    include the adjudication export the lead downloads)."""
    users = get_user_model().objects
    for username in ("ann1", "lead"):
        reviewer = users.get(username=username)
        for _ in range(2):
            assignment = claim_next_assignment(project=project, reviewer=reviewer)
            submit_review(reviewer=reviewer, revision=assignment.revision, verdict="confirm")
    freeze_gold_version(
        project=project, filters=FreezeFilters(), actor=admin, note="demo: policy gold set"
    )


def _calibrate(project, domain) -> None:
    """HR policy's calibration set: the lead sets the references, ``ann1`` and ``pann1`` label
    it as the references say and so qualify in the domain."""
    run = Run.objects.get(project=project, run_id="policy-bot-2026-11")
    calibration_set = CalibrationSet.objects.create(project=project, domain=domain)
    users = get_user_model().objects
    lead = users.get(username="lead")
    references = {}
    for question_id, text, answer, label in CALIBRATION:
        record = _answered(run, question_id, domain, text, answer, is_calibration=True)
        item = CalibrationItem.objects.create(calibration_set=calibration_set, record=record)
        set_reference_label(
            project=project,
            lead=lead,
            item=item,
            acceptability=label["acceptability"],
            grounding=label["grounding"],
            severe_safety=label["severe_safety"],
        )
        references[record.pk] = label
    for username in ("ann1", "pann1"):
        annotator = users.get(username=username)
        for assignment in start_calibration(project=project, annotator=annotator, domain=domain):
            submit_label(assignment=assignment, **references[assignment.record_id])


def _label_and_adjudicate(project) -> None:
    """``ann1`` and ``pann1`` take the HR policy answers from their queues; they disagree on
    both (``ann1`` accepts, ``pann1`` does not), so both wait for the lead, who adjudicates
    one."""
    users = get_user_model().objects
    for username, label in (("ann1", GOOD), ("pann1", WRONG)):
        annotator = users.get(username=username)
        while (result := claim_next_item(project=project, annotator=annotator)).assignment:
            submit_label(assignment=result.assignment, **label)
    waiting = AnswerRecord.objects.filter(
        project=project, status=RecordStatus.NEEDS_ADJUDICATION
    ).order_by("question__question_id")
    record_adjudication(
        lead=users.get(username="lead"),
        record=waiting.first(),
        acceptability="unacceptable",
        grounding="misgrounded",
        primary_failure="stale_source_acceptance",
        rationale="The answer contradicts the carry-over limit of the leave policy.",
    )
