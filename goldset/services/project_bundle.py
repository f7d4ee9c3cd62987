"""A project's whole state as a portable bundle, and back (DESIGN.md §15, "Copy and move").

A bundle is a ``.tar.gz`` written as a stream (one table at a time, spooled to a temporary
file to learn its size and checksum, never the whole project in memory):

- ``project.json``: name, slug, description, settings, archived and created times;
- ``users.jsonl``: every person the project's rows name (username, e-mail, names), by the id
  they have in the bundle;
- ``memberships.jsonl``: the project's members and their roles;
- ``tables/<app>.<Model>.jsonl``: one JSON object per row (field ``attname`` → value; foreign
  keys keep the source installation's ids, binary fields are base64), rows in id order;
- ``manifest.json`` (last): format and version, the source project, and for every other member
  its sha256, size and row count.

:func:`import_bundle` unpacks into a temporary directory, refuses a bundle whose members do
not match the manifest (missing, extra, or a sha256 that differs: :class:`BundleRefused` names
the member) before it writes anything, refuses a slug in use, then recreates every row in a
new project in one transaction: new primary keys, every foreign key remapped, timestamps kept.
Frozen gold versions are inserted unsealed, filled with their rows and files, and sealed last,
so their rows and files verify exactly as in the source (:func:`goldset.services.exports.
verify_file`, :func:`~goldset.services.exports.verify_rows`).

People are matched by username. Someone the target installation does not know is created
*inactive and without a usable password* under the same username (their labels, reviews and
versions stay attributed to them; an administrator activates them, or they sign in through
OIDC and are linked by username, to let them work). Nobody's installation-level groups or
staff flags travel: roles come from the bundle's memberships, in the new project only.

Left out on purpose (documented in the manifest under ``left_out``): queues and jobs that are
operational state of the source installation (import and scoring jobs with their chunks, the
agreement recomputation queue, the dashboard counters the database keeps itself), webhook
endpoints and deliveries (their secrets do not leave an installation), API tokens, inbox
notifications, and the audit log (the import records its own event). Answer-record public ids
are kept unless the target already uses one (then a new id is drawn and the calibration
retakes that name it follow).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import hashlib
import io
import json
import re
import shutil
import tarfile
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import models, transaction
from django.utils import timezone
from django.utils.duration import duration_iso_string

from goldset.exceptions import GoldsetError
from goldset.models import (
    AnswerRecord,
    CalibrationRetake,
    GoldVersion,
    Project,
    ProjectMembership,
)
from goldset.models.answers import new_public_id
from goldset.services.projects import check_slug
from goldset.services.triples import resume_triple_numbers
from workbench.roles import Role
from workbench.services.audit import record_event

FORMAT = "goldset-project-bundle"
FORMAT_VERSION = 1
BATCH = 1000
SPOOL_LIMIT = 8 * 1024 * 1024  # a table larger than this spools to disk while it is written

# Models that never travel (see the module docstring for why).
LEFT_OUT = frozenset(
    {
        "goldset.Project",
        "goldset.ProjectMembership",  # written as memberships.jsonl (by username)
        "goldset.AgreementDirtyScope",
        "goldset.DashboardCounter",
        "goldset.TimeOnItemFigure",
        "goldset.ImportJob",
        "goldset.ImportChunk",
        "goldset.ScoringJob",
        "goldset.ScoringRunChunk",
        "goldset.ScoringChunk",
        "goldset.ScoreAggregate",
        "goldset.ScoreQueryResult",
        "goldset.WebhookEndpoint",
        "goldset.WebhookDelivery",
        "goldset.Notification",
        "goldset.NotificationPreference",
        "goldset.OutboxMessage",
        "goldset.ReconcilerRun",
        "goldset.Pseudonym",
        "workbench.AuditEvent",
        "workbench.ApiToken",
        "workbench.LoginThrottle",
        "workbench.OidcIdentity",
        "workbench.IdempotencyKey",
    }
)

# JSON fields that hold ids of other rows: (model label, field) → model label of those ids.
JSON_ID_LISTS = {
    ("goldset.SpotCheckDraw", "eligible_revision_ids"): "goldset.TripleRevision",
    ("goldset.SpotCheckDraw", "selected_revision_ids"): "goldset.TripleRevision",
    ("goldset.WorkingSlice", "triple_ids"): "goldset.Triple",
}

_MEMBER_NAME = re.compile(
    r"^(manifest\.json|project\.json|users\.jsonl|memberships\.jsonl|"
    r"tables/[a-z]+\.[A-Za-z]+\.jsonl)$"
)


class BundleRefused(GoldsetError):
    """A bundle that cannot be imported (the message names the member or the rule)."""


# ---------------------------------------------------------------------------------------------
# The model graph: which tables belong to a project, how to find a project's rows, in which
# order to insert them, and which foreign keys must wait until their target exists.


@dataclass(frozen=True)
class TablePlan:
    model: type[models.Model]
    scope: str  # lookup from the model to its project: "project", "record__project", ...
    fks: tuple[models.ForeignKey, ...]  # foreign keys to other bundled tables, set at insert
    deferred: tuple[models.ForeignKey, ...]  # set by an update once every row exists
    users: tuple[models.ForeignKey, ...]  # foreign keys to people

    @property
    def label(self) -> str:
        return self.model._meta.label


def _user_model():
    return get_user_model()


def _project_scope(model, scopes) -> str | None:
    fields = [f for f in model._meta.concrete_fields if f.is_relation and f.many_to_one]
    fields += [f for f in model._meta.concrete_fields if f.is_relation and f.one_to_one]
    for f in sorted(fields, key=lambda f: f.null):  # a required link first
        target = f.related_model
        if target is Project:
            return f.name
        if target._meta.label in scopes:
            return f"{f.name}__{scopes[target._meta.label]}"
    return None


def table_plans() -> list[TablePlan]:
    """The bundled tables in an order that inserts every row after the rows it points to."""
    candidates = [
        m
        for app in ("goldset", "workbench")
        for m in apps.get_app_config(app).get_models()
        if m._meta.label not in LEFT_OUT
    ]
    scopes: dict[str, str] = {}
    changed = True
    while changed:
        changed = False
        for m in candidates:
            if m._meta.label in scopes:
                continue
            scope = _project_scope(m, scopes)
            if scope is not None:
                scopes[m._meta.label] = scope
                changed = True
    bundled = [m for m in candidates if m._meta.label in scopes]
    labels = {m._meta.label for m in bundled}
    user = _user_model()

    def links(m):
        return [
            f
            for f in m._meta.concrete_fields
            if f.is_relation and f.related_model is not Project and f.related_model is not user
        ]

    for m in bundled:
        for f in links(m):
            if f.related_model._meta.label not in labels:
                raise RuntimeError(
                    f"{m._meta.label}.{f.name} points to {f.related_model._meta.label}, "
                    "which bundles leave out: add it to the bundle or to LEFT_OUT"
                )
    # Topological order; a nullable link that closes a cycle (or points to its own table) is
    # deferred.
    deferred: dict[str, set[str]] = {m._meta.label: set() for m in bundled}
    for m in bundled:
        for f in links(m):
            if f.related_model is m:
                deferred[m._meta.label].add(f.name)
    # Ids kept in JSON are remapped too: their table goes first.
    extra: dict[str, set[str]] = {}
    for (label, _name), target in JSON_ID_LISTS.items():
        extra.setdefault(label, set()).add(target)
    order: list[type[models.Model]] = []
    remaining = list(bundled)
    while remaining:
        placed = {o._meta.label for o in order}
        ready = [
            m
            for m in remaining
            if all(
                f.related_model._meta.label in placed
                for f in links(m)
                if f.name not in deferred[m._meta.label]
            )
            and extra.get(m._meta.label, set()) <= placed
        ]
        if not ready:
            # Break a cycle: defer the first nullable link to a table not placed yet.
            for m in remaining:
                pending = [
                    f
                    for f in links(m)
                    if f.name not in deferred[m._meta.label]
                    and f.related_model._meta.label not in placed
                    and f.null
                ]
                if pending:
                    deferred[m._meta.label].add(pending[0].name)
                    break
            else:
                raise RuntimeError("the bundled tables form a cycle of required links")
            continue
        ready.sort(key=lambda m: m._meta.label)
        order.append(ready[0])
        remaining.remove(ready[0])
    plans = []
    for m in order:
        rel = links(m)
        plans.append(
            TablePlan(
                model=m,
                scope=scopes[m._meta.label],
                fks=tuple(f for f in rel if f.name not in deferred[m._meta.label]),
                deferred=tuple(f for f in rel if f.name in deferred[m._meta.label]),
                users=tuple(
                    f for f in m._meta.concrete_fields if f.is_relation and f.related_model is user
                ),
            )
        )
    return plans


def _project_field(model):
    for f in model._meta.concrete_fields:
        if f.is_relation and f.related_model is Project:
            return f
    return None


# ---------------------------------------------------------------------------------------------
# Values


def _encode(f, value):
    if value is None:
        return None
    if isinstance(f, models.BinaryField):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(f, models.JSONField):
        return value
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return duration_iso_string(value)
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    return value


def _decode(f, value):
    if value is None:
        return None
    if isinstance(f, models.BinaryField):
        return base64.b64decode(value.encode("ascii"))
    if isinstance(f, models.JSONField):
        return value
    return f.to_python(value)


# ---------------------------------------------------------------------------------------------
# Export


@dataclass
class _Member:
    name: str
    sha256: str
    size: int
    rows: int


class _SpoolWriter:
    """One bundle member written line by line to a spool, hashed on the way."""

    def __init__(self, name: str):
        self.name = name
        self.spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_LIMIT)
        self.digest = hashlib.sha256()
        self.size = 0
        self.rows = 0

    def write_bytes(self, data: bytes) -> None:
        self.spool.write(data)
        self.digest.update(data)
        self.size += len(data)

    def write_row(self, row) -> None:
        self.write_bytes(
            json.dumps(row, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()
            + b"\n"
        )
        self.rows += 1

    def add_to(self, tar: tarfile.TarFile, mtime: float) -> _Member:
        info = tarfile.TarInfo(self.name)
        info.size = self.size
        info.mtime = int(mtime)
        info.mode = 0o644
        self.spool.seek(0)
        tar.addfile(info, self.spool)
        self.spool.close()
        return _Member(self.name, self.digest.hexdigest(), self.size, self.rows)


def _rows(plan: TablePlan, project) -> Iterator[dict]:
    fields = plan.model._meta.concrete_fields
    pk = plan.model._meta.pk
    qs = plan.model.objects.filter(**{plan.scope: project}).order_by(pk.attname)
    names = [f.attname for f in fields]
    for values in qs.values_list(*names).iterator(chunk_size=BATCH):
        yield {f.attname: _encode(f, v) for f, v in zip(fields, values, strict=True)}


def export_bundle(*, project: Project, out, by=None) -> dict:
    """Write ``project``'s bundle to the binary file object ``out`` (a stream is enough: the
    archive is written front to back). Returns the manifest."""
    plans = table_plans()
    mtime = timezone.now().timestamp()
    members: list[_Member] = []
    user_ids: set[int] = set()
    counts: dict[str, int] = {}
    with tarfile.open(fileobj=out, mode="w|gz", format=tarfile.PAX_FORMAT) as tar:
        head = _SpoolWriter("project.json")
        head.write_bytes(
            json.dumps(
                {
                    "name": project.name,
                    "slug": project.slug,
                    "description": project.description,
                    "settings": project.settings,
                    "archived_at": _encode(None, project.archived_at),
                    "created_at": _encode(None, project.created_at),
                },
                ensure_ascii=False,
                sort_keys=True,
                indent=1,
            ).encode()
        )
        members.append(head.add_to(tar, mtime))
        memberships = _SpoolWriter("memberships.jsonl")
        for user_id, role, created in (
            ProjectMembership.objects.filter(project=project)
            .order_by("user_id")
            .values_list("user_id", "role", "created_at")
        ):
            user_ids.add(user_id)
            memberships.write_row(
                {"user": user_id, "role": role, "created_at": _encode(None, created)}
            )
        members.append(memberships.add_to(tar, mtime))
        for plan in plans:
            writer = _SpoolWriter(f"tables/{plan.label}.jsonl")
            user_attnames = [f.attname for f in plan.users]
            for row in _rows(plan, project):
                for attname in user_attnames:
                    if row[attname] is not None:
                        user_ids.add(row[attname])
                writer.write_row(row)
            counts[plan.label] = writer.rows
            members.append(writer.add_to(tar, mtime))
        users = _SpoolWriter("users.jsonl")
        for row in (
            _user_model()
            .objects.filter(pk__in=user_ids)
            .order_by("pk")
            .values("pk", "username", "email", "first_name", "last_name")
        ):
            users.write_row({"id": row.pop("pk"), **row})
        members.append(users.add_to(tar, mtime))
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "exported_at": _encode(None, timezone.now()),
            "project": {"slug": project.slug, "name": project.name},
            "counts": counts,
            "left_out": sorted(LEFT_OUT),
            "members": {
                m.name: {"sha256": m.sha256, "size": m.size, "rows": m.rows} for m in members
            },
        }
        data = json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=1).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size, info.mtime, info.mode = len(data), int(mtime), 0o644
        tar.addfile(info, io.BytesIO(data))
    record_event(
        actor=by,
        verb="project.export",
        object_type="project",
        object_id=project.slug,
        detail={"counts": counts},
        project=project,
    )
    return manifest


# ---------------------------------------------------------------------------------------------
# Import


@dataclass
class ImportResult:
    project: Project
    counts: dict[str, int] = field(default_factory=dict)
    users_created: list[str] = field(default_factory=list)


def _unpack(source, into: Path) -> dict:
    """Extract the bundle's regular files into ``into`` (names checked, nothing else written)
    and verify every member against the manifest. Returns the manifest."""
    try:
        tar = tarfile.open(fileobj=source, mode="r|gz") if hasattr(source, "read") else None
        if tar is None:
            tar = tarfile.open(source, mode="r|gz")
        with tar:
            for info in tar:
                if not info.isfile() or not _MEMBER_NAME.match(info.name):
                    raise BundleRefused(f"{info.name}: not a member a project bundle has")
                target = into / info.name
                if target.exists():
                    raise BundleRefused(f"{info.name}: appears twice in the bundle")
                target.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise BundleRefused(f"not a readable .tar.gz bundle: {exc}") from exc
    manifest_path = into / "manifest.json"
    if not manifest_path.exists():
        raise BundleRefused("manifest.json: missing")
    try:
        manifest = json.loads(manifest_path.read_bytes())
    except ValueError as exc:
        raise BundleRefused(f"manifest.json: not JSON ({exc})") from exc
    if manifest.get("format") != FORMAT:
        raise BundleRefused("manifest.json: not a project bundle")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise BundleRefused(
            f"manifest.json: bundle format {manifest.get('format_version')!r}, this "
            f"installation reads {FORMAT_VERSION}"
        )
    listed = manifest.get("members") or {}
    present = {str(p.relative_to(into)) for p in into.rglob("*") if p.is_file()} - {"manifest.json"}
    for name in sorted(present - set(listed)):
        raise BundleRefused(f"{name}: not listed in the manifest")
    for name in sorted(listed):
        if name not in present:
            raise BundleRefused(f"{name}: listed in the manifest but missing")
        digest = hashlib.sha256()
        with open(into / name, "rb") as fh:
            for piece in iter(lambda: fh.read(1 << 20), b""):
                digest.update(piece)
        if digest.hexdigest() != listed[name].get("sha256"):
            raise BundleRefused(
                f"{name}: checksum mismatch (sha256 {digest.hexdigest()}, manifest says "
                f"{listed[name].get('sha256')}); the bundle was changed after export"
            )
    return manifest


def _read_rows(path: Path) -> Iterator[dict]:
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


@contextmanager
def _keeping_timestamps(model_list: Iterable[type[models.Model]]):
    """``auto_now``/``auto_now_add`` would stamp the import time: the bundle's times are kept."""
    flipped = []
    for m in model_list:
        for f in m._meta.concrete_fields:
            if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
                flipped.append((f, f.auto_now, f.auto_now_add))
                f.auto_now = f.auto_now_add = False
    try:
        yield
    finally:
        for f, now, now_add in flipped:
            f.auto_now, f.auto_now_add = now, now_add


