"""The version a command's ``--version`` (or ``--gold-version``) names: a number (``7``,
``v7``), a tag of the project (``release-2026q4``) or ``latest``, read by the one resolver
(``goldset.services.version_tags.resolve_version``)."""

from django.core.management.base import CommandError

from goldset.models import GoldVersion
from goldset.services.version_tags import UnknownVersion, resolve_version

VERSION_HELP = "a gold version: its number (7 or v7), a tag of the project, or latest"


def version_from(ref: str, *, project, returncode: int = 1) -> GoldVersion:
    """The sealed version of ``project`` that ``ref`` names; CommandError saying what was not
    found otherwise."""
    try:
        return resolve_version(project=project, ref=ref)
    except UnknownVersion as exc:
        raise CommandError(
            f"no frozen gold version {exc.label} in {project.slug}", returncode=returncode
        ) from None
