import logging
import re
import socket
import time
import uuid
from urllib.parse import unquote

from django.conf import settings
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import BadRequest, PermissionDenied
from django.db import DatabaseError, connections
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.urls import get_script_prefix, set_script_prefix
from django.utils.cache import patch_cache_control

from goldset.conf import tunable
from goldset.selectors.projects import access_project
from goldset.traces.responses import error_response, is_otlp_traces_request
from workbench import request_context
from workbench.access import Kind, entry_for
from workbench.client_address import client_address
from workbench.project_urls import root_url
from workbench.roles import hold_roles, roles_of
from workbench.services.audit import record_event
from workbench.services.idempotency import record_api_answer

logger = logging.getLogger(__name__)
_VALID_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")
USER_AGENT_CHARS = 300  # what the audit log keeps of a User-Agent header


class RequestIdMiddleware:
    """Gives every request an id (a proxy's ``X-Request-ID`` when well-formed) and makes it, with
    the client address and user agent, the current :mod:`workbench.request_context` for the
    audit log. Every answer carries it as ``X-Request-ID`` (it wraps every middleware that may
    answer by itself)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "")
        request.request_id = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        context = request_context.RequestContext(
            request_id=request.request_id,
            client_address=client_address(request),
            user_agent=request.headers.get("User-Agent", "")[:USER_AGENT_CHARS],
        )
        with request_context.bound(context):
            response = self.get_response(request)
        response["X-Request-ID"] = request.request_id
        return response


class ApiWriteAuditMiddleware:
    """The answer to the first API request with an ``Idempotency-Key`` is kept for its repeats
    (workbench.services.idempotency). Every API call that may change data (POST, PUT, PATCH,
    DELETE) by an authenticated caller leaves an ``api_write`` audit event: who (and through
    which token), the method, the path and the answer's status, with the address and user agent
    every event carries. The services audit the change itself; this records the call, refused or
    not. Calls without valid credentials are audited by the token authentication (rate-limited
    per address)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.method in ("GET", "HEAD", "OPTIONS") or not request.path.startswith("/api/"):
            return response
        try:
            self._record(request, response)
        except DatabaseError:  # the change is done: a lost audit row must not turn it into a 500
            logger.exception("Could not record the API call %s %s", request.method, request.path)
        return response

    @staticmethod
    def _record(request, response) -> None:
        row = getattr(request, "idempotency_row", None)
        if row is not None:  # the first request with an Idempotency-Key: keep its answer
            record_api_answer(row=row, response=response)
        user = getattr(request, "user", None)  # DRF sets it here once it authenticated
        if user is None or not user.is_authenticated:
            return
        token = getattr(request, "auth", None)
        record_event(
            actor=user,
            project=getattr(request, "project", None),
            verb="api_write",
            detail={
                "method": request.method,
                "path": request.get_full_path()[:300],
                "status": response.status_code,
                "token": getattr(token, "prefix", ""),
            },
        )


class QueryCountMiddleware:
    """With ``QUERY_COUNT_HEADER`` on, answers carry ``X-Query-Count``: the SQL statements the
    request ran on every database connection, sessions and authentication included (it is the
    outermost middleware), and ``Server-Timing`` with where its time went: ``app`` (the whole
    request in Django), ``db`` (wall time inside SQL statements: round trips and row
    conversion) and ``cpu`` (the request thread's CPU time); what ``app`` has beyond the other
    two is waiting for a CPU, the interpreter lock or a commit. ``bench/bench_load.py`` reads
    both to show that a page's query count does not grow with the data and where a slow
    request's time goes; off by default, when the headers are absent and nothing wraps."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not settings.QUERY_COUNT_HEADER:
            return self.get_response(request)
        counted, in_sql = [0], [0.0]

        def count(execute, sql, params, many, context):
            counted[0] += 1
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                in_sql[0] += time.perf_counter() - started

        wrappers = [conn.execute_wrapper(count) for conn in connections.all()]
        started, cpu_started = time.perf_counter(), time.thread_time()
        for wrapper in wrappers:
            wrapper.__enter__()
        try:
            response = self.get_response(request)
        finally:
            for wrapper in reversed(wrappers):
                wrapper.__exit__(None, None, None)
        app, cpu = time.perf_counter() - started, time.thread_time() - cpu_started
        response["X-Query-Count"] = str(counted[0])
        response["Server-Timing"] = ", ".join(
            f"{name};dur={seconds * 1000:.1f}"
            for name, seconds in (("app", app), ("db", in_sql[0]), ("cpu", cpu))
        )
        return response


_PROJECT_MOUNT = re.compile(r"^/p/(?P<slug>[-a-zA-Z0-9_]+)(?P<rest>/.*)?$")
_API_PROJECT_MOUNT = re.compile(r"^/api/v1/projects/(?P<slug>[-a-zA-Z0-9_]+)(?P<rest>/.*)$")


class ProjectMountMiddleware:
    """A project's pages live under ``/p/<slug>/`` and its API under
    ``/api/v1/projects/<slug>/`` (DESIGN.md §15). The slug is taken off the path before URL
    resolution, so every app's URLconf stays as it is, and recorded as ``request.project_slug``;
    :class:`AccessMiddleware` resolves it (with the caller's membership) into
    ``request.project``, which views hand to selectors and services. For pages the prefix is
    the request's mount point (Django's script prefix, as for an app served under a path), so
    every link a project page renders stays in the project. A path without a prefix addresses
    the default project (the links and API clients of before projects keep working)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.project_slug = None
        request.project = None
        match = _PROJECT_MOUNT.match(request.path_info)
        if match and match["rest"] is None:
            return HttpResponsePermanentRedirect(request.path + "/")
        if match:
            mount = get_script_prefix()
            request.project_slug = match["slug"]
            request.path_info = match["rest"]
            set_script_prefix(f"{mount}p/{match['slug']}/")
            try:
                return self.get_response(request)
            finally:
                set_script_prefix(mount)
        match = _API_PROJECT_MOUNT.match(request.path_info)
        if match:
            request.project_slug = match["slug"]
            request.path_info = "/api/v1" + match["rest"]
        return self.get_response(request)