def _map_users(directory: Path, created: list[str]) -> dict[int, int]:
    User = _user_model()
    mapping: dict[int, int] = {}
    for row in _read_rows(directory / "users.jsonl"):
        user = User.objects.filter(username=row["username"]).first()
        if user is None:
            user = User(
                username=row["username"],
                email=row.get("email", ""),
                first_name=row.get("first_name", ""),
                last_name=row.get("last_name", ""),
                is_active=False,
            )
            user.set_unusable_password()
            user.save()
            created.append(user.username)
        mapping[int(row["id"])] = user.pk
    return mapping


def import_bundle(*, source, slug: str, name: str = "", by=None) -> ImportResult:
    """Import the bundle ``source`` (a path or a binary file object) as a new project
    ``slug``. Everything or nothing: a refused bundle or a failure leaves no row behind."""
    check_slug(slug)
    if Project.objects.filter(slug=slug).exists():
        raise BundleRefused(f"slug: a project {slug!r} exists already")
    with tempfile.TemporaryDirectory(prefix="goldset-bundle-") as tmp:
        directory = Path(tmp)
        manifest = _unpack(source, directory)
        return _import_verified(directory, manifest, slug=slug, name=name, by=by)


@transaction.atomic
def _import_verified(directory: Path, manifest: dict, *, slug, name, by) -> ImportResult:
    head = json.loads((directory / "project.json").read_bytes())
    if Project.objects.select_for_update().filter(slug=slug).exists():
        raise BundleRefused(f"slug: a project {slug!r} exists already")
    project = Project.objects.create(
        name=name.strip() or head.get("name") or slug,
        slug=slug,
        description=head.get("description", ""),
        settings=head.get("settings") or {},
    )
    if head.get("archived_at"):
        Project.objects.filter(pk=project.pk).update(
            archived_at=models.DateTimeField().to_python(head["archived_at"])
        )
    result = ImportResult(project=project)
    users = _map_users(directory, result.users_created)
    members = {}
    for row in _read_rows(directory / "memberships.jsonl"):
        members[users[int(row["user"])]] = Role(row["role"]).value
    if by is not None and members.get(by.pk) != Role.ADMIN.value:
        members[by.pk] = Role.ADMIN.value  # whoever imports administers the new project
    ProjectMembership.objects.bulk_create(
        ProjectMembership(project=project, user_id=user_id, role=role)
        for user_id, role in sorted(members.items())
    )

    plans = table_plans()
    known = {p.label for p in plans}
    for label in manifest.get("counts", {}):
        if label not in known:
            raise BundleRefused(f"tables/{label}.jsonl: a table this installation does not have")
    pks: dict[str, dict] = {p.label: {} for p in plans}
    public_ids: dict[str, str] = {}
    later: list[tuple[TablePlan, object, dict]] = []  # deferred links: (plan, new pk, values)
    sealed: list[int] = []
    with _keeping_timestamps(p.model for p in plans):
        for plan in plans:
            count = 0
            batch: list[tuple[object, models.Model]] = []
            for row in _read_rows(directory / f"tables/{plan.label}.jsonl"):
                batch.append(_build(plan, row, project, users, pks, public_ids, later))
                if len(batch) >= BATCH:
                    count += _insert(plan, batch, pks, later, sealed)
                    batch = []
            count += _insert(plan, batch, pks, later, sealed)
            expected = manifest.get("counts", {}).get(plan.label, 0)
            if count != expected:
                raise BundleRefused(
                    f"tables/{plan.label}.jsonl: {count} rows, the manifest says {expected}"
                )
            result.counts[plan.label] = count
    for plan, new_pk, values in later:
        mapped = {}
        for f in plan.deferred:
            old = values.get(f.attname)
            mapped[f.attname] = None if old is None else pks[f.related_model._meta.label][old]
        plan.model.objects.filter(pk=new_pk).update(**mapped)
    if public_ids:
        _follow_public_ids(project, public_ids)
    if sealed:
        GoldVersion.objects.filter(pk__in=sealed).update(sealed=True)
    resume_triple_numbers(project)
    record_event(
        actor=by,
        verb="project.import",
        object_type="project",
        object_id=project.slug,
        detail={
            "from": manifest.get("project"),
            "exported_at": manifest.get("exported_at"),
            "counts": result.counts,
            "users_created": result.users_created,
        },
        project=project,
    )
    return result


