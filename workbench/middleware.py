import re
import uuid

from workbench import request_context

_VALID_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


class RequestIdMiddleware:
    """Gives every request an id (a proxy's ``X-Request-ID`` when well-formed) and makes it, with
    the client address, the current :mod:`workbench.request_context` for the audit log."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        request.request_id = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        context = request_context.RequestContext(
            request_id=request.request_id, client_address=request.META.get("REMOTE_ADDR", "")
        )
        with request_context.bound(context):
            response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        return response
