"""SCIM 2.0 provisioning (RFC 7643/7644) as Entra ID and Okta perform it: Users and Groups,
filtered by ``userName eq``/``externalId eq``/``displayName eq``, paged by ``startIndex`` and
``count``, changed by PUT and by PATCH operations with or without a ``path``.

A group named ``<project-slug>:<role>`` (role: annotator, lead/adjudication_lead, admin) gives
its members that role in that project; a provisioned person's memberships in every project some
group names are set from their groups after each change (effective on their next request, as
roles are read per request). A user made inactive or deleted loses access at once
(:func:`workbench.services.identity.deactivate_user`); a deleted user's row stays, inactive, so
their labels and audit history stay attributed.

Every change is atomic: a refused request (:class:`ScimError`, a 4xx in the SCIM error
schema) changes nothing. The HTTP side is :mod:`workbench.scim`."""

import datetime as dt
import hashlib
import re
import secrets
import uuid

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from goldset.models import Project, ProjectMembership
from goldset.services.projects import ProjectRefused, grant_role, remove_member
from workbench.models import ScimGroup, ScimToken, ScimUser
from workbench.roles import ROLE_NAMES, ROLE_RANK, Role, forget_roles
from workbench.services.audit import record_event
from workbench.services.identity import deactivate_user, reactivate_user

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
ENTERPRISE_SCHEMA = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"

TOKEN_PREFIX = "scim_"
MAX_PAGE = 200
LAST_USED_RESOLUTION = dt.timedelta(seconds=60)

# Core User attributes (RFC 7643 §4.1) a request may carry. Those we store are handled below;
# the others are accepted and ignored, so a directory's full payload is not refused. Anything
# else is an unknown attribute (400).
USER_STORED = {"userName", "externalId", "name", "displayName", "emails", "active"}
USER_IGNORED = {
    "schemas",
    "id",
    "meta",
    "groups",
    "nickName",
    "profileUrl",
    "title",
    "userType",
    "preferredLanguage",
    "locale",
    "timezone",
    "password",
    "phoneNumbers",
    "ims",
    "photos",
    "addresses",
    "entitlements",
    "roles",
    "x509Certificates",
    ENTERPRISE_SCHEMA,
}
GROUP_ATTRIBUTES = {"schemas", "id", "meta", "displayName", "externalId", "members"}
NAME_PARTS = {"givenName", "familyName", "formatted", "middleName", "honorificPrefix"}
_USERNAME = re.compile(r"^[\w.@+-]{1,150}$")
_MEMBER_FILTER = re.compile(r'^members\[value eq "([^"]+)"\]$', re.IGNORECASE)
_EMAIL_FILTER = re.compile(r'^emails\[type eq "([^"]+)"\]\.value$', re.IGNORECASE)
_FILTER = re.compile(r'^\s*(\w+)\s+eq\s+"((?:[^"\\]|\\.)*)"\s*$', re.IGNORECASE)


class ScimError(Exception):
    """A refused SCIM request: ``status`` (4xx), ``scim_type`` (RFC 7644 §3.12) and a detail
    naming the attribute, path or operation at fault."""

    def __init__(self, status: int, detail: str, scim_type: str = ""):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.scim_type = scim_type

    def body(self) -> dict:
        body = {"schemas": [ERROR_SCHEMA], "status": str(self.status), "detail": self.detail}
        if self.scim_type:
            body["scimType"] = self.scim_type
        return body


# ---------------------------------------------------------------- tokens


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


@transaction.atomic
def create_scim_token(*, by, name: str) -> tuple[ScimToken, str]:
    """A new directory token; returns it and the plaintext, shown once and never stored."""
    prefix = secrets.token_hex(4)
    raw = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    token = ScimToken.objects.create(
        name=name.strip()[:80] or "directory", prefix=prefix, digest=_digest(raw), created_by=by
    )
    record_event(actor=by, verb="scim_token_created", obj=token, detail={"prefix": prefix})
    return token, raw


