"""What the API's schema documents for an answer, checked against answers a live server gave:
the operation a request addressed (its method and path, under a project's prefix or not), the
status code among the operation's responses, and every header the answer carries that is the
API's own (not HTTP's or the browser security headers every Django answer has) among that
response's headers, and every header the response documents as required present.

A status on a path that the schema has no operation for (405: a method the path does not take)
is documented when every operation of the path documents it."""

import re
from dataclasses import dataclass

import httpx

# HTTP's own headers and those every Django answer carries; any other header an answer carries
# is the API's and must be in the schema.
GENERIC_HEADERS = frozenset(
    {
        "allow",  # on every DRF answer; documented on 405, where it is the answer
        "cache-control",
        "connection",
        "content-language",
        "content-length",
        "content-security-policy",
        "content-type",
        "cross-origin-opener-policy",
        "date",
        "expires",
        "referrer-policy",
        "server",
        "transfer-encoding",
        "vary",
        "x-content-type-options",
        "x-frame-options",
    }
)
PROJECT_PREFIX = re.compile(r"^/api/v1/projects/[-a-zA-Z0-9_]+(?=/)")


@dataclass(frozen=True)
class Answer:
    method: str
    path: str
    status: int
    headers: dict[str, str]

    @classmethod
    def of(cls, response: httpx.Response) -> "Answer":
        request = response.request
        return cls(request.method, request.url.path, response.status_code, dict(response.headers))


class Documented:
    """The schema's operations, found by method and path."""

    def __init__(self, schema: dict):
        self.paths = []
        # literal segments first: /triples/import/ is not /triples/{id}/
        for template in sorted(schema["paths"], key=lambda t: t.count("{")):
            pattern = re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template))
            self.paths.append((re.compile(f"^{pattern}$"), template, schema["paths"][template]))

    def path_of(self, path: str):
        """``(template, {method: operation})`` of the schema path ``path`` is, or None."""
        for candidates in (path, PROJECT_PREFIX.sub("/api/v1", path, count=1)):
            for pattern, template, operations in self.paths:
                if pattern.match(candidates):
                    return template, operations
        return None

    def operation_id(self, answer: Answer) -> str | None:
        found = self.path_of(answer.path)
        operation = found and found[1].get(answer.method.lower())
        return operation["operationId"] if operation else None

    def problems(self, answer: Answer) -> list[str]:
        """What the schema does not document of ``answer`` (empty when it documents it all)."""
        found = self.path_of(answer.path)
        where = f"{answer.method} {answer.path} → {answer.status}"
        if found is None:
            return [f"{where}: no such path in the schema"]
        template, operations = found
        operation = operations.get(answer.method.lower())
        documenting = [operation] if operation else list(operations.values())
        problems = []
        for op in documenting:
            response = op["responses"].get(str(answer.status))
            name = f"{where} ({op['operationId']})"
            if response is None:
                problems.append(f"{name}: status not documented")
                continue
            documented = {h.lower(): h for h in response.get("headers", {})}
            carried = {h.lower() for h in answer.headers}
            for header in sorted(carried - GENERIC_HEADERS - set(documented)):
                problems.append(f"{name}: header {header} not documented")
            if answer.status == 405 and "allow" not in documented:
                problems.append(f"{name}: header allow not documented")
            for header, spec in response.get("headers", {}).items():
                if spec.get("required") and header.lower() not in carried:
                    problems.append(f"{name}: required header {header} missing")
        return problems


class RecordingTransport(httpx.HTTPTransport):
    """An HTTP transport that keeps every answer it receives (``answers``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.answers: list[Answer] = []

    def handle_request(self, request):
        response = super().handle_request(request)
        self.answers.append(
            Answer(request.method, request.url.path, response.status_code, dict(response.headers))
        )
        return response


class AsyncRecordingTransport(httpx.AsyncHTTPTransport):
    """:class:`RecordingTransport` for the async client."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.answers: list[Answer] = []

    async def handle_async_request(self, request):
        response = await super().handle_async_request(request)
        self.answers.append(
            Answer(request.method, request.url.path, response.status_code, dict(response.headers))
        )
        return response
