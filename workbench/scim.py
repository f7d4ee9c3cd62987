"""The SCIM 2.0 endpoints at ``/scim/v2/`` (the rules are in :mod:`workbench.services.scim`).

Callers are directories holding a token an installation admin made on the identity page
(``Authorization: Bearer scim_…``); no session, no CSRF. Every refusal is a 4xx in the SCIM
error schema and an audit event (``scim_refused``); nothing of a refused request is stored."""

import json
from functools import wraps

from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from workbench.services import scim
from workbench.services.audit import record_event
from workbench.services.scim import ScimError

CONTENT_TYPE = "application/scim+json"
USER_RESOURCE, GROUP_RESOURCE = "User", "Group"


def _answer(body: dict, status: int = 200) -> JsonResponse:
    return JsonResponse(body, status=status, content_type=CONTENT_TYPE)


def _base(request) -> str:
    return request.build_absolute_uri("/scim/v2").rstrip("/")


def scim_endpoint(methods: tuple[str, ...]):
    """Authenticate the directory's token, parse a JSON body, and turn a :class:`ScimError` into
    its SCIM answer, audited. The view gets ``(request, token, body, *args)``."""

    def decorator(view):
        @csrf_exempt
        @never_cache
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            token = None
            try:
                if request.method not in methods:
                    raise ScimError(405, f"{request.method} is not allowed here")
                header = request.headers.get("Authorization", "")
                scheme, _, raw = header.partition(" ")
                token = scim.authenticate_scim_token(raw.strip()) if scheme == "Bearer" else None
                if token is None:
                    raise ScimError(401, "a valid SCIM bearer token is required")
                body = None
                if request.method in ("POST", "PUT", "PATCH"):
                    try:
                        body = json.loads(request.body or b"null")
                    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                        raise ScimError(
                            400, f"the body is not valid JSON ({exc})"[:300], "invalidSyntax"
                        ) from exc
                return view(request, token, body, *args, **kwargs)
            except ScimError as exc:
                record_event(
                    actor=None,
                    verb="scim_refused",
                    detail={
                        "status": exc.status,
                        "scimType": exc.scim_type,
                        "detail": exc.detail[:500],
                        "method": request.method,
                        "path": request.path[:300],
                        "scim_token": token.prefix if token else "",
                    },
                )
                response = _answer(exc.body(), status=exc.status)
                if exc.status == 401:
                    response["WWW-Authenticate"] = 'Bearer realm="scim"'
                return response

        return wrapper

    return decorator


def _list(resources: list[dict], *, total: int, start: int) -> JsonResponse:
    return _answer(
        {
            "schemas": [scim.LIST_SCHEMA],
            "totalResults": total,
            "startIndex": start,
            "itemsPerPage": len(resources),
            "Resources": resources,
        }
    )


@scim_endpoint(("GET", "POST"))
def users(request, token, body):
    if request.method == "POST":
        link = scim.create_user(body=body, token=token)
        resource = scim.user_resource(link, base=_base(request))
        response = _answer(resource, status=201)
        response["Location"] = resource["meta"]["location"]
        return response
    start, count = scim.paging(request.GET.get("startIndex"), request.GET.get("count"))
    total, page = scim.list_users(
        filter_text=request.GET.get("filter", ""), start=start, count=count
    )
    base = _base(request)
    return _list([scim.user_resource(link, base=base) for link in page], total=total, start=start)


@scim_endpoint(("GET", "PUT", "PATCH", "DELETE"))
def user(request, token, body, scim_id):
    if request.method == "DELETE":
        scim.delete_user(scim_id=scim_id, token=token)
        return HttpResponse(status=204)
    if request.method == "PUT":
        link = scim.replace_user(scim_id=scim_id, body=body, token=token)
    elif request.method == "PATCH":
        link = scim.patch_user(scim_id=scim_id, body=body, token=token)
    else:
        link = scim.get_user(scim_id)
    return _answer(scim.user_resource(link, base=_base(request)))


def _wants_members(request) -> bool:
    excluded = request.GET.get("excludedAttributes", "")
    return "members" not in {a.strip() for a in excluded.split(",")}


@scim_endpoint(("GET", "POST"))
def groups(request, token, body):
    if request.method == "POST":
        group = scim.create_group(body=body, token=token)
        resource = scim.group_resource(group, base=_base(request))
        response = _answer(resource, status=201)
        response["Location"] = resource["meta"]["location"]
        return response
    start, count = scim.paging(request.GET.get("startIndex"), request.GET.get("count"))
    total, page = scim.list_groups(
        filter_text=request.GET.get("filter", ""), start=start, count=count
    )
    base, members = _base(request), _wants_members(request)
    return _list(
        [scim.group_resource(g, base=base, members=members) for g in page], total=total, start=start
    )


@scim_endpoint(("GET", "PUT", "PATCH", "DELETE"))
def group(request, token, body, scim_id):
    if request.method == "DELETE":
        scim.delete_group(scim_id=scim_id, token=token)
        return HttpResponse(status=204)
    if request.method == "PUT":
        found = scim.replace_group(scim_id=scim_id, body=body, token=token)
    elif request.method == "PATCH":
        found = scim.patch_group(scim_id=scim_id, body=body, token=token)
    else:
        found = scim.get_group(scim_id)
    return _answer(scim.group_resource(found, base=_base(request), members=_wants_members(request)))


