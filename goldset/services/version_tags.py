"""Named, pinned gold versions: tags, and the one resolver of every version reference.

* :func:`resolve_version` is how pages, the API, the management commands and the import of a
  run turn what a person typed (``7``, ``v7``, ``release-2026q4``, ``latest``) into a sealed gold
  version of the project; anything else is :class:`UnknownVersion`, an ``Http404`` (a 404 page
  or problem+json; commands and services turn it into their own message).
* :func:`set_version_tag` creates a tag or moves it to another sealed version of its project;
  :func:`delete_version_tag` removes it. Project admins only (``workbench.roles.roles_in``; a
  management command acts as ``actor=None``). Each change is one :class:`VersionTagMove` row, an
  audit event and a ``tag.moved`` webhook event, all in the caller's transaction.

``latest`` is the project's newest sealed version, whatever its filters: a pipeline that must
not follow a filtered freeze names a tag instead.
"""

import re
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.http import Http404
from django.utils import timezone

from goldset.exceptions import CrossProjectReference, GoldsetError
from goldset.models import GoldVersion, VersionTag, VersionTagMove, WebhookEvent
from goldset.models.version_tags import NOTE_MAX, TAG_NAME_MAX
from goldset.selectors.exports import get_version
from goldset.services import webhooks
from workbench.roles import Role, roles_in
from workbench.services.audit import record_event

LATEST = "latest"
# Names a tag may not take: what the resolver reads otherwise, and the API's and the pages'
# ``versions/diff/``, ``versions/freeze/``, ``versions/tags/`` and ``versions/jobs/``, which
# ``versions/<ref>/`` would never reach.
RESERVED_NAMES = frozenset({LATEST, "diff", "freeze", "tags", "jobs"})
TAG_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
NUMBER_REF = re.compile(r"^v?([0-9]+)$")
MAX_VERSION_NUMBER = 2**31 - 1  # GoldVersion.number is a PositiveIntegerField
NAME_RULE = (
    f"lowercase letters, digits, '-', '.' and '_', starting with a letter or digit, at most "
    f"{TAG_NAME_MAX} characters, not a number (7, v7) nor {', '.join(sorted(RESERVED_NAMES))}"
)


class UnknownVersion(Http404):
    """No sealed version of the project answers to this reference. ``label`` names what was
    asked for in a sentence: ``v7``, ``tagged 'ci'``, ``yet`` (latest, before a first freeze)."""

    def __init__(self, message: str, *, label: str):
        super().__init__(message)
        self.label = label


class TagRefused(GoldsetError):
    """A tag change refused: a bad name or note, a version that is not sealed, a non-admin.
    ``field`` names the input at fault (pages put it on the form field, the API in ``errors``)."""

    def __init__(self, message: str, *, field: str = ""):
        super().__init__(message)
        self.field = field


class VersionRefused(GoldsetError):
    """A version named in a request's body or options that the project does not have (an import
    of a run, a job): a rejected field (422), unlike a URL naming it (404)."""

    field = "version"


# ---------------------------------------------------------------- resolving


def version_number(ref) -> int | None:
    """The version number ``ref`` spells (``7``, ``"7"``, ``"v7"``, ``"V7"``), else None."""
    if isinstance(ref, bool):
        return None
    if isinstance(ref, int):
        return ref
    match = NUMBER_REF.fullmatch(str(ref).lower())
    if match is None:
        return None
    digits = match.group(1)
    # past any version number (and never an int() of thousands of digits from a URL)
    return int(digits) if len(digits) <= 18 else MAX_VERSION_NUMBER + 1


def resolve_version(*, project, ref: str | int) -> GoldVersion:
    """The sealed gold version of ``project`` that ``ref`` names: a number (``7``, ``"v7"``), a
    tag of the project, or ``"latest"`` (its newest sealed version). Raises
    :class:`UnknownVersion` (an ``Http404``) for anything else: an unknown number or tag, a
    tag of another project, nothing frozen yet, or text that is none of these. Reads only."""
    number = version_number(ref)
    if number is not None:
        if not 1 <= number <= MAX_VERSION_NUMBER:
            shown = f"v{number}" if number < 1 else f"v{str(ref).lower().lstrip('v')[:24]}"
            raise UnknownVersion(f"gold version {shown} is not frozen", label=shown)
        try:
            return get_version(project=project, number=number)
        except Http404:
            raise UnknownVersion(
                f"gold version v{number} is not frozen", label=f"v{number}"
            ) from None
    text = str(ref if ref is not None else "").lower()
    if not text:
        raise UnknownVersion("no version given: a number (7, v7), a tag or 'latest'", label="''")
    if text == LATEST:
        latest = _versions(project).order_by("-number").first()
        if latest is None:
            raise UnknownVersion("no gold version is frozen yet", label="yet")
        return latest
    if not TAG_NAME.fullmatch(text) or len(text) > TAG_NAME_MAX:
        shown = str(ref)[:80]
        raise UnknownVersion(
            f"{shown!r} is not a version number (7, v7), a tag or 'latest'", label=repr(shown)
        )
    version = _versions(project).filter(tags__project=project, tags__name=text).first()
    if version is None:
        raise UnknownVersion(f"no gold version is tagged {text!r}", label=f"tagged {text!r}")
    return version


