"""A project's settings (DESIGN.md §15): the protocol numbers it overrides.

The environment gives each tunable's installation default (:mod:`goldset.conf`); a project's
admin overrides the names in ``PROJECT_TUNABLES`` for that project alone. A value is stored as
the environment's text (``Project.settings[name]``), so the same parser reads both; it is
refused unless it parses and keeps the tunable's rule (``Tunable.check``). Every change writes a
:class:`~goldset.models.ProjectSettingChange` (old and new text, who, when) and an audit event.
"""

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction

from goldset.conf import FALSE_WORDS, PROJECT_TUNABLES, TRUE_WORDS, TUNABLES, tunable
from goldset.exceptions import GoldsetError
from goldset.models import CalibrationStatus, PcsCalibration, Project, ProjectSettingChange
from workbench.services.audit import record_event

# Longest text a project may store for one setting (the source targets are the longest).
MAX_VALUE_LENGTH = 2000


class SettingRefused(GoldsetError):
    """A project setting the rules refuse: ``name`` is the setting, ``rule`` what it must be
    (``field`` is ``name``: the API names it in its problem's errors)."""

    def __init__(self, name: str, rule: str):
        self.name, self.rule = name, rule
        self.field = name
        super().__init__(f"{name}: must be {rule}")


@dataclass(frozen=True)
class SettingInForce:
    """One per-project tunable as the settings page shows it."""

    name: str
    doc: str
    default: Any  # the installation's value
    own: str | None  # the project's text, None when it keeps the default
    value: Any  # the value in force

    @property
    def overridden(self) -> bool:
        return self.own is not None


def project_tunable_names() -> list[str]:
    """The per-project tunables in the order of the tunables table (grouped by area)."""
    return [name for name in TUNABLES if name in PROJECT_TUNABLES]


def list_settings_in_force(*, project: Project) -> list[SettingInForce]:
    """Every per-project tunable: its doc, the installation default, the project's own text
    and the value in force."""
    own = project.settings or {}
    return [
        SettingInForce(
            name=name,
            doc=TUNABLES[name].doc,
            default=tunable(name),
            own=own.get(name),
            value=tunable(name, project=project),
        )
        for name in project_tunable_names()
    ]


def settings_in_force(*, project: Project | None, names) -> dict[str, dict]:
    """What an export records of the settings that shaped it (a gold version's manifest, a
    release report, the agreement downloads): for each of ``names`` (per-project tunables),
    ``{"value": the value in force, "source": "project" | "installation"}``, read like every
    page through :func:`goldset.conf.tunable` (never the environment again). Values are plain
    JSON (a decimal rate as a number). ``PCS_CALIBRATION`` also names the calibration in use
    (``"calibration"``: its label, or "PROBE defaults"): one query, only when it is named and
    set."""
    own = (project.settings or {}) if project is not None else {}
    record = {}
    for name in names:
        _check_name(name)
        value = tunable(name, project=project)
        record[name] = {
            "value": float(value) if isinstance(value, Decimal) else value,
            "source": "project" if own.get(name) is not None else "installation",
        }
    if "PCS_CALIBRATION" in record:
        chosen = (
            pcs_calibration_in_use(project=project)
            if project is not None and record["PCS_CALIBRATION"]["value"]
            else None
        )
        record["PCS_CALIBRATION"]["calibration"] = chosen.label if chosen else "PROBE defaults"
    return record


def settings_in_force_text(record: dict[str, dict]) -> str:
    """A :func:`settings_in_force` record in one line for people ("KAPPA_GATE 0.8 (project),
    …"), as a report's header prints it."""
    parts = []
    for name, entry in record.items():
        shown = entry.get("calibration", entry["value"])
        parts.append(f"{name} {shown} ({entry['source']})")
    return ", ".join(parts)


def parse_setting(name: str, raw: str, *, project: Project | None = None) -> Any:
    """``raw`` parsed with ``name``'s parser, checked against its rule; :class:`SettingRefused`
    (naming the setting and the rule) otherwise."""
    _check_name(name)
    if len(raw) > MAX_VALUE_LENGTH:
        raise SettingRefused(name, f"at most {MAX_VALUE_LENGTH} characters")
    t = TUNABLES[name]
    if isinstance(t.default, bool) and raw.lower() not in TRUE_WORDS | FALSE_WORDS:
        raise SettingRefused(name, "true or false")
    try:
        value = t.parse(raw)
    except (ValueError, ArithmeticError, TypeError):
        raise SettingRefused(name, _kind(t.default)) from None
    rule = t.check(value, project) if t.check is not None else None
    if rule is not None:
        raise SettingRefused(name, rule)
    return value


def _check_name(name: str) -> None:
    if name not in PROJECT_TUNABLES:
        known = "unknown" if name not in TUNABLES else "installation-wide"
        raise SettingRefused(name, f"a per-project setting (this one is {known})")


def _kind(default) -> str:
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "an integer"
    if isinstance(default, dict):
        return "a JSON object"
    return "a number"


@transaction.atomic
def update_project_settings(*, project: Project, changes: dict[str, str | None], by) -> Project:
    """Set (text) or reset (``None`` or empty text: back to the installation default) each
    named setting of ``project``. All or nothing: one refused value refuses the whole change
    (:class:`SettingRefused`, naming the setting and its rule). Writes one
    :class:`ProjectSettingChange` per setting whose text changed, and one audit event. The
    ``project`` passed in holds the new settings afterwards (so does the returned row)."""
    cleaned: dict[str, str | None] = {}
    for name, raw in changes.items():
        text = None if raw is None else str(raw).strip()
        if not text:
            _check_name(name)
            cleaned[name] = None
            continue
        parse_setting(name, text, project=project)
        cleaned[name] = text
    given, project = project, Project.objects.select_for_update().get(pk=project.pk)
    current = dict(project.settings or {})
    changed = []
    for name, text in cleaned.items():
        old = current.get(name)
        if old == text:
            continue
        if text is None:
            current.pop(name, None)
        else:
            current[name] = text
        changed.append(
            ProjectSettingChange(
                project=project, name=name, old_value=old, new_value=text, changed_by=by
            )
        )
    if not changed:
        return project
    project.settings = current
    project.save(update_fields=["settings"])
    given.settings = dict(current)
    ProjectSettingChange.objects.bulk_create(changed)
    record_event(
        actor=by,
        verb="project.settings",
        object_type="project",
        object_id=project.slug,
        detail={c.name: {"old": c.old_value, "new": c.new_value} for c in changed},
        project=project,
    )
    return project


def list_setting_changes(*, project: Project):
    """The project's settings history, newest first (a queryset for the paginator)."""
    return (
        ProjectSettingChange.objects.filter(project=project)
        .select_related("changed_by")
        .order_by("-changed_at", "-id")
    )


def pcs_calibration_in_use(*, project: Project) -> PcsCalibration | None:
    """The PCS calibration the project scores with unless another is chosen
    (``PCS_CALIBRATION``), None for the PROBE defaults or when it is not a succeeded
    calibration of this project."""
    pk = tunable("PCS_CALIBRATION", project=project)
    if not pk:
        return None
    return PcsCalibration.objects.filter(
        project=project, pk=pk, status=CalibrationStatus.SUCCEEDED
    ).first()
