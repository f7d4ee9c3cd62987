import re
import uuid

_VALID_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


class RequestIdMiddleware:
    """Gives every request an id (a proxy's ``X-Request-ID`` when well-formed) for the audit log."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        request.request_id = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        return response


class AccessMiddleware:
    """Enforces :mod:`workbench.access` before any view runs: unknown URL name → 404, anonymous
    → the login page, a role the entry does not list → 403."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        from django.contrib.auth.views import redirect_to_login
        from django.core.exceptions import PermissionDenied
        from django.http import Http404

        from workbench.access import entry_for
        from workbench.roles import roles_of

        match = getattr(request, "resolver_match", None)
        entry = entry_for(match.view_name if match else None)
        if entry is None:
            raise Http404("No such page.")
        if entry.roles is None:
            return None
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not roles_of(request.user) & entry.roles:
            raise PermissionDenied("Your role does not give access to this page.")
        return None
