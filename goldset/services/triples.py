"""Authoring gold triples (seed 000 step 1, DESIGN.md §5.1, §7): write, route, bulk-import.

A new triple is routed under the rules in force (GOLD when any rule fires, else TRIAGE); the
tier, the rule that fired and the rules version are stored on the triple. Its first revision pins
one block *version* and enters ``pending_review`` needing two reviewers (GOLD) or one (TRIAGE).

**Superseded pins** (issue 12 item 1). A revision pinned to a block version that is not the
block's current (newest) version is refused unless its author gives a reason; the reason is
stored on the revision (``superseded_reason``), recorded in the audit event and shown wherever the
pin is shown. :func:`check_pin` is the one home of that rule: every revision is written through
:func:`new_revision`, which calls it (write, revise, split, re-pin), and importers call it per
line while validating a file.
"""

import datetime as dt
import uuid
from dataclasses import dataclass, field
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, OuterRef, Subquery
from django.utils import timezone

from goldset.exceptions import CrossProjectReference, GoldsetError, ImportRejected
from goldset.imports.batches import run_import
from goldset.imports.errors import Problems
from goldset.imports.fields import At, column_length
from goldset.imports.reader import as_source, iter_json_lines
from goldset.models import (
    BlockVersion,
    Customer,
    CustomerPermission,
    Difficulty,
    Domain,
    Project,
    ProjectMembership,
    Source,
    TaskType,
    Triple,
    TripleRevision,
    TripleState,
)
from goldset.rules.tiers import TRIPLE, required_for
from goldset.rules.versions import is_superseded
from goldset.selectors.curation import newest_versions
from goldset.services.customers import _lock_customer, active_permission
from goldset.services.routing import decide_tier, get_active_rules, route_case
from goldset.services.text_limits import TextTooLong, check_text_length
from workbench.roles import Role, is_installation_admin
from workbench.services.audit import record_event, record_events

ID_LENGTH = column_length(Triple, "external_id")
MAX_SUPERSEDED_REASON = 1000


TRIPLE_ID = "gt-{:05d}"


def take_triple_ids(project, n: int) -> list[str]:
    """The next ``n`` ids of ``project``'s triples (``gt-00042``: numbered per project). The
    counter is the project row's ``last_triple_number``; its update holds the row until the
    caller's transaction ends, so two writers never draw the same number. A number an import
    already gave a triple by name is passed over."""
    names: list[str] = []
    with transaction.atomic():
        while len(names) < n:
            names += _draw_triple_ids(project, n - len(names))
    return names


def resume_triple_numbers(project) -> None:
    """Set ``project``'s triple counter past the highest ``gt-`` number its triples hold (after
    triples arrived with their ids, as in a project bundle)."""
    numbers = (
        int(name[3:])
        for name in Triple.objects.filter(project=project, external_id__startswith="gt-")
        .values_list("external_id", flat=True)
        .iterator(chunk_size=5000)
        if name[3:].isdigit()
    )
    Project.objects.filter(pk=project.pk).update(last_triple_number=max(numbers, default=0))


def _draw_triple_ids(project, want: int) -> list[str]:
    rows = Project.objects.filter(pk=getattr(project, "pk", project))
    rows.update(last_triple_number=F("last_triple_number") + want)
    last = rows.values_list("last_triple_number", flat=True).get()
    drawn = [TRIPLE_ID.format(k) for k in range(last - want + 1, last + 1)]
    taken = set(
        Triple.objects.filter(project=project, external_id__in=drawn).values_list(
            "external_id", flat=True
        )
    )
    return [name for name in drawn if name not in taken]


def check_same_project(*, project, block_version: BlockVersion | None = None, **objects) -> None:
    """Refuse a write of ``project`` that names an object of another project: the pinned
    ``block_version`` (through its block) or any of ``objects`` (a domain, customer or parent
    triple, by name). Raises :class:`CrossProjectReference`; reads nothing (the objects carry
    ``project_id``, the block version's block is loaded when not already)."""
    if block_version is not None and block_version.block.project_id != project.pk:
        raise CrossProjectReference(
            f"{block_version.block.block_id}@{block_version.version} is not in this project's "
            "corpus: a triple can only pin a block version of its own project."
        )
    for name, obj in objects.items():
        if obj is not None and obj.project_id != project.pk:
            raise CrossProjectReference(
                f"The {name} {obj} belongs to another project: a triple can only name a "
                f"{name} of its own project."
            )