class AccessMiddleware:
    """Enforces :mod:`workbench.access` before any view runs: unknown URL name → 404, anonymous
    → the login page, not a member of the URL's project → 404, a role the entry does not list
    (in that project) → 403."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        match = getattr(request, "resolver_match", None)
        entry = entry_for(match.view_name if match else None)
        if entry is None:
            raise Http404("No such page.")
        if entry.roles is None or entry.kind == Kind.API:
            # API callers authenticate inside DRF (a token is not a session); its permission
            # class (goldset.views.api_access) resolves the project and applies the same roles.
            return None
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path(), login_url=root_url("login"))
        if entry.scoped or request.project_slug:
            access = access_project(user=request.user, slug=request.project_slug)
            request.project = access.project
            request.member_projects = access.member_projects  # the top bar's project menu
            hold_roles(request.user, access.project, access.roles)
        if not roles_of(request.user) & entry.roles:
            raise PermissionDenied("Your role does not give access to this page.")
        return None


class BodyReadTimeout(BadRequest):
    """The client stopped sending its request body (``REQUEST_BODY_TIMEOUT_SECONDS``)."""


# Room for a multipart form's other fields and boundaries beside its file.
MULTIPART_OVERHEAD_BYTES = 1 << 20


class _TimedBody:
    """The request's body stream: a read that times out becomes :class:`BodyReadTimeout`."""

    def __init__(self, stream):
        self._stream = stream

    def read(self, *args, **kwargs):
        try:
            return self._stream.read(*args, **kwargs)
        except TimeoutError as exc:
            raise BodyReadTimeout(_TIMEOUT_DETAIL) from exc

    def readline(self, *args, **kwargs):
        try:
            return self._stream.readline(*args, **kwargs)
        except TimeoutError as exc:
            raise BodyReadTimeout(_TIMEOUT_DETAIL) from exc

    def __getattr__(self, name):
        return getattr(self._stream, name)


_TIMEOUT_DETAIL = "The request body stopped arriving (REQUEST_BODY_TIMEOUT_SECONDS)."


