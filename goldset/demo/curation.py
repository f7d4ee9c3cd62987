"""Demo curation data: authored triples in every state, made through the real services so every
audit event, review and resolution is genuine. Deterministic (fixed content, ids and seeds) and
idempotent (nothing happens when the demo triples exist already).

Uses the demo users (author, ann1..ann6, lead, admin) and the built-in corpus. Blocks that have a
version 2 in the corpus stand in for "a new version arrived after curation": triples pinned to
version 1 are marked needs-re-review exactly as a corpus import would.
"""

from django.contrib.auth import get_user_model
from django.db import transaction

from goldset.demo.timing import demo_seconds, opened_seconds_ago
from goldset.exceptions import GoldsetError
from goldset.models import (
    BlockVersion,
    Customer,
    Project,
    Source,
    TaskType,
    Triple,
    default_project_id,
)
from goldset.services.customers import (
    create_customer,
    grant_customer_permission,
    revoke_customer_permission,
)
from goldset.services.quality import current_quarter, draw_working_slice
from goldset.services.resolution import (
    SplitPart,
    drop_triple,
    mark_superseded_pins,
    post_message,
    retire_triple,
    revise_triple,
    split_triple,
)
from goldset.services.reviews import (
    claim_next_assignment,
    current_iso_week,
    draw_spot_checks,
    submit_review,
)
from goldset.services.triples import create_triple

FIRST_ID = "demo-01"
SPOT_CHECK_SEED = 2026
SLICE_SEED = 120

CONFIRM = ("confirm", ())
NOT_ENTAILED = ("flag", ("answer_not_entailed",))
WRONG_BLOCK = ("flag", ("wrong_source_block",))
UNREALISTIC = ("flag", ("question_unrealistic",))

# (block ref, question, expected answer, task type, source)
CONSENSUS = [
    (
        "blk-sec-arch-02@1",
        "Which TLS versions are accepted on public endpoints?",
        "TLS 1.2 or higher; TLS 1.0 and 1.1 are disabled on every public endpoint.",
        TaskType.FACTUAL_QA,
        Source.PUBLIC_RFP,
    ),
    (
        "blk-sec-access-01@1",
        "Is multi-factor authentication required for workforce accounts?",
        "Yes, for all workforce accounts with access to production systems.",
        TaskType.FACTUAL_QA,
        Source.PUBLIC_RFP,
    ),
    (
        "blk-sec-ir-01@1",
        "How quickly are customers told about a security incident affecting their data?",
        "Within 72 hours of a confirmed incident.",
        TaskType.FACTUAL_QA,
        Source.CUSTOMER_PERMISSIONED,
    ),
    (
        "blk-fed-cloud-02@1",
        "Where must federal data be stored?",
        "Within the continental United States.",
        TaskType.FACTUAL_QA,
        Source.PUBLIC_RFP,
    ),
    (
        "blk-hc-privacy-04@1",
        "When must a breach affecting 500 or more individuals be reported to regulators?",
        "Within 60 days.",
        TaskType.RAG_SYNTHESIS,
        Source.CUSTOMER_PERMISSIONED,
    ),
    (
        "blk-fin-credit-03@1",
        "What is the limit on exposure to a single obligor?",
        "10 % of tier 1 capital.",
        TaskType.FACTUAL_QA,
        Source.SYNTHETIC_HUMAN_VERIFIED,
    ),
    (
        "blk-hc-discharge-01@1",
        "When does discharge planning start for an inpatient?",
        "Within 24 hours of admission.",
        TaskType.FACTUAL_QA,
        Source.PUBLIC_RFP,
    ),
    (
        "blk-sec-vendor-04@1",
        "How fast must vendors notify us of a breach?",
        "Within 48 hours.",
        TaskType.FACTUAL_QA,
        Source.CUSTOMER_PERMISSIONED,
    ),
]
TRIAGE_GOLD = [
    (
        "blk-sc-inventory-01@1",
        "Summarize the cycle-count frequency by item class.",
        "A-class monthly, B-class quarterly, C-class twice a year.",
        TaskType.SUMMARIZATION,
        Source.SYNTHETIC_HUMAN_VERIFIED,
    ),
    (
        "blk-fed-records-01@1",
        "Retrieve the retention rule for temporary records.",
        "Temporary records are kept seven years, then destroyed.",
        TaskType.RETRIEVAL,
        Source.PUBLIC_RFP,
    ),
]
# ann6 writes ten GOLD triples; reviewers flag three of them twice: 6 flags in 20 reviews (30 %).
ANN6 = [
    (
        "blk-hc-infection-01@1",
        "How often is hand hygiene compliance audited?",
        "Monthly on every unit.",
        None,
    ),
    (
        "blk-hc-infection-05@1",
        "How quickly are suspected outbreaks reported to infection prevention?",
        "Within 2 hours.",
        None,
    ),
    (
        "blk-hc-audit-02@1",
        "How often are provider credentials re-verified?",
        "Every two years.",
        None,
    ),
    (
        "blk-hc-audit-04@1",
        "When are corrective action plans due after a survey finding?",
        "Within 10 days.",
        None,
    ),
    (
        "blk-fin-disclosure-02@1",
        "When are potentially material events reported to the disclosure committee?",
        "Within 24 hours.",
        None,
    ),
    (
        "blk-fin-model-risk-03@1",
        "How often is model performance monitored?",
        "Quarterly against approved thresholds.",
        None,
    ),
    (
        "blk-sc-supplier-04@1",
        "What is the weekly working-hours cap for suppliers?",
        "60 hours including overtime.",
        None,
    ),
    (
        "blk-hc-audit-03@1",
        "How often is a mock survey run?",
        "Every month on each unit.",
        ("numeric_precision", NOT_ENTAILED, NOT_ENTAILED),
    ),
    (
        "blk-sc-routing-04@1",
        "What colour are the pallet labels?",
        "Blue GS1-128 labels.",
        ("synonym_tense", UNREALISTIC, NOT_ENTAILED),
    ),
    (
        "blk-fin-model-risk-05@1",
        "How long are retired models archived?",
        "Ten years.",
        ("numeric_precision", WRONG_BLOCK, NOT_ENTAILED),
    ),
]