def resolve_version_option(*, project, ref: str | int) -> GoldVersion:
    """:func:`resolve_version` for a version named in a body or options: raises
    :class:`VersionRefused` (a 422 naming ``version``) instead of a 404."""
    try:
        return resolve_version(project=project, ref=ref)
    except UnknownVersion as exc:
        raise VersionRefused(str(exc)) from None


def _versions(project):
    return (
        GoldVersion.objects.filter(project=project, sealed=True)
        .select_related("created_by", "parent")
        .prefetch_related("files")
    )


# ---------------------------------------------------------------- changing tags


@dataclass(frozen=True)
class TagChange:
    """What :func:`set_version_tag` did: ``created`` a new tag, or moved it from ``previous``;
    ``changed`` is False when the tag already pointed there (nothing recorded)."""

    tag: VersionTag
    created: bool
    changed: bool
    previous: GoldVersion | None
    move: VersionTagMove | None


def check_tag_name(name: str) -> str:
    """``name`` when a tag may take it; TagRefused (field ``name``) saying the rule otherwise."""
    text = str(name or "")
    if not text:
        raise TagRefused("a tag needs a name", field="name")
    if (
        len(text) > TAG_NAME_MAX
        or not TAG_NAME.fullmatch(text)
        or version_number(text) is not None
        or text in RESERVED_NAMES
    ):
        raise TagRefused(f"{text[:80]!r} cannot name a tag: use {NAME_RULE}", field="name")
    return text


def _check_note(note: str) -> str:
    text = str(note or "").strip()
    if len(text) > NOTE_MAX:
        raise TagRefused(f"the note is longer than {NOTE_MAX} characters", field="note")
    return text


def _check_admin(*, actor, project) -> None:
    if actor is None:  # a management command, run by whoever holds the shell
        return
    if Role.ADMIN not in roles_in(actor, project):
        raise TagRefused("only a project admin creates, moves or deletes a tag")


@transaction.atomic
def set_version_tag(
    *, project, actor, name: str, version: GoldVersion, note: str = ""
) -> TagChange:
    """Point the tag ``name`` of ``project`` at ``version`` (a sealed version of the same
    project), creating the tag when it does not exist. Project admins only. Raises TagRefused
    (naming the field) for a bad name or note, a version that is not sealed, or a non-admin,
    and CrossProjectReference for another project's version. Idempotent: a tag already there
    changes nothing and records nothing. The tag row is locked while it moves, so two moves of
    one tag queue; two creations of one name end as a creation and a move."""
    _check_admin(actor=actor, project=project)
    name = check_tag_name(name)
    note = _check_note(note)
    if version.project_id != project.pk:
        raise CrossProjectReference(
            f"gold version v{version.number} belongs to another project; a tag points at a "
            "version of its own project"
        )
    if not version.sealed:
        raise TagRefused(f"gold version v{version.number} is not frozen", field="version")
    tag = VersionTag.objects.select_for_update().filter(project=project, name=name).first()
    created = False
    now = timezone.now()
    by = actor if getattr(actor, "is_authenticated", False) else None
    if tag is None:
        try:
            with transaction.atomic():
                tag = VersionTag.objects.create(
                    project=project,
                    name=name,
                    version=version,
                    note=note,
                    moved_by=by,
                    moved_at=now,
                    created_at=now,
                )
            created = True
        except IntegrityError:  # created meanwhile by another admin: this is a move
            tag = VersionTag.objects.select_for_update().get(project=project, name=name)
    previous = None if created else tag.version
    if not created and tag.version_id == version.pk:
        return TagChange(tag=tag, created=False, changed=False, previous=previous, move=None)
    if not created:
        tag.version, tag.note, tag.moved_by, tag.moved_at = version, note, by, now
        tag.save(update_fields=["version", "note", "moved_by", "moved_at"])
    move = _record(project=project, actor=actor, name=name, before=previous, after=version,
                   note=note, now=now, obj=tag)  # fmt: skip
    return TagChange(tag=tag, created=created, changed=True, previous=previous, move=move)


@transaction.atomic
def delete_version_tag(*, project, actor, name: str, note: str = "") -> VersionTagMove:
    """Delete the tag ``name`` of ``project`` (its history stays). Project admins only;
    Http404 for an unknown tag, TagRefused for a bad note or a non-admin."""
    _check_admin(actor=actor, project=project)
    note = _check_note(note)
    tag = (
        VersionTag.objects.select_for_update(of=("self",))
        .select_related("version")
        .filter(project=project, name=str(name))
        .first()
    )
    if tag is None:
        raise Http404(f"no tag {name!r}")
    move = _record(project=project, actor=actor, name=tag.name, before=tag.version, after=None,
                   note=note, now=timezone.now(), obj=tag)  # fmt: skip
    tag.delete()
    return move


def _record(*, project, actor, name, before, after, note, now, obj) -> VersionTagMove:
    move = VersionTagMove.objects.create(
        project=project,
        name=name,
        from_version=before,
        to_version=after,
        note=note,
        moved_by=actor if getattr(actor, "is_authenticated", False) else None,
        moved_at=now,
    )
    record_event(
        actor=actor,
        verb=f"version_tag_{move.action}",
        obj=obj,
        project=project,
        detail={
            "tag": name,
            "from": before.number if before else None,
            "to": after.number if after else None,
            "note": note,
        },
    )
    webhooks.emit(WebhookEvent.TAG_MOVED, webhooks.tag_data(move), project=project, now=now)
    return move