class SupersededPin(GoldsetError):
    """A superseded block version was pinned without a reason. ``newest`` is the current version
    number of the block."""

    def __init__(self, message: str, *, block_version: BlockVersion, newest: int):
        super().__init__(message)
        self.block_version = block_version
        self.newest = newest


def check_pin(
    *, block_version: BlockVersion, superseded_reason: str = "", newest: int | None = None
) -> str:
    """The rule for pinning a block version; returns the reason to store with the revision.

    A pin to the block's current version is always fine and returns ``""`` (any reason given is
    dropped: there is nothing to justify). A pin to a superseded version (an older version of a
    block that has a newer one) needs a non-empty reason of at most MAX_SUPERSEDED_REASON
    characters, returned stripped; without one it raises :class:`SupersededPin` naming the
    current version. ``newest`` is the block's current version number when the caller already
    knows it (bulk imports, see :func:`newest_versions`); otherwise one query finds it.
    Reads only; no locks."""
    if newest is None:
        newest = newest_versions([block_version.block_id]).get(block_version.block_id, 0)
    if not is_superseded(pinned=block_version.version, newest=newest):
        return ""
    reason = (superseded_reason or "").strip()
    label = f"{block_version.block.block_id}@{block_version.version}"
    if not reason:
        raise SupersededPin(
            f"{label} is superseded: version {newest} is the block's current version. "
            f"Pin {block_version.block.block_id}@{newest}, or give a reason for pinning the "
            "superseded text (it is recorded and shown to reviewers, leads and at freeze).",
            block_version=block_version,
            newest=newest,
        )
    if len(reason) > MAX_SUPERSEDED_REASON:
        raise GoldsetError(
            f"The reason for pinning superseded {label} is too long "
            f"({len(reason)} characters; at most {MAX_SUPERSEDED_REASON})."
        )
    return reason


def new_revision(
    *,
    triple: Triple,
    question: str,
    block_version: BlockVersion,
    expected_answer: str,
    actor,
    superseded_reason: str = "",
) -> TripleRevision:
    """Append the next revision and make it current (the caller holds the triple's lock).

    The pin goes through :func:`check_pin`: a superseded block version without a reason raises
    :class:`SupersededPin`."""
    question, expected_answer = question.strip(), expected_answer.strip()
    check_text_length("question", question)
    check_text_length("expected_answer", expected_answer)
    if not question:
        raise GoldsetError("The question is empty.")
    if not expected_answer:
        raise GoldsetError("The expected answer is empty.")
    check_same_project(project=triple.project, block_version=block_version)
    reason = check_pin(block_version=block_version, superseded_reason=superseded_reason)
    last = triple.revisions.order_by("-number").values_list("number", flat=True).first() or 0
    revision = TripleRevision.objects.create(
        project_id=triple.project_id,
        triple=triple,
        number=last + 1,
        question=question,
        expected_block_version=block_version,
        expected_answer=expected_answer,
        superseded_reason=reason,
        created_by=actor,
        reviewers_needed=required_for(TRIPLE, triple.tier, project=triple.project),
    )
    triple.current_revision = revision
    return revision


def _check_source(source: str, customer: Customer | None, *, project) -> Customer | None:
    if source not in Source.values:
        raise GoldsetError(f"Unknown source {source!r}.")
    if source == Source.CUSTOMER_PERMISSIONED:
        if customer is None:
            raise GoldsetError("A customer-permissioned triple needs its customer.")
        customer = _lock_customer(customer)
        check_same_project(project=project, customer=customer)
        if active_permission(customer) is None:
            raise GoldsetError(
                f"{customer.name} has no active permission grant; their questions cannot be used."
            )
        return customer
    if customer is not None:
        raise GoldsetError("Only customer-permissioned triples name a customer.")
    return None