def _build(plan, row, project, users, pks, public_ids, later):
    model = plan.model
    pk_field = model._meta.pk
    old_pk = row.get(pk_field.attname)
    values = {}
    fk_names = {f.attname: f for f in plan.fks}
    user_names = {f.attname for f in plan.users}
    deferred_names = {f.attname for f in plan.deferred}
    for f in model._meta.concrete_fields:
        raw = row.get(f.attname)
        if f.is_relation and f.related_model is Project:
            values[f.attname] = project.pk
        elif f.attname in user_names:
            values[f.attname] = None if raw is None else users[int(raw)]
        elif f.attname in deferred_names:
            values[f.attname] = None
        elif f.attname in fk_names:
            target = fk_names[f.attname].related_model._meta.label
            values[f.attname] = None if raw is None else pks[target][raw]
        elif f.primary_key:
            continue
        else:
            values[f.attname] = _decode(f, raw)
    for (label, name), target in JSON_ID_LISTS.items():
        if label == plan.label and isinstance(values.get(name), list):
            values[name] = [pks[target].get(i, i) for i in values[name]]
    if model is AnswerRecord:
        old = values["public_id"]
        if AnswerRecord.objects.filter(public_id=old).exists():
            values["public_id"] = public_ids[old] = new_public_id()
    if model is GoldVersion and values.get("sealed"):
        values["sealed"] = False  # sealed once its rows and files are in
        values["_sealed"] = True
    if plan.deferred and any(row.get(n) is not None for n in deferred_names):
        values["_later"] = {n: row.get(n) for n in deferred_names}
    return old_pk, values


def _insert(plan, batch, pks, later, sealed) -> int:
    if not batch:
        return 0
    model = plan.model
    objs = []
    for _old, values in batch:
        values = dict(values)
        values.pop("_sealed", None)
        values.pop("_later", None)
        objs.append(model(**values))
    model.objects.bulk_create(objs, batch_size=BATCH)
    mapping = pks[plan.label]
    for (old, values), obj in zip(batch, objs, strict=True):
        mapping[old] = obj.pk
        if values.get("_sealed"):
            sealed.append(obj.pk)
        if "_later" in values:
            later.append((plan, obj.pk, values["_later"]))
    return len(objs)


def _follow_public_ids(project, public_ids: dict[str, str]) -> None:
    for retake in CalibrationRetake.objects.filter(domain__project=project):
        items = [public_ids.get(i, i) for i in retake.drawn_items or []]
        if items != retake.drawn_items:
            CalibrationRetake.objects.filter(pk=retake.pk).update(drawn_items=items)
