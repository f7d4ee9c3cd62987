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
import json
import uuid
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from goldset.exceptions import GoldsetError, ImportRejected
from goldset.models import (
    BlockVersion,
    Customer,
    CustomerPermission,
    Difficulty,
    Domain,
    Source,
    TaskType,
    Triple,
    TripleRevision,
    TripleState,
)
from goldset.rules.tiers import TRIPLE, required_for
from goldset.services.customers import _lock_customer, active_permission
from goldset.services.routing import route_case
from workbench.services.audit import record_event

MAX_REPORTED_ERRORS = 50
MAX_SUPERSEDED_REASON = 1000


class SupersededPin(GoldsetError):
    """A superseded block version was pinned without a reason. ``newest`` is the current version
    number of the block."""

    def __init__(self, message: str, *, block_version: BlockVersion, newest: int):
        super().__init__(message)
        self.block_version = block_version
        self.newest = newest


def newest_versions(block_ids) -> dict[int, int]:
    """The current (newest) version number of each block (by primary key); one query."""
    return dict(
        BlockVersion.objects.filter(block_id__in=set(block_ids))
        .values("block_id")
        .annotate(newest=Max("version"))
        .values_list("block_id", "newest")
    )


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
    if block_version.version >= newest:
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
    if not question:
        raise GoldsetError("The question is empty.")
    if not expected_answer:
        raise GoldsetError("The expected answer is empty.")
    reason = check_pin(block_version=block_version, superseded_reason=superseded_reason)
    last = triple.revisions.order_by("-number").values_list("number", flat=True).first() or 0
    revision = TripleRevision.objects.create(
        triple=triple,
        number=last + 1,
        question=question,
        expected_block_version=block_version,
        expected_answer=expected_answer,
        superseded_reason=reason,
        created_by=actor,
        reviewers_needed=required_for(TRIPLE, triple.tier),
    )
    triple.current_revision = revision
    return revision