@transaction.atomic
def create_triple(
    *,
    project,
    author,
    question: str,
    block_version: BlockVersion,
    expected_answer: str,
    task_type: str,
    source: str,
    domain: Domain | None = None,
    difficulty: str = Difficulty.STANDARD,
    customer: Customer | None = None,
    adversarial: bool = False,
    model_uncertainty: Decimal | float | None = None,
    llm_verified: bool = False,
    parent: Triple | None = None,
    external_id: str = "",
    added_at: dt.datetime | None = None,
    imported_by=None,
    superseded_reason: str = "",
) -> Triple:
    """Create and route a triple of ``project`` with its first revision, state
    ``pending_review``.

    The block version, domain, customer and parent must be of ``project``
    (:class:`CrossProjectReference` otherwise). ``domain`` defaults to the pinned block's document domain. A customer-permissioned triple
    locks the customer row and needs an active grant. ``llm_verified`` records the (human) author
    as the verifier of an LLM-generated triple. ``imported_by`` (bulk imports) is the user the audit
    event names as the actor; when it is not the author the event says the import was on the
    author's behalf. Pinning a superseded block version needs ``superseded_reason`` (see
    :func:`check_pin`; :class:`SupersededPin` otherwise). Raises GoldsetError for any rule
    violation."""
    if task_type not in TaskType.values:
        raise GoldsetError(f"Unknown task type {task_type!r}.")
    if difficulty not in Difficulty.values:
        raise GoldsetError(f"Unknown difficulty {difficulty!r}.")
    check_same_project(project=project, block_version=block_version, domain=domain, parent=parent)
    customer = _check_source(source, customer, project=project)
    if model_uncertainty is not None:
        model_uncertainty = Decimal(str(model_uncertainty))
        if not Decimal(0) <= model_uncertainty <= Decimal(1):
            raise GoldsetError("Model uncertainty must be between 0 and 1.")
    if domain is None:
        domain = block_version.block.document.domain
    if external_id and Triple.objects.filter(project=project, external_id=external_id).exists():
        raise GoldsetError(f"A triple with the id {external_id!r} already exists.")
    decision = route_case(
        project=domain.project_id,
        task_type=task_type,
        uncertainty=model_uncertainty,
        adversarial=adversarial,
        domain=domain.slug,
    )
    verified = source == Source.LLM_GENERATED and llm_verified
    triple = Triple.objects.create(
        project=project,
        external_id=external_id or take_triple_ids(project, 1)[0],
        state=TripleState.PENDING_REVIEW,
        tier=decision.tier,
        routing_rule=decision.rule,
        rules_version=decision.rules_version,
        source=source,
        customer=customer,
        adversarial=adversarial,
        model_uncertainty=model_uncertainty,
        domain=domain,
        task_type=task_type,
        difficulty=difficulty,
        author=author,
        human_verified_by=author if verified else None,
        human_verified_at=timezone.now() if verified else None,
        parent=parent,
        added_at=added_at or timezone.now(),
    )
    revision = new_revision(
        triple=triple,
        question=question,
        block_version=block_version,
        expected_answer=expected_answer,
        actor=author,
        superseded_reason=superseded_reason,
    )
    triple.save(update_fields=["current_revision", "updated_at"])
    detail = {
        "tier": decision.tier,
        "routing_rule": decision.rule,
        "rules_version": decision.rules_version,
        "block_version_id": block_version.pk,
        "parent": parent.external_id if parent else None,
    }
    if imported_by is not None:
        detail["imported"] = True
        if imported_by.pk != author.pk:
            detail["on_behalf_of"] = author.get_username()
    record_event(
        actor=imported_by or author,
        verb="triple_created",
        obj=triple,
        detail={**detail, **superseded_detail(revision)},
    )
    return triple


def superseded_detail(revision: TripleRevision) -> dict:
    """Audit detail for a revision pinned to a superseded version (empty for a current pin)."""
    if not revision.superseded_reason:
        return {}
    return {"superseded_pin": True, "superseded_reason": revision.superseded_reason}


# ---------------------------------------------------------------- bulk import (gold JSONL shape)