class _Demo:
    def __init__(self):
        users = {u.username: u for u in get_user_model().objects.all()}
        self.author, self.lead, self.admin = users["author"], users["lead"], users["admin"]
        self.ann = {i: users[f"ann{i}"] for i in range(1, 7)}
        self.count = 0
        self.project = Project.objects.get(pk=default_project_id())

    @staticmethod
    def version(ref: str) -> BlockVersion:
        block_id, number = ref.split("@")
        return BlockVersion.objects.select_related("block__document__domain").get(
            block__block_id=block_id, version=int(number)
        )

    def write(
        self,
        ref,
        question,
        answer,
        task_type=TaskType.FACTUAL_QA,
        source=Source.PUBLIC_RFP,
        *,
        author=None,
        customer=None,
        **fields,
    ) -> Triple:
        self.count += 1
        return create_triple(
            project=self.project,
            author=author or self.author,
            question=question,
            block_version=self.version(ref),
            expected_answer=answer,
            task_type=task_type,
            source=source,
            customer=customer if source == Source.CUSTOMER_PERMISSIONED else None,
            external_id=f"demo-{self.count:02d}",
            **fields,
        )

    def review(self, reviewer, triple, verdict_flags, **fields):
        verdict, flags = verdict_flags
        assignment = claim_next_assignment(project=self.project, reviewer=reviewer)
        triple.refresh_from_db()
        if assignment is None or assignment.revision_id != triple.current_revision_id:
            raise GoldsetError(f"demo: {reviewer} was not given {triple.external_id}")
        submit_review(
            reviewer=reviewer,
            revision=assignment.revision,
            verdict=verdict,
            flags=flags,
            **fields,
            timing=opened_seconds_ago(assignment, demo_seconds(assignment.pk)),
        )
        triple.refresh_from_db()
        return triple

    def pair(self, n: int):
        """Reviewer pairs rotating over ann1..ann5 so the load is balanced."""
        return self.ann[n % 5 + 1], self.ann[(n + 2) % 5 + 1]