@scim_endpoint(("GET",))
def service_provider_config(request, token, body):
    return _answer(
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
            "documentationUri": request.build_absolute_uri("/"),
            "patch": {"supported": True},
            "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
            "filter": {"supported": True, "maxResults": scim.MAX_PAGE},
            "changePassword": {"supported": False},
            "sort": {"supported": False},
            "etag": {"supported": False},
            "authenticationSchemes": [
                {
                    "type": "oauthbearertoken",
                    "name": "Bearer token",
                    "description": "A token an installation admin creates on the identity page.",
                    "primary": True,
                }
            ],
            "meta": {"resourceType": "ServiceProviderConfig"},
        }
    )


def _resource_type(name: str, schema: str, base: str, extensions=()) -> dict:
    return {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
        "id": name,
        "name": name,
        "endpoint": f"/{name}s",
        "schema": schema,
        "schemaExtensions": [{"schema": s, "required": False} for s in extensions],
        "meta": {"resourceType": "ResourceType", "location": f"{base}/ResourceTypes/{name}"},
    }


def _resource_types(base: str) -> dict[str, dict]:
    """Each resource type by its name (its id, and the last part of its ``meta.location``)."""
    return {
        USER_RESOURCE: _resource_type(
            USER_RESOURCE, scim.USER_SCHEMA, base, [scim.ENTERPRISE_SCHEMA]
        ),
        GROUP_RESOURCE: _resource_type(GROUP_RESOURCE, scim.GROUP_SCHEMA, base),
    }


@scim_endpoint(("GET",))
def resource_types(request, token, body):
    types = list(_resource_types(_base(request)).values())
    return _list(types, total=len(types), start=1)


@scim_endpoint(("GET",))
def resource_type(request, token, body, name):
    """One resource type, at the ``meta.location`` the list gives it (RFC 7644 §4)."""
    found = _resource_types(_base(request)).get(name)
    if found is None:
        raise ScimError(404, f"no ResourceType named {name[:64]!r}")
    return _answer(found)


def _attribute(name: str, kind: str = "string", **extra) -> dict:
    return {
        "name": name,
        "type": kind,
        "multiValued": False,
        "required": False,
        "caseExact": False,
        "mutability": "readWrite",
        "returned": "default",
        "uniqueness": "none",
        **extra,
    }


SCHEMAS = {
    scim.USER_SCHEMA: (
        "User",
        [
            _attribute("userName", required=True, uniqueness="server"),
            _attribute(
                "name",
                "complex",
                subAttributes=[_attribute("givenName"), _attribute("familyName")],
            ),
            _attribute("displayName", mutability="readOnly"),
            _attribute("active", "boolean"),
            _attribute(
                "emails",
                "complex",
                multiValued=True,
                subAttributes=[
                    _attribute("value"),
                    _attribute("type"),
                    _attribute("primary", "boolean"),
                ],
            ),
            _attribute("externalId", caseExact=True),
            _attribute("groups", "complex", multiValued=True, mutability="readOnly"),
        ],
    ),
    scim.GROUP_SCHEMA: (
        "Group",
        [
            _attribute("displayName", required=True, uniqueness="server"),
            _attribute("externalId", caseExact=True),
            _attribute(
                "members",
                "complex",
                multiValued=True,
                subAttributes=[_attribute("value", mutability="immutable"), _attribute("display")],
            ),
        ],
    ),
    # The User resource type names this extension, so a directory may read it here. Its
    # attributes (RFC 7643 §4.3) are accepted on Users and not stored.
    scim.ENTERPRISE_SCHEMA: (
        "EnterpriseUser",
        [
            _attribute("employeeNumber"),
            _attribute("costCenter"),
            _attribute("organization"),
            _attribute("division"),
            _attribute("department"),
            _attribute(
                "manager",
                "complex",
                subAttributes=[
                    _attribute("value"),
                    _attribute("$ref", "reference", referenceTypes=["User"]),
                    _attribute("displayName", mutability="readOnly"),
                ],
            ),
        ],
    ),
}


def _schema(urn: str, base: str) -> dict:
    name, attributes = SCHEMAS[urn]
    return {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": urn,
        "name": name,
        "attributes": attributes,
        "meta": {"resourceType": "Schema", "location": f"{base}/Schemas/{urn}"},
    }


@scim_endpoint(("GET",))
def schemas(request, token, body):
    base = _base(request)
    found = [_schema(urn, base) for urn in SCHEMAS]
    return _list(found, total=len(found), start=1)


@scim_endpoint(("GET",))
def schema(request, token, body, urn):
    """One schema by its id (its URN), at the ``meta.location`` the list gives it."""
    if urn not in SCHEMAS:
        raise ScimError(404, f"no Schema with id {urn[:120]!r}")
    return _answer(_schema(urn, _base(request)))