@dataclass
class TripleLine:
    lineno: int
    external_id: str
    question: str
    block_id: str
    version: int
    document_id: str
    sha256: str
    expected_answer: str
    domain: str
    difficulty: str
    task_type: str
    source: str
    added_by: str
    added_at: dt.date | None
    customer: str = ""
    adversarial: bool = False
    model_uncertainty: Decimal | None = None
    human_verified_by: str = ""
    superseded_reason: str = ""


@dataclass
class TripleImportSummary:
    created: list[str] = field(default_factory=list)
    by_tier: dict[str, int] = field(default_factory=dict)
    on_behalf: bool = False

    def as_dict(self) -> dict:
        return {"created": len(self.created), "by_tier": self.by_tier, "on_behalf": self.on_behalf}


def _parse_line(lineno: int, obj: dict, problems: Problems) -> TripleLine:
    at = At(problems, lineno)
    block = obj.get("expected_block")
    meta = obj.get("metadata")
    if not isinstance(block, dict):
        at.add("expected_block", "missing", "an object with block_id, version")
        block = {}
    if not isinstance(meta, dict):
        at.add("metadata", "missing", "an object")
        meta = {}
    b, m = at / "expected_block", at / "metadata"
    version = b.whole(block.get("version"), "version", minimum=1, required=True) or 0
    added_at = None
    if meta.get("added_at") not in (None, ""):
        try:
            added_at = dt.date.fromisoformat(str(meta["added_at"])[:10])
        except ValueError:
            m.add("added_at", f"got {meta['added_at']!r}", "a date YYYY-MM-DD")
    uncertainty = m.number(meta.get("model_uncertainty"), "model_uncertainty", minimum=0, maximum=1)
    adversarial = meta.get("adversarial", False)
    if not isinstance(adversarial, bool):
        m.add("adversarial", f"got {adversarial!r}", "true or false")
    username = column_length(get_user_model(), get_user_model().USERNAME_FIELD)
    return TripleLine(
        lineno=lineno,
        external_id=at.identifier(obj, "id", max_length=ID_LENGTH, required=False),
        question=at.text(obj, "question"),
        block_id=b.identifier(block, "block_id", max_length=200),
        version=version,
        document_id=b.identifier(block, "document_id", max_length=200, required=False),
        sha256=b.text(block, "sha256", required=False, max_length=64),
        expected_answer=at.text(obj, "expected_answer"),
        domain=m.identifier(meta, "domain", max_length=64),
        difficulty=m.choice(meta, "difficulty", Difficulty.values, default="standard"),
        task_type=m.choice(meta, "task_type", TaskType.values),
        source=m.choice(meta, "source", Source.values),
        added_by=m.identifier(meta, "added_by", max_length=username, required=False),
        added_at=added_at,
        customer=m.identifier(meta, "customer", max_length=64, required=False),
        adversarial=adversarial is True,
        model_uncertainty=uncertainty,
        human_verified_by=m.identifier(
            meta, "human_verified_by", max_length=username, required=False
        ),
        superseded_reason=m.text(
            meta, "superseded_reason", required=False, max_length=MAX_SUPERSEDED_REASON
        ),
    )


