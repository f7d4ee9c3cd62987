"""The demo's second project (DESIGN.md §15): an internal policy assistant evaluated apart from
the customer bot of the default project, with stricter protocol numbers of its own, a small
corpus of HR and security policy, triples waiting for review and answers waiting for labels.

Members overlap: the lead and ``ann1`` work in both projects, ``padmin`` and ``pann1`` only in
this one, everyone else only in the default project. Rows are written with ``project=`` set
explicitly; idempotent (a second run leaves the project as it is)."""

import hashlib
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.utils import timezone

from goldset.models import (
    AnswerRecord,
    Block,
    BlockVersion,
    Document,
    Domain,
    Project,
    ProjectSettingChange,
    Question,
    Run,
    System,
    Tier,
    Triple,
    TripleRevision,
)
from goldset.models.answers import new_public_id
from goldset.rules.labeling import queue_rank
from goldset.services.labeling import add_domain_slots
from goldset.services.projects import grant_role
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
    """Three triples by ``pann1`` waiting for two reviewers each (the review queue of ``ann1``
    and ``pann1`` in this project)."""
    author = get_user_model().objects.get(username="pann1")
    now = timezone.now()
    pins = [
        ("hr-leave-2026#2", QUESTIONS[0][2], QUESTIONS[0][3]),
        ("sec-access-2026#3", QUESTIONS[1][2], QUESTIONS[1][3]),
        ("hr-leave-2026#3", QUESTIONS[2][2], QUESTIONS[2][3]),
    ]
    for number, (block_id, question, answer) in enumerate(pins, start=1):
        version = versions[block_id]
        triple = Triple.objects.create(
            project=project,
            external_id=f"gt-{number:05d}",
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
        question = Question.objects.create(
            project=project,
            question_id=question_id,
            domain=domains[domain],
            task_family="policy_lookup",
            task_type="rag_synthesis",
            text=text,
            content_sha256=hashlib.sha256(text.encode()).hexdigest(),
        )
        public_id = new_public_id()
        record = AnswerRecord.objects.create(
            project=project,
            public_id=public_id,
            run=run,
            question=question,
            domain=question.domain,
            queue_rank=queue_rank(public_id=public_id),
            answer=answers[question_id],
            model={"generator": "policy-bot-v1", "temperature": 0},
            tier=Tier.GOLD,
            routing_rule="task_type:rag_synthesis",
            rules_version=1,
            labels_required=2,
        )
        add_domain_slots(domain_id=record.domain_id, delta=record.labels_required)
