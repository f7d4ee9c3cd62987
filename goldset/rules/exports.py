"""Who may download which variant of a frozen gold version's files (seed 005, DESIGN.md §9)."""

from goldset.exceptions import GoldsetError
from goldset.models import ExportFormat, GoldVersion, GoldVersionFile

SNIPPET_PERMISSION = "goldset.view_snippets"
# Formats holding source snippets: they are stored twice, full and redacted.
SNIPPET_FORMATS = (ExportFormat.UNRAG_JSON, ExportFormat.PROBE_PACKETS)


def pick_file(version: GoldVersion, *, fmt: str, user) -> GoldVersionFile:
    """The variant a user may download: the full file with the view-snippets permission (or
    for formats without snippets), otherwise the redacted one. ``user=None`` (commands) gets
    the full file."""
    files = {(f.format, f.redacted): f for f in version.files.all()}
    full = user is None or user.has_perm(SNIPPET_PERMISSION)
    if (fmt, not full) in files:
        return files[(fmt, not full)]
    if (fmt, False) in files and fmt not in SNIPPET_FORMATS:
        return files[(fmt, False)]
    raise GoldsetError(f"gold version v{version.number} has no {fmt} export")
