"""Reads of version tags and their history (every role that sees versions sees tags)."""

from collections import defaultdict

from django.http import Http404

from goldset.models import GoldVersion, VersionTag, VersionTagMove

HISTORY_LIMIT = 100


def list_tags(*, project):
    """The project's tags by name, each with its version and the admin who last moved it."""
    return VersionTag.objects.filter(project=project).select_related("version", "moved_by")


def tags_by_version(*, project, tags=None) -> dict[int, list[VersionTag]]:
    """``{version id: [its tags by name]}`` for the project (tags are few: one query, none
    when the caller passes the project's ``tags``)."""
    found = defaultdict(list)
    for tag in tags if tags is not None else VersionTag.objects.filter(project=project):
        found[tag.version_id].append(tag)
    return {pk: sorted(named, key=lambda t: t.name) for pk, named in found.items()}


def version_choices(*, project) -> tuple[list[tuple[int, int, str]], list[tuple[str, int]]]:
    """What a form offers to name a version: the project's sealed versions as (number, triples,
    note), newest first, and its tags as (name, number), by name. One query."""
    versions: dict[int, tuple[int, int, str]] = {}
    tags = []
    rows = (
        GoldVersion.objects.filter(project=project, sealed=True)
        .order_by("-number")
        .values_list("number", "row_count", "note", "tags__name")
    )
    for number, row_count, note, tag in rows:
        versions.setdefault(number, (number, row_count, note))
        if tag:
            tags.append((tag, number))
    return list(versions.values()), sorted(tags)


def get_tag(*, project, name: str) -> VersionTag:
    """The project's tag ``name``; Http404 for an unknown name (another project's tags are
    unknown here)."""
    tag = list_tags(project=project).filter(name=str(name)).first()
    if tag is None:
        raise Http404(f"no tag {name!r}")
    return tag


def list_tag_history(*, project, name: str | None = None, limit: int = HISTORY_LIMIT):
    """The latest changes of the project's tags (of the tag ``name`` only when given), newest
    first, at most ``limit``."""
    moves = VersionTagMove.objects.filter(project=project)
    if name is not None:
        moves = moves.filter(name=name)
    return list(moves.select_related("from_version", "to_version", "moved_by")[:limit])
