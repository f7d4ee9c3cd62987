"""Customers and their logged permission to use their questions (DESIGN.md §4, issue 4 item 6).

A customer-permissioned triple needs a customer with an active grant. Revoking the grant marks
every one of that customer's triples ``revoked`` (out of the gold set and of every later export).
Grants and revocations are rows that are never deleted, and each writes an audit event.
"""

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from goldset.exceptions import GoldsetError
from goldset.models import Customer, CustomerPermission, Triple, TripleState
from goldset.rules.triple_states import CLOSED, transition
from workbench.services.audit import record_event


@transaction.atomic
def create_customer(*, project, name: str, actor, slug: str = "") -> Customer:
    """Create a customer of ``project`` (no permission yet). Raises GoldsetError when the slug
    is taken in the project."""
    slug = slugify(slug or name)[:64]
    if not slug:
        raise GoldsetError("A customer needs a name made of letters or digits.")
    if Customer.objects.filter(project=project, slug=slug).exists():
        raise GoldsetError(f"A customer with the slug {slug!r} already exists.")
    customer = Customer.objects.create(project=project, name=name.strip(), slug=slug)
    record_event(actor=actor, verb="customer_created", obj=customer)
    return customer


def _lock_customer(customer: Customer) -> Customer:
    # Grants, revocations and new customer triples all lock the customer row first, so a triple
    # can never be created against a permission that is being revoked at the same moment.
    return Customer.objects.select_for_update().get(pk=customer.pk)


def active_permission(customer: Customer) -> CustomerPermission | None:
    return customer.permissions.filter(revoked_at__isnull=True).first()


@transaction.atomic
def grant_customer_permission(*, customer: Customer, actor, note: str = "") -> CustomerPermission:
    """Record a grant. Idempotent: with an active grant already, that grant is returned."""
    customer = _lock_customer(customer)
    current = active_permission(customer)
    if current is not None:
        return current
    permission = CustomerPermission.objects.create(customer=customer, granted_by=actor, note=note)
    record_event(
        actor=actor,
        verb="customer_permission_granted",
        obj=customer,
        detail={"permission_id": permission.pk, "note": note},
    )
    return permission


@transaction.atomic
def revoke_customer_permission(*, customer: Customer, actor, note: str = "") -> list[int]:
    """Revoke the active grant and mark all the customer's live triples ``revoked``.

    Returns the ids of the triples revoked. Raises GoldsetError when no grant is active.
    Triples already closed (dropped, split, retired, revoked) keep their state."""
    customer = _lock_customer(customer)
    current = active_permission(customer)
    if current is None:
        raise GoldsetError(f"{customer.name} has no active permission to revoke.")
    now = timezone.now()
    current.revoked_at, current.revoked_by, current.revocation_note = now, actor, note
    current.save(update_fields=["revoked_at", "revoked_by", "revocation_note"])
    triples = list(
        Triple.objects.select_for_update()
        .filter(customer=customer)
        .exclude(state__in=CLOSED)
        .order_by("pk")
    )
    for triple in triples:
        transition(triple, TripleState.REVOKED)
        triple.save(update_fields=["previous_state", "state", "updated_at"])
        record_event(
            actor=actor,
            verb="triple_revoked",
            obj=triple,
            detail={"customer": customer.slug, "previous_state": triple.previous_state},
        )
    ids = [t.pk for t in triples]
    record_event(
        actor=actor,
        verb="customer_permission_revoked",
        obj=customer,
        detail={"permission_id": current.pk, "note": note, "triples_revoked": ids},
    )
    return ids