class TripleImporter:
    """Gold-JSONL triples, checked per batch; written in bulk with :func:`create_triple`'s
    rules (see :meth:`write`)."""

    def __init__(self, *, project, actor, source_name: str, on_behalf: bool):
        self.project = project
        self.actor, self.source_name, self.on_behalf = actor, source_name, on_behalf
        self.actor_name = actor.get_username() if actor is not None else ""

    def begin(self, *, writing: bool) -> None:
        self.seen: dict[str, int] = {}
        self.summary = TripleImportSummary(on_behalf=self.on_behalf)

    def records(self, source, problems, progress):
        for lineno, obj in iter_json_lines(source, problems, what="triple", progress=progress):
            yield _parse_line(lineno, obj, problems)

    def _check_people(self, ln: TripleLine, at: At, users: dict) -> None:
        if ln.added_by and ln.added_by not in users:
            at.add("metadata.added_by", f"unknown user {ln.added_by!r}")
        elif ln.added_by and ln.added_by != self.actor_name and not self.on_behalf:
            at.add(
                "metadata.added_by",
                f"names {ln.added_by!r}, not you: only an admin importing on behalf of others "
                "may attribute triples to another user",
            )
        if ln.human_verified_by and ln.human_verified_by not in users:
            at.add("metadata.human_verified_by", f"unknown user {ln.human_verified_by!r}")
        elif ln.human_verified_by and ln.human_verified_by != self.actor_name:
            at.add(
                "metadata.human_verified_by",
                f"names {ln.human_verified_by!r}: a human verification is only recorded from "
                "that person's own action (omit it, or import as that user)",
            )
        elif ln.human_verified_by and ln.source != Source.LLM_GENERATED:
            at.add("metadata.human_verified_by", "only llm_generated triples are verified")

    @staticmethod
    def _check_texts(ln: TripleLine, at: At) -> None:
        """What :func:`new_revision` refuses, found while validating (not at write time)."""
        for name, value in (("question", ln.question), ("expected_answer", ln.expected_answer)):
            if value and not value.strip():
                at.add(name, "is blank", "a non-empty string")
            try:
                check_text_length(name, value.strip())
            except TextTooLong as exc:
                at.add(name, str(exc).removeprefix(f"{name}: ").rstrip("."))

    def check(self, lines: list[TripleLine], problems: Problems) -> list:
        User = get_user_model()
        names = ({ln.added_by for ln in lines} | {ln.human_verified_by for ln in lines}) - {""}
        users = {u.get_username(): u for u in User.objects.filter(username__in=names)}
        # Domains, customers, block versions and ids are looked up in the import's project
        # only: a block of another project is "not in the corpus" (named by line and field).
        project = self.project
        domains = {
            d.slug: d
            for d in Domain.objects.filter(project=project, slug__in={ln.domain for ln in lines})
        }
        customers = {
            c.slug: c
            for c in Customer.objects.filter(
                project=project, slug__in={ln.customer for ln in lines} - {""}
            )
        }
        active = set(
            CustomerPermission.objects.filter(
                customer__in=[c.pk for c in customers.values()], revoked_at__isnull=True
            ).values_list("customer__slug", flat=True)
        )
        versions = {
            (v.block.block_id, v.version): v
            for v in BlockVersion.objects.select_related("block__document__domain").filter(
                block__project=project, block__block_id__in={ln.block_id for ln in lines}
            )
        }
        newest = newest_versions(v.block_id for v in versions.values())
        taken = set(
            Triple.objects.filter(
                project=project, external_id__in={ln.external_id for ln in lines} - {""}
            ).values_list("external_id", flat=True)
        )
        plan = []
        for ln in lines:
            at = At(problems, ln.lineno)
            if ln.external_id:
                if ln.external_id in taken:
                    at.add("id", f"a triple with the id {ln.external_id!r} already exists")
                if ln.external_id in self.seen:
                    at.add(
                        "id", f"{ln.external_id!r} also appears at line {self.seen[ln.external_id]}"
                    )
                self.seen[ln.external_id] = ln.lineno
            self._check_people(ln, at, users)
            if ln.domain and ln.domain not in domains:
                at.add("metadata.domain", f"unknown domain {ln.domain!r}")
            if ln.source == Source.CUSTOMER_PERMISSIONED:
                if not ln.customer:
                    at.add("metadata.customer", "required for customer_permissioned triples")
                elif ln.customer not in customers:
                    at.add("metadata.customer", f"unknown customer {ln.customer!r}")
                elif ln.customer not in active:
                    at.add("metadata.customer", f"{ln.customer!r} has no active permission grant")
            elif ln.customer:
                at.add("metadata.customer", "only customer_permissioned triples name a customer")
            bv = versions.get((ln.block_id, ln.version)) if ln.block_id and ln.version else None
            if ln.block_id and ln.version and bv is None:
                at.add(
                    "expected_block",
                    f"no block version {ln.block_id} v{ln.version} in this project's corpus",
                )
            elif bv is not None:
                if ln.document_id and ln.document_id != bv.block.document.document_id:
                    at.add(
                        "expected_block.document_id",
                        f"{ln.block_id} belongs to {bv.block.document.document_id!r}, "
                        f"not {ln.document_id!r}",
                    )
                if ln.sha256 and ln.sha256 != bv.sha256:
                    at.add(
                        "expected_block.sha256",
                        f"does not match the stored text of {ln.block_id} v{ln.version}",
                    )
            reason = ""
            if bv is not None:
                try:
                    reason = check_pin(
                        block_version=bv,
                        superseded_reason=ln.superseded_reason,
                        newest=newest.get(bv.block_id),
                    )
                except SupersededPin as exc:
                    at.add(
                        "expected_block.version",
                        f"{ln.block_id} v{ln.version} is superseded by v{exc.newest}; "
                        f"pin v{exc.newest} or give metadata.superseded_reason",
                    )
                except GoldsetError as exc:
                    at.add("metadata.superseded_reason", str(exc))
            self._check_texts(ln, at)
            author = users.get(ln.added_by) if ln.added_by else self.actor
            plan.append(
                (ln, author, bv, domains.get(ln.domain), customers.get(ln.customer), reason)
            )
        return plan

    def write(self, plan) -> None:
        """Write one checked batch with bulk inserts: what :func:`create_triple` does per triple
        (routing under the rules in force, the customer locked and its grant checked, the first
        revision through :func:`check_pin`, one ``triple_created`` audit event each), in about
        eight statements per batch instead of eight per triple."""
        if not plan:
            return
        now = timezone.now()
        rules = get_active_rules(project=plan[0][3].project_id)
        granted = self._lock_customers({line[4] for line in plan if line[4] is not None})
        triples, revisions, details = [], [], []
        for ln, author, block_version, domain, customer, reason in plan:
            if customer is not None and customer.pk not in granted:
                raise ImportRejected(
                    [
                        f"line {ln.lineno}: {customer.name} has no active permission grant; "
                        "their questions cannot be used."
                    ],
                    source=self.source_name,
                )
            domain = domain or block_version.block.document.domain
            uncertainty = (
                Decimal(str(ln.model_uncertainty)) if ln.model_uncertainty is not None else None
            )
            decision = decide_tier(
                rules=rules,
                task_type=ln.task_type,
                uncertainty=uncertainty,
                adversarial=ln.adversarial,
                domain=domain.slug,
            )
            # The importing human verifies an LLM triple (for themselves or, on behalf of
            # another author, as themselves); check() refused every other case.
            verifier = self.actor if ln.human_verified_by else None
            added_at = (
                dt.datetime.combine(ln.added_at, dt.time(), tzinfo=dt.UTC) if ln.added_at else now
            )
            triples.append(
                Triple(
                    project=self.project,
                    external_id=ln.external_id or f"pending-{uuid.uuid4().hex}",
                    state=TripleState.PENDING_REVIEW,
                    tier=decision.tier,
                    routing_rule=decision.rule,
                    rules_version=decision.rules_version,
                    source=ln.source,
                    customer=customer,
                    adversarial=ln.adversarial,
                    model_uncertainty=uncertainty,
                    domain=domain,
                    task_type=ln.task_type,
                    difficulty=ln.difficulty,
                    author=author,
                    human_verified_by=verifier,
                    human_verified_at=now if verifier else None,
                    added_at=added_at,
                )
            )
            revisions.append(
                TripleRevision(
                    number=1,
                    question=ln.question.strip(),
                    expected_block_version=block_version,
                    expected_answer=ln.expected_answer.strip(),
                    superseded_reason=reason,
                    created_by=author,
                    reviewers_needed=required_for(TRIPLE, decision.tier, project=rules.project),
                )
            )
            detail = {
                "tier": decision.tier,
                "routing_rule": decision.rule,
                "rules_version": decision.rules_version,
                "block_version_id": block_version.pk,
                "parent": None,
                "imported": True,
            }
            if author.pk != self.actor.pk:
                detail["on_behalf_of"] = author.get_username()
            if reason:
                detail.update(superseded_pin=True, superseded_reason=reason)
            details.append(detail)
        Triple.objects.bulk_create(triples)
        unnamed = [t for t in triples if t.external_id.startswith("pending-")]
        for triple, name in zip(unnamed, take_triple_ids(self.project, len(unnamed)), strict=True):
            triple.external_id = name
        for triple, revision in zip(triples, revisions, strict=True):
            revision.triple = triple
            revision.project_id = triple.project_id
        TripleRevision.objects.bulk_create(revisions)
        Triple.objects.filter(pk__in=[t.pk for t in triples]).update(
            current_revision=Subquery(
                TripleRevision.objects.filter(triple_id=OuterRef("pk"), number=1).values("pk")[:1]
            ),
            updated_at=now,
        )
        if unnamed:
            Triple.objects.bulk_update(unnamed, ["external_id"])
        record_events(
            actor=self.actor, verb="triple_created", events=zip(triples, details, strict=True)
        )
        for triple in triples:
            self.summary.created.append(triple.external_id)
            self.summary.by_tier[triple.tier] = self.summary.by_tier.get(triple.tier, 0) + 1

    @staticmethod
    def _lock_customers(customers) -> set[int]:
        """Lock the batch's customers (as :func:`create_triple` locks each one: a revocation
        cannot interleave) and return those with an active grant."""
        ids = sorted(c.pk for c in customers)
        if not ids:
            return set()
        list(Customer.objects.select_for_update().filter(pk__in=ids).order_by("pk"))
        return set(
            CustomerPermission.objects.filter(
                customer_id__in=ids, revoked_at__isnull=True
            ).values_list("customer_id", flat=True)
        )

    def finish(self, *, source) -> TripleImportSummary:
        record_event(
            actor=self.actor,
            verb="triples_imported",
            object_type="triples",
            object_id=self.source_name[:128],
            project=self.project,
            detail={
                **self.summary.as_dict(),
                "ids": self.summary.created[:500],
                "file_sha256": source.sha256,
            },
        )
        return self.summary