@transaction.atomic
def seed_curation_demo() -> bool:
    """Create the demo triples (every state), customers, a spot-check draw and a working slice.
    Returns False (and does nothing) when they exist already."""
    if Triple.objects.filter(external_id=FIRST_ID).exists():
        return False
    d = _Demo()
    acme = Customer.objects.filter(slug="acme-health").first() or create_customer(
        project=d.project, name="Acme Health", slug="acme-health", actor=d.admin
    )
    grant_customer_permission(
        customer=acme, actor=d.admin, note="Data-use addendum signed 2026-01-12"
    )
    globex = Customer.objects.filter(slug="globex").first() or create_customer(
        project=d.project, name="Globex Logistics", slug="globex", actor=d.admin
    )
    grant_customer_permission(customer=globex, actor=d.admin, note="Pilot agreement")

    # gold by consensus (GOLD tier) and by a single TRIAGE review
    for n, (ref, q, a, task, source) in enumerate(CONSENSUS):
        t = d.write(ref, q, a, task, source, customer=acme)
        r1, r2 = d.pair(n)
        d.review(r1, t, CONFIRM)
        d.review(r2, t, CONFIRM)
    for n, (ref, q, a, task, source) in enumerate(TRIAGE_GOLD):
        d.review(d.ann[n + 1], d.write(ref, q, a, task, source), CONFIRM)

    # ann6: a new author whose triples draw many flags → "calibration session needed"
    for n, (ref, q, a, flagged) in enumerate(ANN6):
        source = Source.SYNTHETIC_HUMAN_VERIFIED if n % 2 == 0 else Source.PUBLIC_RFP
        t = d.write(ref, q, a, TaskType.FACTUAL_QA, source, author=d.ann[6])
        r1, r2 = d.pair(n + 1)
        if flagged:
            category, first, second = flagged
            d.review(
                r1, t, first, disagreement_category=category, comment="The block does not say this."
            )
            d.review(
                r2,
                t,
                second,
                entailment_direction="overstated" if "answer_not_entailed" in second[1] else "",
            )
        else:
            d.review(r1, t, CONFIRM)
            d.review(r2, t, CONFIRM)

    # one flag → discussion → revise → fresh reviewers confirm
    t = d.write(
        "blk-sec-arch-03@1",
        "How often are data encryption keys rotated, and where are rotations logged?",
        "Every 90 days; rotations are logged to the SIEM.",
    )
    d.review(d.ann[1], t, CONFIRM)
    d.review(
        d.ann[2],
        t,
        NOT_ENTAILED,
        entailment_direction="overstated",
        disagreement_category="synonym_tense",
        comment="The block says the central audit trail, not a SIEM.",
    )
    post_message(
        triple=t,
        author=d.ann[2],
        body="The block names the central audit trail; 'SIEM' is our vocabulary, not the source's.",
    )
    post_message(triple=t, author=d.author, body="Agreed — I'll use the block's own phrasing.")
    revise_triple(
        triple=t,
        actor=d.author,
        question=t.current_revision.question,
        block_version=d.version("blk-sec-arch-03@1"),
        expected_answer="Every 90 days; key rotation events are logged to the central audit trail.",
    )
    d.review(d.ann[3], t, CONFIRM)
    d.review(d.ann[4], t, CONFIRM)

    # one flag → discussion still open
    t = d.write(
        "blk-sec-access-05@1",
        "When do sessions time out?",
        "After 15 minutes of inactivity for all sessions.",
    )
    d.review(d.ann[3], t, CONFIRM)
    d.review(
        d.ann[5],
        t,
        NOT_ENTAILED,
        entailment_direction="overstated",
        comment="Only interactive administrative sessions are covered.",
    )
    post_message(
        triple=t,
        author=d.ann[5],
        body="The block limits this to interactive administrative sessions.",
    )

    # both flag → dropped + quality tracker (author's own)
    t = d.write(
        "blk-fed-ident-04@1", "How many failed attempts lock an account?", "5 failed attempts."
    )
    d.review(
        d.ann[1],
        t,
        NOT_ENTAILED,
        entailment_direction="understated",
        disagreement_category="numeric_precision",
        comment="The block says 10.",
    )
    d.review(d.ann[4], t, NOT_ENTAILED, disagreement_category="numeric_precision")

    # one flag → discussion → dropped
    t = d.write(
        "blk-fin-advice-04@1",
        "Can staff post about specific securities on social media?",
        "No, not on personal accounts.",
        TaskType.RETRIEVAL,
        Source.PUBLIC_RFP,
        adversarial=True,
    )
    d.review(d.ann[2], t, UNREALISTIC, comment="No RFP asks this.")
    d.review(d.ann[5], t, CONFIRM)
    post_message(triple=t, author=d.author, body="Fair — evaluators would not ask this; dropping.")
    drop_triple(triple=t, actor=d.author, reason="question unrealistic")

    # compound claim, to be split later (its children enter the queues)
    compound = d.write(
        "blk-sec-arch-01@2",
        "How are customer documents encrypted at rest, and how often are keys rotated?",
        "AES-256-GCM with KMS customer-managed keys; keys are rotated every 90 days.",
    )
    d.review(d.ann[4], compound, CONFIRM)
    d.review(
        d.ann[1],
        compound,
        NOT_ENTAILED,
        entailment_direction="overstated",
        disagreement_category="compound_claim",
        comment="Key rotation is in a different section.",
    )

    # pinned to version 1 of blocks that now have version 2 → needs re-review; one retired
    # (written before version 2 arrived; the demo loads the corpus first, so it says so)
    before_v2 = "Demo: written before version 2 of the block was imported."
    backups = d.write(
        "blk-sec-arch-05@1",
        "How often are backups taken?",
        "Every 24 hours.",
        superseded_reason=before_v2,
    )
    d.review(d.ann[2], backups, CONFIRM)
    d.review(d.ann[3], backups, CONFIRM)
    access = d.write(
        "blk-sec-access-02@1",
        "How often is privileged access reviewed?",
        "Every quarter.",
        superseded_reason=before_v2,
    )
    d.review(d.ann[4], access, CONFIRM)
    d.review(d.ann[5], access, CONFIRM)
    offboarding = d.write(
        "blk-sec-access-04@1",
        "How quickly are departing staff accounts disabled?",
        "Within 24 hours of the last working day.",
        TaskType.SUMMARIZATION,
        superseded_reason=before_v2,
    )
    d.review(d.ann[1], offboarding, CONFIRM)
    stale = [
        d.version(ref).block.versions.get(version=2).pk
        for ref in ("blk-sec-arch-05@1", "blk-sec-access-02@1", "blk-sec-access-04@1")
    ]
    mark_superseded_pins(superseding_version_ids=stale, actor=d.admin)
    retire_triple(
        triple=access,
        actor=d.lead,
        note="Policy changed to monthly reviews; a new triple will cover it.",
    )

    # a customer opts out: their triples are revoked
    t = d.write(
        "blk-sc-routing-03@1",
        "When do shipments move by full truckload?",
        "Over 10,000 lb, with a contracted carrier.",
        source=Source.CUSTOMER_PERMISSIONED,
        customer=globex,
    )
    d.review(d.ann[2], t, CONFIRM)
    d.review(d.ann[4], t, CONFIRM)
    d.write(
        "blk-sc-routing-01@1",
        "How far ahead are dock appointments booked?",
        "At least 48 hours in advance.",
        source=Source.CUSTOMER_PERMISSIONED,
        customer=globex,
    )
    revoke_customer_permission(
        customer=globex, actor=d.admin, note="Customer opted out of data use."
    )

    # LLM-generated: reviewers confirmed, waiting for a human verification
    t = d.write(
        "blk-fin-model-risk-02@1",
        "How often are tier 1 models validated?",
        "Independently before use and every year thereafter.",
        source=Source.LLM_GENERATED,
    )
    d.review(d.ann[3], t, CONFIRM)
    d.review(d.ann[5], t, CONFIRM)

    # half-reviewed: one GOLD reviewer is in, the second slot is open
    half = d.write(
        "blk-fed-ato-04@1",
        "How often is the system reauthorized?",
        "Every three years or after a significant change.",
    )
    d.review(d.ann[5], half, CONFIRM)

    # the compound claim is split into atomic triples, each with its own block version
    split_triple(
        triple=compound,
        actor=d.author,
        parts=[
            SplitPart(
                "What encryption protects customer documents at rest?",
                d.version("blk-sec-arch-01@2"),
                "AES-256-GCM at the storage layer with AWS KMS customer-managed keys.",
            ),
            SplitPart(
                "How often are data encryption keys rotated?",
                d.version("blk-sec-arch-03@1"),
                "Every 90 days.",
            ),
        ],
    )

    # TRIAGE spot-check for this week (seeded), and pending work in everyone's queue
    year, week = current_iso_week()
    draw_spot_checks(
        project=d.project, iso_year=year, iso_week=week, actor=d.lead, seed=SPOT_CHECK_SEED
    )
    d.write(
        "blk-hc-infection-02@1",
        "Where are patients with suspected airborne infections placed?",
        "In a negative-pressure room.",
        model_uncertainty=0.8,
        task_type=TaskType.SUMMARIZATION,
    )
    d.write(
        "blk-fin-risk-memo-01@1",
        "Can an exception be approved while a guarantor review is pending?",
        "No, not from 2026-02-15.",
        adversarial=True,
        task_type=TaskType.RETRIEVAL,
    )
    d.write(
        "blk-sc-nw-memo-02@1",
        "What does air expedite on the Northwest lanes require?",
        "Budget-control approval before booking.",
        TaskType.SUMMARIZATION,
    )
    d.write(
        "blk-fed-cloud-01@1",
        "Which authorization must cloud services for federal information hold?",
        "FedRAMP Moderate or higher.",
        source=Source.SYNTHETIC_HUMAN_VERIFIED,
    )

    draw_working_slice(project=d.project, quarter=current_quarter(), actor=d.lead, seed=SLICE_SEED)
    return True