def _check_source(source: str, customer: Customer | None) -> Customer | None:
    if source not in Source.values:
        raise GoldsetError(f"Unknown source {source!r}.")
    if source == Source.CUSTOMER_PERMISSIONED:
        if customer is None:
            raise GoldsetError("A customer-permissioned triple needs its customer.")
        customer = _lock_customer(customer)
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
    superseded_reason: str = "",
) -> Triple:
    """Create and route a triple with its first revision, state ``pending_review``.

    ``domain`` defaults to the pinned block's document domain. A customer-permissioned triple
    locks the customer row and needs an active grant. ``llm_verified`` records the (human) author
    as the verifier of an LLM-generated triple. Pinning a superseded block version needs
    ``superseded_reason`` (see :func:`check_pin`; :class:`SupersededPin` otherwise). Raises
    GoldsetError for any rule violation."""
    if task_type not in TaskType.values:
        raise GoldsetError(f"Unknown task type {task_type!r}.")
    if difficulty not in Difficulty.values:
        raise GoldsetError(f"Unknown difficulty {difficulty!r}.")
    customer = _check_source(source, customer)
    if model_uncertainty is not None:
        model_uncertainty = Decimal(str(model_uncertainty))
        if not Decimal(0) <= model_uncertainty <= Decimal(1):
            raise GoldsetError("Model uncertainty must be between 0 and 1.")
    if domain is None:
        domain = block_version.block.document.domain
    if external_id and Triple.objects.filter(external_id=external_id).exists():
        raise GoldsetError(f"A triple with the id {external_id!r} already exists.")
    decision = route_case(
        task_type=task_type,
        uncertainty=model_uncertainty,
        adversarial=adversarial,
        domain=domain.slug,
    )
    verified = source == Source.LLM_GENERATED and llm_verified
    triple = Triple.objects.create(
        external_id=external_id or f"pending-{uuid.uuid4().hex}",
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
    if not external_id:
        triple.external_id = f"gt-{triple.pk:05d}"
    revision = new_revision(
        triple=triple,
        question=question,
        block_version=block_version,
        expected_answer=expected_answer,
        actor=author,
        superseded_reason=superseded_reason,
    )
    triple.save(update_fields=["external_id", "current_revision", "updated_at"])
    record_event(
        actor=author,
        verb="triple_created",
        obj=triple,
        detail={
            "tier": decision.tier,
            "routing_rule": decision.rule,
            "rules_version": decision.rules_version,
            "block_version_id": block_version.pk,
            "parent": parent.external_id if parent else None,
            **superseded_detail(revision),
        },
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

    def as_dict(self) -> dict:
        return {"created": len(self.created), "by_tier": self.by_tier}


def _str(obj: dict, key: str, where: str, errors: list[str], *, required=True) -> str:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            errors.append(f"{where}{key}: missing (expected a non-empty string)")
        return ""
    if not isinstance(value, str):
        errors.append(f"{where}{key}: expected a string, got {type(value).__name__}")
        return ""
    return value


def _choice(obj, key, where, errors, choices, *, default=None) -> str:
    value = obj.get(key, default)
    if value not in choices:
        errors.append(f"{where}{key}: expected one of {', '.join(choices)}, got {value!r}")
        return ""
    return value


def _parse_line(lineno: int, obj: dict, errors: list[str]) -> TripleLine:
    where = f"line {lineno}: "
    block = obj.get("expected_block")
    meta = obj.get("metadata")
    if not isinstance(block, dict):
        errors.append(f"{where}expected_block: missing (expected an object with block_id, version)")
        block = {}
    if not isinstance(meta, dict):
        errors.append(f"{where}metadata: missing (expected an object)")
        meta = {}
    version = block.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        errors.append(
            f"{where}expected_block.version: expected a whole number ≥ 1, got {version!r}"
        )
        version = 0
    added_at = None
    if meta.get("added_at") not in (None, ""):
        try:
            added_at = dt.date.fromisoformat(str(meta["added_at"])[:10])
        except ValueError:
            errors.append(
                f"{where}metadata.added_at: expected a date YYYY-MM-DD, got {meta['added_at']!r}"
            )
    uncertainty = None
    if meta.get("model_uncertainty") is not None:
        try:
            uncertainty = Decimal(str(meta["model_uncertainty"]))
        except InvalidOperation:
            uncertainty = Decimal(-1)
        if isinstance(meta["model_uncertainty"], bool) or not Decimal(0) <= uncertainty <= 1:
            errors.append(
                f"{where}metadata.model_uncertainty: expected a number between 0 and 1, "
                f"got {meta['model_uncertainty']!r}"
            )
    adversarial = meta.get("adversarial", False)
    if not isinstance(adversarial, bool):
        errors.append(f"{where}metadata.adversarial: expected true or false, got {adversarial!r}")
    m = f"{where}metadata."
    b = f"{where}expected_block."
    return TripleLine(
        lineno=lineno,
        external_id=_str(obj, "id", where, errors, required=False),
        question=_str(obj, "question", where, errors),
        block_id=_str(block, "block_id", b, errors),
        version=version,
        document_id=_str(block, "document_id", b, errors, required=False),
        sha256=_str(block, "sha256", b, errors, required=False),
        expected_answer=_str(obj, "expected_answer", where, errors),
        domain=_str(meta, "domain", m, errors),
        difficulty=_choice(meta, "difficulty", m, errors, Difficulty.values, default="standard"),
        task_type=_choice(meta, "task_type", m, errors, TaskType.values),
        source=_choice(meta, "source", m, errors, Source.values),
        added_by=_str(meta, "added_by", m, errors),
        added_at=added_at,
        customer=_str(meta, "customer", m, errors, required=False),
        adversarial=adversarial is True,
        model_uncertainty=uncertainty,
        human_verified_by=_str(meta, "human_verified_by", m, errors, required=False),
        superseded_reason=_str(meta, "superseded_reason", m, errors, required=False),
    )


def parse_triple_lines(text: str) -> tuple[list[TripleLine], list[str]]:
    """Parse a gold-JSONL file without touching the database: the well-formed lines and every
    problem found as ``line N: field: reason``."""
    errors: list[str] = []
    lines = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            errors.append(f"line {lineno}: expected a JSON object (one triple per line)")
            continue
        lines.append(_parse_line(lineno, obj, errors))
    if not lines and not errors:
        errors.append("line 1: the file holds no triples")
    return lines, errors


def _line_number(error: str) -> int:
    head = error.split(":", 1)[0]
    return int(head[5:]) if head.startswith("line ") and head[5:].isdigit() else 0


def _check_lines(lines: list[TripleLine]) -> tuple[dict, dict, dict, dict, list[str]]:
    errors: list[str] = []
    User = get_user_model()
    names = {ln.added_by for ln in lines} | {ln.human_verified_by for ln in lines} - {""}
    users = {u.username: u for u in User.objects.filter(username__in=names)}
    domains = {d.slug: d for d in Domain.objects.filter(slug__in={ln.domain for ln in lines})}
    customers = {
        c.slug: c for c in Customer.objects.filter(slug__in={ln.customer for ln in lines} - {""})
    }
    active = set(
        CustomerPermission.objects.filter(
            customer__slug__in=customers, revoked_at__isnull=True
        ).values_list("customer__slug", flat=True)
    )
    versions = {
        (v.block.block_id, v.version): v
        for v in BlockVersion.objects.select_related("block__document__domain").filter(
            block__block_id__in={ln.block_id for ln in lines}
        )
    }
    newest = newest_versions(v.block_id for v in versions.values())
    taken = set(
        Triple.objects.filter(external_id__in={ln.external_id for ln in lines} - {""}).values_list(
            "external_id", flat=True
        )
    )
    seen: dict[str, int] = {}
    for ln in lines:
        where = f"line {ln.lineno}: "
        if ln.external_id:
            if ln.external_id in taken:
                errors.append(f"{where}id: a triple with the id {ln.external_id!r} already exists")
            if ln.external_id in seen:
                errors.append(
                    f"{where}id: {ln.external_id!r} also appears at line {seen[ln.external_id]}"
                )
            seen[ln.external_id] = ln.lineno
        if ln.added_by and ln.added_by not in users:
            errors.append(f"{where}metadata.added_by: unknown user {ln.added_by!r}")
        if ln.human_verified_by and ln.human_verified_by not in users:
            errors.append(
                f"{where}metadata.human_verified_by: unknown user {ln.human_verified_by!r}"
            )
        if ln.domain and ln.domain not in domains:
            errors.append(f"{where}metadata.domain: unknown domain {ln.domain!r}")
        if ln.source == Source.CUSTOMER_PERMISSIONED:
            if not ln.customer:
                errors.append(
                    f"{where}metadata.customer: required for customer_permissioned triples"
                )
            elif ln.customer not in customers:
                errors.append(f"{where}metadata.customer: unknown customer {ln.customer!r}")
            elif ln.customer not in active:
                errors.append(
                    f"{where}metadata.customer: {ln.customer!r} has no active permission grant"
                )
        elif ln.customer:
            errors.append(
                f"{where}metadata.customer: only customer_permissioned triples name a customer"
            )
        if ln.block_id and ln.version:
            bv = versions.get((ln.block_id, ln.version))
            if bv is None:
                errors.append(
                    f"{where}expected_block: no block version {ln.block_id} v{ln.version} in the corpus"
                )
            else:
                if ln.document_id and ln.document_id != bv.block.document.document_id:
                    errors.append(
                        f"{where}expected_block.document_id: {ln.block_id} belongs to "
                        f"{bv.block.document.document_id!r}, not {ln.document_id!r}"
                    )
                if ln.sha256 and ln.sha256 != bv.sha256:
                    errors.append(
                        f"{where}expected_block.sha256: does not match the stored text of "
                        f"{ln.block_id} v{ln.version}"
                    )
                try:
                    check_pin(
                        block_version=bv,
                        superseded_reason=ln.superseded_reason,
                        newest=newest.get(bv.block_id),
                    )
                except SupersededPin as exc:
                    errors.append(
                        f"{where}expected_block.version: {ln.block_id} v{ln.version} is "
                        f"superseded by v{exc.newest}; pin v{exc.newest} or give "
                        "metadata.superseded_reason"
                    )
                except GoldsetError as exc:
                    errors.append(f"{where}metadata.superseded_reason: {exc}")
    return users, domains, customers, versions, errors


@transaction.atomic
def import_triples(*, text: str, actor, source_name: str = "") -> TripleImportSummary:
    """Import triples in the gold-JSONL shape (DESIGN.md §9), all or nothing.

    Every line is checked first (structure, users, domains, customers with an active grant,
    block versions and their sha256); any problem raises ImportRejected listing
    ``line N: field: reason`` and nothing is stored. Imported triples are routed by the rules in
    force and enter ``pending_review`` like authored ones: ``tier``, ``reviewed_by`` and
    ``resolution`` in the file are informational and not trusted. A line pinned to a superseded
    block version needs ``metadata.superseded_reason`` (:func:`check_pin`)."""
    lines, errors = parse_triple_lines(text)
    users, domains, customers, versions, db_errors = _check_lines(lines)
    errors = sorted(errors + db_errors, key=_line_number)  # stable: a line's errors keep order
    if errors:
        raise ImportRejected(errors[:MAX_REPORTED_ERRORS], source=source_name)
    summary = TripleImportSummary()
    for ln in lines:
        added_at = (
            dt.datetime.combine(ln.added_at, dt.time(), tzinfo=dt.UTC) if ln.added_at else None
        )
        try:
            triple = create_triple(
                author=users[ln.added_by],
                question=ln.question,
                block_version=versions[(ln.block_id, ln.version)],
                expected_answer=ln.expected_answer,
                task_type=ln.task_type,
                source=ln.source,
                domain=domains[ln.domain],
                difficulty=ln.difficulty,
                customer=customers.get(ln.customer),
                adversarial=ln.adversarial,
                model_uncertainty=ln.model_uncertainty,
                external_id=ln.external_id,
                added_at=added_at,
                superseded_reason=ln.superseded_reason,
            )
        except GoldsetError as exc:
            raise ImportRejected([f"line {ln.lineno}: {exc}"], source=source_name) from exc
        if ln.source == Source.LLM_GENERATED and ln.human_verified_by:
            triple.human_verified_by = users[ln.human_verified_by]
            triple.human_verified_at = timezone.now()
            triple.save(update_fields=["human_verified_by", "human_verified_at", "updated_at"])
        summary.created.append(triple.external_id)
        summary.by_tier[triple.tier] = summary.by_tier.get(triple.tier, 0) + 1
    record_event(
        actor=actor,
        verb="triples_imported",
        object_type="triples",
        object_id=source_name[:128],
        detail={**summary.as_dict(), "ids": summary.created[:500]},
    )
    return summary