@transaction.atomic
def revoke_scim_token(*, by, token_id: int) -> ScimToken:
    """Revoke a directory token (ScimToken.DoesNotExist for an unknown id). Idempotent."""
    token = ScimToken.objects.select_for_update().get(pk=token_id)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        record_event(
            actor=by, verb="scim_token_revoked", obj=token, detail={"prefix": token.prefix}
        )
    return token


def authenticate_scim_token(raw: str) -> ScimToken | None:
    """The live directory token ``raw`` names, or None."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token = ScimToken.objects.filter(digest=_digest(raw), revoked_at=None).first()
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ScimToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


# ---------------------------------------------------------------- representations


def _meta(kind: str, scim_id, created, modified, base: str) -> dict:
    return {
        "resourceType": kind,
        "created": created.isoformat(),
        "lastModified": modified.isoformat(),
        "location": f"{base}/{kind}s/{scim_id}",
    }


def user_resource(link: ScimUser, *, base: str) -> dict:
    """The SCIM User for a provisioned person (``link.user.scim_groups`` prefetched)."""
    user = link.user
    formatted = f"{user.first_name} {user.last_name}".strip()
    resource = {
        "schemas": [USER_SCHEMA],
        "id": str(link.scim_id),
        "userName": user.username,
        "name": {
            "givenName": user.first_name,
            "familyName": user.last_name,
            "formatted": formatted,
        },
        "displayName": formatted or user.username,
        "active": user.is_active,
        "emails": [{"value": user.email, "type": "work", "primary": True}] if user.email else [],
        "groups": [
            {"value": str(g.scim_id), "display": g.display_name} for g in user.scim_groups.all()
        ],
        "meta": _meta("User", link.scim_id, link.created_at, link.updated_at, base),
    }
    if link.external_id:
        resource["externalId"] = link.external_id
    return resource


def group_resource(group: ScimGroup, *, base: str, members: bool = True) -> dict:
    """The SCIM Group (``members`` with ``scim`` prefetched when asked for)."""
    resource = {
        "schemas": [GROUP_SCHEMA],
        "id": str(group.scim_id),
        "displayName": group.display_name,
        "meta": _meta("Group", group.scim_id, group.created_at, group.updated_at, base),
    }
    if group.external_id:
        resource["externalId"] = group.external_id
    if members:
        resource["members"] = [
            {"value": str(u.scim.scim_id), "display": u.username}
            for u in group.members.all()
            if hasattr(u, "scim")
        ]
    return resource


# ---------------------------------------------------------------- reading


def parse_filter(text: str, *, allowed: set[str]) -> tuple[str, str] | None:
    """``attribute eq "value"`` as (attribute, value); None for no filter; ScimError for any
    other filter (only equality on ``allowed`` attributes is supported)."""
    if not text:
        return None
    found = _FILTER.match(text)
    if not found:
        raise ScimError(
            400, f"unsupported filter {text[:100]!r}: use 'attribute eq \"value\"'", "invalidFilter"
        )
    attribute = next((a for a in allowed if a.lower() == found.group(1).lower()), None)
    if attribute is None:
        raise ScimError(400, f"filtering on {found.group(1)!r} is not supported", "invalidFilter")
    return attribute, found.group(2).replace('\\"', '"').replace("\\\\", "\\")


def paging(start_index: str | None, count: str | None) -> tuple[int, int]:
    """``startIndex`` (1-based) and ``count`` (capped at :data:`MAX_PAGE`) as ints."""
    try:
        start = max(1, int(start_index or 1))
        size = min(MAX_PAGE, max(0, int(count if count not in (None, "") else MAX_PAGE)))
    except ValueError as exc:
        raise ScimError(400, "startIndex and count must be integers", "invalidValue") from exc
    return start, size


def list_users(*, filter_text: str, start: int, count: int) -> tuple[int, list[ScimUser]]:
    """Provisioned (not deleted) users matching the filter, by creation; (total, page)."""
    rows = ScimUser.objects.filter(deleted_at=None)
    found = parse_filter(filter_text, allowed={"userName", "externalId", "id"})
    if found is not None:
        attribute, value = found
        if attribute == "userName":  # caseExact false (RFC 7643 §4.1.1)
            rows = rows.filter(user__username__iexact=value)
        elif attribute == "externalId":
            rows = rows.filter(external_id=value)
        else:
            rows = rows.filter(scim_id=_uuid_or_none(value))
    total = rows.count()
    page = list(
        rows.select_related("user")
        .prefetch_related("user__scim_groups")
        .order_by("pk")[start - 1 : start - 1 + count]
    )
    return total, page


def list_groups(*, filter_text: str, start: int, count: int) -> tuple[int, list[ScimGroup]]:
    rows = ScimGroup.objects.all()
    found = parse_filter(filter_text, allowed={"displayName", "externalId", "id"})
    if found is not None:
        attribute, value = found
        if attribute == "displayName":
            rows = rows.filter(display_name__iexact=value)
        elif attribute == "externalId":
            rows = rows.filter(external_id=value)
        else:
            rows = rows.filter(scim_id=_uuid_or_none(value))
    total = rows.count()
    page = list(
        rows.prefetch_related("members__scim").order_by("pk")[start - 1 : start - 1 + count]
    )
    return total, page


def _uuid_or_none(value: str):
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def get_user(scim_id: str, *, lock: bool = False) -> ScimUser:
    rows = ScimUser.objects.select_related("user").prefetch_related("user__scim_groups")
    if lock:
        rows = rows.select_for_update(of=("self",))
    link = rows.filter(scim_id=_uuid_or_none(scim_id), deleted_at=None).first()
    if link is None:
        raise ScimError(404, f"no User with id {scim_id[:64]!r}")
    return link


def get_group(scim_id: str, *, lock: bool = False) -> ScimGroup:
    rows = ScimGroup.objects.prefetch_related("members__scim")
    if lock:
        rows = rows.select_for_update()
    group = rows.filter(scim_id=_uuid_or_none(scim_id)).first()
    if group is None:
        raise ScimError(404, f"no Group with id {scim_id[:64]!r}")
    return group


# ---------------------------------------------------------------- user changes


def _check_attributes(body, *, known: set[str], kind: str) -> dict:
    if not isinstance(body, dict):
        raise ScimError(400, f"a {kind} is a JSON object", "invalidSyntax")
    unknown = sorted(k for k in body if k not in known)
    if unknown:
        raise ScimError(400, f"unknown attribute {unknown[0]!r} in {kind}", "invalidSyntax")
    return body


def _text(value, attribute: str, *, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ScimError(400, f"{attribute} must be a string", "invalidValue")
    return value.strip()[:limit]


def _boolean(value, attribute: str) -> bool:
    # Entra ID sends "True"/"False" as strings in PATCH operations.
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ScimError(400, f"{attribute} must be true or false", "invalidValue")


def _username(value) -> str:
    name = _text(value, "userName", limit=1000)
    if not _USERNAME.match(name):
        raise ScimError(
            400,
            "userName must be 1-150 letters, digits or . @ + - _ (it becomes the sign-in name)",
            "invalidValue",
        )
    return name


def _primary_email(value) -> str:
    if value is None:
        return ""
    if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
        raise ScimError(400, "emails must be a list of objects", "invalidValue")
    chosen = next((e for e in value if e.get("primary") in (True, "true", "True")), None)
    chosen = chosen or (value[0] if value else {})
    return _text(chosen.get("value"), "emails.value", limit=254)


class _UserState:
    """The fields a request sets, checked before anything is written."""

    def __init__(self, link: ScimUser | None):
        user = link.user if link else None
        self.username = user.username if user else ""
        self.first_name = user.first_name if user else ""
        self.last_name = user.last_name if user else ""
        self.email = user.email if user else ""
        self.active = user.is_active if user else True
        self.external_id = link.external_id if link else ""

    def set(self, attribute: str, value, *, remove: bool = False) -> None:
        """Set one attribute (a path without the core schema prefix)."""
        base = re.split(r"[\[.]", attribute, maxsplit=1)[0]  # phoneNumbers[type eq "work"].value
        if attribute.startswith(ENTERPRISE_SCHEMA) or base in USER_IGNORED:
            return
        match = _EMAIL_FILTER.match(attribute)
        if match or attribute in ("emails.value",):
            self.email = "" if remove else _text(value, "emails.value", limit=254)
        elif attribute == "emails":
            self.email = "" if remove else _primary_email(value)
        elif attribute == "userName":
            if remove:
                raise ScimError(400, "userName cannot be removed", "mutability")
            self.username = _username(value)
        elif attribute == "externalId":
            self.external_id = "" if remove else _text(value, "externalId", limit=255)
        elif attribute == "active":
            self.active = False if remove else _boolean(value, "active")
        elif attribute == "displayName":
            _text(value, "displayName", limit=300)  # derived from the name; checked, not kept
        elif attribute == "name":
            if remove:
                self.first_name = self.last_name = ""
                return
            if not isinstance(value, dict):
                raise ScimError(400, "name must be an object", "invalidValue")
            unknown = sorted(k for k in value if k not in NAME_PARTS)
            if unknown:
                raise ScimError(400, f"unknown attribute 'name.{unknown[0]}'", "invalidSyntax")
            for part, given in value.items():
                self.set(f"name.{part}", given)
        elif attribute == "name.givenName":
            self.first_name = "" if remove else _text(value, "name.givenName", limit=150)
        elif attribute == "name.familyName":
            self.last_name = "" if remove else _text(value, "name.familyName", limit=150)
        elif attribute.startswith("name.") and attribute[5:] in NAME_PARTS:
            _text(value, attribute, limit=300)
        else:
            raise ScimError(400, f"no attribute {attribute!r} on User", "invalidPath")


def _strip_schema(path: str, schema: str) -> str:
    return path[len(schema) + 1 :] if path.lower().startswith(schema.lower() + ":") else path


def _check_username_free(username: str, *, link: ScimUser | None) -> ScimUser | None:
    """Refuse a userName another account holds (409). Returns the deleted provisioned user of
    that name when it can be revived (a directory re-creating someone it deleted)."""
    User = get_user_model()
    holder = User.objects.filter(username__iexact=username).select_related("scim").first()
    if holder is None or (link is not None and holder.pk == link.user_id):
        return None
    held = getattr(holder, "scim", None)
    if link is None and held is not None and held.deleted_at is not None:
        return held
    if held is None:
        raise ScimError(
            409,
            f"userName {username!r} belongs to a local account that the directory did not "
            "provision; rename one of them (an account is never taken over by its name)",
            "uniqueness",
        )
    raise ScimError(409, f"userName {username!r} is already provisioned", "uniqueness")


@transaction.atomic
def create_user(*, body, token: ScimToken) -> ScimUser:
    """POST /Users. 409 when the userName is taken (a local account is never adopted); a user
    the directory deleted before is revived under a new id."""
    _check_attributes(body, known=USER_STORED | USER_IGNORED, kind="User")
    if "userName" not in body:
        raise ScimError(400, "userName is required", "invalidValue")
    state = _UserState(None)
    for attribute, value in body.items():
        state.set(attribute, value)
    revived = _check_username_free(state.username, link=None)
    if revived is not None:
        link = ScimUser.objects.select_for_update().get(pk=revived.pk)
        link.scim_id, link.deleted_at = uuid.uuid4(), None
        user = link.user
    else:
        user = get_user_model()(username=state.username)
        user.set_unusable_password()
        user.save()
        link = ScimUser(user=user, scim_id=uuid.uuid4())
    link.external_id = state.external_id
    link.save()
    _write_user(link, state, token=token)
    record_event(
        actor=None,
        verb="scim.user_created",
        obj=user,
        detail={"scim_token": token.prefix, "userName": user.username, "revived": bool(revived)},
    )
    return get_user(str(link.scim_id))


@transaction.atomic
def replace_user(*, scim_id: str, body, token: ScimToken) -> ScimUser:
    """PUT /Users/<id>: the stored attributes the body carries are set; an omitted ``active``
    leaves the account as it is."""
    link = get_user(scim_id, lock=True)
    _check_attributes(body, known=USER_STORED | USER_IGNORED, kind="User")
    if "userName" not in body:
        raise ScimError(400, "userName is required (PUT replaces the User)", "invalidValue")
    state = _UserState(link)
    for attribute, value in body.items():
        state.set(attribute, value)
    _check_username_free(state.username, link=link)
    _write_user(link, state, token=token)
    return get_user(scim_id)


@transaction.atomic
def patch_user(*, scim_id: str, body, token: ScimToken) -> ScimUser:
    """PATCH /Users/<id> with ``add``/``replace``/``remove`` operations, with a path (``active``,
    ``name.givenName``, ``emails[type eq "work"].value``, …) or a value map without one (Okta's
    ``{"active": false}``)."""
    link = get_user(scim_id, lock=True)
    state = _UserState(link)
    for op, path, value in _operations(body):
        if path is None:
            if op == "remove":
                raise ScimError(400, "a remove operation needs a path", "noTarget")
            if not isinstance(value, dict):
                raise ScimError(400, "an operation without a path takes an object", "invalidValue")
            for attribute, given in value.items():
                state.set(_strip_schema(attribute, USER_SCHEMA), given)
        else:
            state.set(_strip_schema(path, USER_SCHEMA), value, remove=op == "remove")
    _check_username_free(state.username, link=link)
    _write_user(link, state, token=token)
    return get_user(scim_id)


def _write_user(link: ScimUser, state: _UserState, *, token: ScimToken) -> None:
    user = link.user
    before = {"userName": user.username, "active": user.is_active}
    user.username = state.username
    user.first_name, user.last_name, user.email = state.first_name, state.last_name, state.email
    user.save(update_fields=["username", "first_name", "last_name", "email"])
    if link.external_id != state.external_id:
        link.external_id = state.external_id
    link.save()
    reason = f"scim:{token.prefix}"
    if before["active"] and not state.active:
        deactivate_user(user=user, reason=reason)
    elif state.active and not before["active"]:
        reactivate_user(user=user, reason=reason)
    record_event(
        actor=None,
        verb="scim.user_updated",
        obj=user,
        detail={
            "scim_token": token.prefix,
            "before": before,
            "after": {"userName": user.username, "active": state.active},
        },
    )


@transaction.atomic
def delete_user(*, scim_id: str, token: ScimToken) -> None:
    """DELETE /Users/<id>: the person is deactivated (sessions, tokens, claims ended), leaves
    every group (and so every role a group gave) and is no longer listed; the account row
    stays, so past labels and audit history keep their author."""
    link = get_user(scim_id, lock=True)
    user = link.user
    groups = list(user.scim_groups.all())
    user.scim_groups.clear()
    deactivate_user(user=user, reason=f"scim_delete:{token.prefix}")
    link.deleted_at = timezone.now()
    link.save(update_fields=["deleted_at", "updated_at"])
    _sync_roles([user], former_names=[g.display_name for g in groups])
    record_event(
        actor=None,
        verb="scim.user_deleted",
        obj=user,
        detail={"scim_token": token.prefix, "userName": user.username},
    )


def _operations(body):
    """The (op, path, value) triples of a PatchOp body (op lower-cased: Entra ID capitalises)."""
    if not isinstance(body, dict):
        raise ScimError(400, "a PATCH body is a JSON object", "invalidSyntax")
    if PATCH_SCHEMA not in (body.get("schemas") or []):
        raise ScimError(400, f"a PATCH body names the schema {PATCH_SCHEMA}", "invalidSyntax")
    unknown = sorted(k for k in body if k not in ("schemas", "Operations"))
    if unknown:
        raise ScimError(400, f"unknown attribute {unknown[0]!r} in PatchOp", "invalidSyntax")
    operations = body.get("Operations")
    if not isinstance(operations, list) or not operations:
        raise ScimError(400, "Operations must be a non-empty list", "invalidSyntax")
    found = []
    for index, operation in enumerate(operations):
        if not isinstance(operation, dict):
            raise ScimError(400, f"Operations[{index}] is not an object", "invalidSyntax")
        op = str(operation.get("op", "")).lower()
        if op not in ("add", "replace", "remove"):
            raise ScimError(
                400, f"Operations[{index}].op must be add, replace or remove", "invalidSyntax"
            )
        path = operation.get("path")
        if path is not None and (not isinstance(path, str) or not path.strip()):
            raise ScimError(400, f"Operations[{index}].path must be a string", "invalidPath")
        found.append((op, path.strip() if path else None, operation.get("value")))
    return found


# ---------------------------------------------------------------- groups


def project_role_of(display_name: str) -> tuple[str, Role] | None:
    """``(slug, role)`` for a group named ``<project-slug>:<role>``, else None."""
    slug, sep, role_name = display_name.rpartition(":")
    role = ROLE_NAMES.get(role_name.strip().lower())
    if not sep or role is None or not re.match(r"^[-a-zA-Z0-9_]+$", slug.strip()):
        return None
    return slug.strip(), role


def _members(value, *, index: str) -> list:
    """The users a ``members`` value names ([{"value": <User id>}, …]); 400 for an unknown id."""
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        raise ScimError(400, f"{index} must be a list of {{'value': <User id>}}", "invalidValue")
    ids = [_uuid_or_none(m.get("value")) for m in value]
    links = {
        link.scim_id: link.user
        for link in ScimUser.objects.filter(
            scim_id__in=[i for i in ids if i], deleted_at=None
        ).select_related("user")
    }
    for member, scim_id in zip(value, ids, strict=True):
        if scim_id not in links:
            raise ScimError(
                400, f"{index}: no User with id {str(member.get('value'))[:64]!r}", "invalidValue"
            )
    return [links[i] for i in ids]


def _group_name(value, groups_id=None) -> str:
    name = _text(value, "displayName", limit=255)
    if not name:
        raise ScimError(400, "displayName is required", "invalidValue")
    taken = ScimGroup.objects.filter(display_name__iexact=name)
    if groups_id is not None:
        taken = taken.exclude(pk=groups_id)
    if taken.exists():
        raise ScimError(409, f"a Group named {name!r} exists", "uniqueness")
    return name


@transaction.atomic
def create_group(*, body, token: ScimToken) -> ScimGroup:
    _check_attributes(body, known=GROUP_ATTRIBUTES, kind="Group")
    name = _group_name(body.get("displayName"))
    members = _members(body.get("members") or [], index="members")
    group = ScimGroup.objects.create(
        scim_id=uuid.uuid4(),
        display_name=name,
        external_id=_text(body.get("externalId"), "externalId", limit=255),
    )
    group.members.set(members)
    _sync_roles(members)
    record_event(
        actor=None,
        verb="scim.group_created",
        obj=group,
        detail={"scim_token": token.prefix, "displayName": name, "members": len(members)},
    )
    return get_group(str(group.scim_id))


@transaction.atomic
def replace_group(*, scim_id: str, body, token: ScimToken) -> ScimGroup:
    group = get_group(scim_id, lock=True)
    _check_attributes(body, known=GROUP_ATTRIBUTES, kind="Group")
    before = set(group.members.all())
    name = _group_name(body.get("displayName", group.display_name), group.pk)
    members = set(_members(body.get("members") or [], index="members"))
    return _write_group(
        group, name, body.get("externalId", group.external_id), before, members, token
    )


@transaction.atomic
def patch_group(*, scim_id: str, body, token: ScimToken) -> ScimGroup:
    """PATCH /Groups/<id>: members added (``path: members``), removed (``path: members`` with a
    value list, or ``members[value eq "<id>"]``), replaced; ``displayName``/``externalId`` set
    with a path or a value map (Okta also sends the group's ``id`` in it)."""
    group = get_group(scim_id, lock=True)
    before = set(group.members.all())
    members = set(before)
    name, external_id = group.display_name, group.external_id
    for index, (op, path, value) in enumerate(_operations(body)):
        where = f"Operations[{index}]"
        changes = {path: value} if path is not None else value
        if path is None and not isinstance(value, dict):
            raise ScimError(
                400, f"{where}: an operation without a path takes an object", "invalidValue"
            )
        if path is None and op == "remove":
            raise ScimError(400, f"{where}: a remove operation needs a path", "noTarget")
        for attribute, given in changes.items():
            attribute = _strip_schema(attribute, GROUP_SCHEMA)
            one = _MEMBER_FILTER.match(attribute)
            if one and op == "remove":
                target = _uuid_or_none(one.group(1))
                members = {m for m in members if m.scim.scim_id != target}
            elif attribute == "members":
                if op == "remove" and given is None:
                    members = set()
                    continue
                named = set(_members(given, index=f"{where}.value"))
                if op == "add":
                    members |= named
                elif op == "replace":
                    members = named
                else:
                    members -= named
            elif attribute == "displayName":
                if op == "remove":
                    raise ScimError(400, f"{where}: displayName cannot be removed", "mutability")
                name = given
            elif attribute == "externalId":
                external_id = "" if op == "remove" else given
            elif attribute == "id" and path is None:
                if str(given) != str(group.scim_id):
                    raise ScimError(400, f"{where}: id cannot be changed", "mutability")
            else:
                raise ScimError(400, f"{where}: no attribute {attribute!r} on Group", "invalidPath")
    name = _group_name(name, group.pk)
    return _write_group(group, name, external_id, before, members, token)


def _write_group(group, name, external_id, before: set, members: set, token) -> ScimGroup:
    former = group.display_name
    group.display_name = name
    group.external_id = _text(external_id, "externalId", limit=255)
    group.save()
    group.members.set(members)
    _sync_roles(before | members, former_names=[former])
    record_event(
        actor=None,
        verb="scim.group_updated",
        obj=group,
        detail={
            "scim_token": token.prefix,
            "displayName": name,
            "added": sorted(u.username for u in members - before),
            "removed": sorted(u.username for u in before - members),
        },
    )
    return get_group(str(group.scim_id))


@transaction.atomic
def delete_group(*, scim_id: str, token: ScimToken) -> None:
    group = get_group(scim_id, lock=True)
    members = list(group.members.all())
    name = group.display_name
    group.delete()
    _sync_roles(members, former_names=[name])
    record_event(
        actor=None,
        verb="scim.group_deleted",
        object_type="workbench.scimgroup",
        object_id=str(scim_id),
        detail={"scim_token": token.prefix, "displayName": name},
    )


def _sync_roles(users, *, former_names=()) -> None:
    """Set each provisioned user's memberships in the projects the groups name (the strongest
    role of their groups there; none: removed), through the membership services, which audit
    each change. A project that a deleted or renamed group named before (``former_names``) is
    managed for this sync too, so its members lose the role the group gave. 409 when it would leave a project without an admin."""
    users = [u for u in users if ScimUser.objects.filter(user=u).exists()]
    if not users:
        return
    groups = list(ScimGroup.objects.prefetch_related("members"))
    roles_by_group = {g.pk: project_role_of(g.display_name) for g in groups}
    managed = {r[0] for r in roles_by_group.values() if r}
    managed |= {r[0] for name in former_names if (r := project_role_of(name))}
    projects = {p.slug: p for p in Project.objects.filter(slug__in=managed)}
    for user in users:
        wanted: dict[str, Role] = {}
        for group in groups:
            given = roles_by_group[group.pk]
            if given is None or user not in group.members.all():
                continue
            slug, role = given
            held = wanted.get(slug)
            wanted[slug] = role if held is None else max(held, role, key=ROLE_RANK.__getitem__)
        held_in = set(
            ProjectMembership.objects.filter(user=user, project__slug__in=projects).values_list(
                "project__slug", flat=True
            )
        )
        for slug, project in projects.items():
            try:
                if slug in wanted:
                    grant_role(project=project, user=user, role=wanted[slug])
                elif slug in held_in:
                    remove_member(project=project, user=user)
            except ProjectRefused as exc:  # removed or demoted: the project's last admin
                raise ScimError(
                    409, f"{user.username} is the last admin of project {slug!r}", "mutability"
                ) from exc
        forget_roles(user)
