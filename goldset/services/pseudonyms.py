"""Random, per-scope pseudonyms for the people named in exports (see ``models.pseudonyms``)."""

import secrets
from collections.abc import Iterable

from django.db import transaction

from goldset.models import DEFAULT_PROJECT_SLUG, Pseudonym

PREFIX = "person-"


def gold_version_scope(version) -> str:
    """The scope of a gold version's pseudonyms: one per version *of its project* (version
    numbers are per project, so v1 of two projects never share a person's pseudonym). The
    default project keeps the scope its versions had before projects, so their files and
    downloads keep the pseudonyms they were frozen with."""
    project = version.project
    if project.slug == DEFAULT_PROJECT_SLUG:
        return f"gold-version:{version.number}"
    return f"project-{project.pk}:gold-version:{version.number}"


def export_scope() -> str:
    """A fresh scope for one export: its pseudonyms share nothing with any other export's."""
    return f"export:{secrets.token_hex(8)}"


@transaction.atomic
def ensure_pseudonyms(*, scope: str, user_ids: Iterable[int]) -> dict[int, str]:
    """``{user_id: label}`` for every user, creating random labels for those without one in
    ``scope``. Idempotent; concurrent callers converge on the same labels (unique constraints,
    conflicting inserts ignored and re-read)."""
    wanted = {int(u) for u in user_ids if u is not None}
    found: dict[int, str] = {}
    for _ in range(5):
        found = dict(
            Pseudonym.objects.filter(scope=scope, user_id__in=wanted).values_list(
                "user_id", "label"
            )
        )
        missing = wanted - set(found)
        if not missing:
            return found
        Pseudonym.objects.bulk_create(
            [
                Pseudonym(scope=scope, user_id=u, label=f"{PREFIX}{secrets.token_hex(5)}")
                for u in sorted(missing)
            ],
            ignore_conflicts=True,
        )
    raise RuntimeError(f"could not assign pseudonyms in {scope}")  # 5 label collisions in a row