def _is_admin_in(user, project) -> bool:
    """Whether ``user`` is an admin *in ``project``* (a worker or a command has no request
    whose roles to read): a membership with the admin role, or an installation admin."""
    return (
        is_installation_admin(user)
        or ProjectMembership.objects.filter(
            project=project, user_id=user.pk, role=Role.ADMIN
        ).exists()
    )


def import_triples(
    *,
    project,
    source,
    actor,
    source_name: str = "",
    on_behalf: bool = False,
    progress=None,
    on_written=None,
) -> TripleImportSummary:
    """Import triples in the gold-JSONL shape (DESIGN.md §9) into ``project``, all or nothing,
    streaming. Users are installation-wide; domains, customers, block versions and triple ids
    are the project's (a block of another project is refused as not in its corpus).

    Every line is checked first (structure, users, domains, customers with an active grant,
    block versions and their sha256); any problem raises ImportRejected listing
    ``line N: field: reason`` and nothing is stored. Imported triples are routed by the rules in
    force and enter ``pending_review`` like authored ones: ``tier``, ``reviewed_by`` and
    ``resolution`` in the file are informational and not trusted. A line pinned to a superseded
    block version needs ``metadata.superseded_reason`` (:func:`check_pin`).

    Authorship cannot be forged: ``metadata.added_by`` must be empty or the importing user,
    unless an admin imports with ``on_behalf=True`` (each triple's audit event then names the
    importer as actor and the author it was imported for). ``metadata.human_verified_by`` may
    only name the importing user: a verification is only recorded from that human's action.
    Raises GoldsetError when ``on_behalf`` is asked by a non-admin or there is no actor."""
    if actor is None or not getattr(actor, "is_authenticated", False):
        raise GoldsetError("An import of triples needs the importing user (the author).")
    if on_behalf and not _is_admin_in(actor, project):
        raise GoldsetError("Only an admin may import triples on behalf of other authors.")
    source = as_source(source, name=source_name)
    importer = TripleImporter(
        project=project, actor=actor, source_name=source_name or source.name, on_behalf=on_behalf
    )
    return run_import(importer=importer, source=source, progress=progress, on_written=on_written)
