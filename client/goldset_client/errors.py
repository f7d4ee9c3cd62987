"""Errors the client raises. Every error the server answers is an :class:`ApiError` carrying
its RFC 9457 problem (title, detail, and for import errors the line and field)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ProblemItem:
    """One problem of a rejected request or file: where (line, field) and what."""

    message: str
    line: int | None = None
    field: str = ""
    expected: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProblemItem:
        line = data.get("line")
        return cls(
            message=str(data.get("message", "")),
            line=line if isinstance(line, int) else None,
            field=str(data.get("field") or ""),
            expected=str(data.get("expected") or ""),
        )

    def __str__(self) -> str:
        parts = [f"line {self.line}"] if self.line is not None else []
        if self.field:
            parts.append(self.field)
        return ": ".join([*parts, self.message])


@dataclass(frozen=True)
class Problem:
    """An ``application/problem+json`` body (RFC 9457)."""

    status: int
    title: str
    detail: str = ""
    type: str = "about:blank"
    errors: tuple[ProblemItem, ...] = field(default_factory=tuple)

    @classmethod
    def from_json(cls, status: int, data: Any) -> Problem:
        if not isinstance(data, dict):
            return cls(status=status, title=f"HTTP {status}", detail=str(data)[:500])
        return cls(
            status=int(data.get("status") or status),
            title=str(data.get("title") or f"HTTP {status}"),
            detail=str(data.get("detail") or ""),
            type=str(data.get("type") or "about:blank"),
            errors=tuple(
                ProblemItem.from_json(e) for e in data.get("errors") or [] if isinstance(e, dict)
            ),
        )


class GoldsetClientError(Exception):
    """Base class of everything this client raises."""


class ApiError(GoldsetClientError):
    """The server refused the request; ``problem`` is its problem+json body."""

    def __init__(self, problem: Problem):
        self.problem = problem
        text = f"{problem.status} {problem.title}"
        if problem.detail:
            text += f": {problem.detail}"
        if problem.errors:
            text += "\n" + "\n".join(f"  {e}" for e in problem.errors)
        super().__init__(text)

    @property
    def status(self) -> int:
        return self.problem.status

    @property
    def title(self) -> str:
        return self.problem.title

    @property
    def detail(self) -> str:
        return self.problem.detail

    @property
    def errors(self) -> tuple[ProblemItem, ...]:
        return self.problem.errors

    @property
    def line(self) -> int | None:
        """The line of the first problem that names one."""
        return next((e.line for e in self.errors if e.line is not None), None)

    @property
    def field(self) -> str:
        """The field of the first problem that names one."""
        return next((e.field for e in self.errors if e.field), "")


class BadRequest(ApiError):
    """400: a malformed request; ``errors`` name the fields."""


class Unauthorized(ApiError):
    """401: no token, or an invalid, expired or revoked one."""


class Forbidden(ApiError):
    """403: the role or the token's scope does not allow this."""


class NotFound(ApiError):
    """404: no such object, or not yours."""


class Conflict(ApiError):
    """409: the object's state does not allow this (cancel an ended import), or a request with
    the same Idempotency-Key is still running."""


class Unprocessable(ApiError):
    """422: refused by a rule (a file that fails validation, a version that is not frozen…)."""


class RateLimited(ApiError):
    """429: this token's rate limit; retry after ``retry_after`` seconds."""

    def __init__(self, problem: Problem, retry_after: float | None = None):
        super().__init__(problem)
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx."""


class ImportRejected(ApiError):
    """A background import rejected the file (nothing was stored); ``errors`` has every problem
    with its line and field."""


class TransportError(GoldsetClientError):
    """The server could not be reached or the connection broke (``__cause__`` is httpx's)."""


class JobFailed(GoldsetClientError):
    """A background job (an import or a scoring job) failed or was cancelled."""


class ChecksumMismatch(GoldsetClientError):
    """The downloaded bytes do not hash to the ``X-Checksum-SHA256`` the server sent."""


class WaitTimeout(GoldsetClientError):
    """A job did not finish before the timeout."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: Unprocessable,
}


def error_for(status: int, body: Any, headers: Any = None) -> ApiError:
    problem = Problem.from_json(status, body)
    if status == 429:
        retry = (headers or {}).get("Retry-After")
        try:
            return RateLimited(problem, float(retry) if retry is not None else None)
        except ValueError:
            return RateLimited(problem, None)
    if status >= 500:
        return ServerError(problem)
    return _BY_STATUS.get(status, ApiError)(problem)