def body_cap(request) -> int:
    """The largest body ``request`` may announce: a file upload's cap (plus room for the form's
    other fields) for multipart bodies, ``DATA_UPLOAD_MAX_MEMORY_SIZE`` for any other."""
    if request.META.get("CONTENT_TYPE", "").lower().startswith("multipart/"):
        return tunable("IMPORT_MAX_UPLOAD_BYTES") + MULTIPART_OVERHEAD_BYTES
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class RequestBodyGuardMiddleware:
    """Bad request bodies end before they hold a thread, on every page and API endpoint:

    * a ``Content-Length`` above :func:`body_cap` is answered 413 before any byte of the body is
      read (a 2 GiB announcement with a 15-byte body used to hold a thread for minutes), one that
      is not a byte count 400; the connection's reading side is shut so the server does not
      drain the rest either;
    * under gunicorn (which hands the socket over as ``gunicorn.socket``) each read of the body
      waits at most ``REQUEST_BODY_TIMEOUT_SECONDS``: a client that stops sending ends the
      request with 408 (API) or 400 (pages) instead of holding the thread.

    It runs before anything reads the body (CSRF reads forms): third in the middleware list,
    inside only the query count and the request id (which read headers)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        announced = request.META.get("CONTENT_LENGTH") or ""
        if announced:
            try:
                length = int(announced)
            except ValueError:
                length = -1
            if length < 0:
                return _refuse(request, 400, "Bad Request", "Content-Length is not a byte count.")
            cap = body_cap(request)
            if length > cap:
                _stop_reading(request)
                if is_otlp_traces_request(request.path):  # an exporter reads a Status
                    return error_response(
                        413,
                        f"the request announces {length} bytes; at most {cap}",
                        request.META.get("CONTENT_TYPE", ""),
                        retry_after=tunable("OTLP_RETRY_AFTER_SECONDS"),
                    )
                return _refuse(request, 413, "Content Too Large", _too_large(request, length, cap))
        sock = request.META.get("gunicorn.socket")
        if sock is None:
            return self.get_response(request)
        previous = sock.gettimeout()
        sock.settimeout(float(tunable("REQUEST_BODY_TIMEOUT_SECONDS")))
        request._stream = _TimedBody(request._stream)
        try:
            return self.get_response(request)
        finally:
            try:
                sock.settimeout(previous)
            except OSError:  # the connection is gone
                pass


def _too_large(request, length: int, cap: int) -> str:
    if request.META.get("CONTENT_TYPE", "").lower().startswith("multipart/"):
        return (
            f"The request announces {length} bytes; a file upload may be at most {cap} bytes "
            "with its form (IMPORT_MAX_UPLOAD_BYTES)."
        )
    return (
        f"The request announces {length} bytes. A body that is not a file upload is read into "
        f"memory, so it may be at most {cap} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE). Send a large "
        "run as a file (multipart/form-data), which is streamed to storage."
    )


def _stop_reading(request) -> None:
    """Shut the reading side of the client's connection (under gunicorn): the server then sees
    the end of the body at once instead of draining gigabytes before the next request."""
    sock = request.META.get("gunicorn.socket")
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RD)
        except OSError:
            pass


def _refuse(request, status: int, title: str, detail: str):
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"type": "about:blank", "title": title, "status": status, "detail": detail},
            status=status,
            content_type="application/problem+json",
        )
    return HttpResponse(f"{title}: {detail}", status=status, content_type="text/plain")


class RejectNulBytesMiddleware:
    """A NUL byte in the path or the query string is never valid input: 400, before any view or
    database driver sees it (PostgreSQL refuses NUL in text, which used to surface as a 500)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        query = request.META.get("QUERY_STRING", "")
        if "\x00" in request.path or "\x00" in unquote(query) or "\x00" in request.path_info:
            if request.path.startswith("/api/"):
                return JsonResponse(
                    {"title": "Bad Request", "status": 400, "detail": "NUL bytes in the URL."},
                    status=400,
                    content_type="application/problem+json",
                )
            return HttpResponseBadRequest("NUL bytes are not allowed in URLs.")
        return self.get_response(request)


class SessionSecurityMiddleware:
    """Sessions end after ``SESSION_IDLE_TIMEOUT_SECONDS`` without a request (default 30 min) and
    ``SESSION_ABSOLUTE_TIMEOUT_SECONDS`` after login whatever the activity (default 12 h);
    responses to signed-in users are ``Cache-Control: no-store``. The last-seen time is written
    at most every ``SESSION_SEEN_WRITE_SECONDS`` (default a minute), so an active session costs
    no write per request."""

    STARTED, SEEN = "_wb_started_at", "_wb_last_seen"

    @classmethod
    def stamp_login(cls, sender, request, user, **kwargs):
        """At login (any form): the session's start and last-seen times, written with the login
        itself so later requests need no session write."""
        now = int(time.time())
        request.session[cls.STARTED] = now
        request.session[cls.SEEN] = now

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            now = int(time.time())
            session = request.session
            started = session.setdefault(self.STARTED, now)
            seen = session.get(self.SEEN, now)
            idle = now - seen > settings.SESSION_IDLE_TIMEOUT_SECONDS
            expired = now - started > settings.SESSION_ABSOLUTE_TIMEOUT_SECONDS
            if idle or expired:
                logout(request)  # flushes the session; the page's access check sends to login
            elif now - seen >= settings.SESSION_SEEN_WRITE_SECONDS or self.SEEN not in session:
                session[self.SEEN] = now
        response = self.get_response(request)
        if user is not None and user.is_authenticated:
            patch_cache_control(response, no_store=True, private=True)
        return response
