"""The client: one ``httpx.Client`` with the token, every operation of the API (see
:mod:`goldset_client._operations`), retries with backoff, iterators over paginated lists, the CI
flow (push answers, freeze, download a version, score a run) and problem+json errors raised as
typed exceptions."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import httpx

from goldset_client._operations import (
    Call,
    FileLike,
    Operations,
    ProgressCallback,
    Records,
    api_prefix,
    operation,
)
from goldset_client._retry import FirstTryWait, RetryPolicy, key_still_running
from goldset_client.errors import (
    ChecksumMismatch,
    GoldsetClientError,
    ImportRejected,
    JobFailed,
    Problem,
    ProblemItem,
    TransportError,
    WaitTimeout,
    error_for,
)
from goldset_client.models import (
    Download,
    ImportResult,
    Progress,
    ScoreResult,
    VersionInfo,
)

T = TypeVar("T")
LATEST = "latest"
USER_AGENT = "goldset-client"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class GoldsetClient(Operations):
    """``GoldsetClient("https://goldset.example.org", token)``; use it as a context manager or
    call :meth:`close`. ``project="customer-bot"`` sends every call to that project
    (``/api/v1/projects/customer-bot/…``; without it, the server's default project). ``poll_interval`` is how often a waiting call asks for a job's status;
    ``retry`` says when a request is tried again (429/503 after ``Retry-After``, connection
    errors; :data:`goldset_client.NO_RETRY` never)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 60.0,
        poll_interval: float = 0.5,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        project: str | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.project = project
        self.poll_interval = poll_interval
        self.retry = retry or RetryPolicy()
        self._patience = timeout  # how long a write waits for its first try still running
        self._http = httpx.Client(
            base_url=api_prefix(self.base_url, project),
            headers=_headers(token),
            timeout=timeout,
            transport=transport,
        )
        self._closing = threading.Event()

    def close(self) -> None:
        self._closing.set()  # a retry or a job wait in another thread ends now
        self._http.close()

    def _pause(self, seconds: float) -> None:
        """Wait before a retry or the next poll, or until the client is closed (then raise)."""
        if self._closing.wait(seconds):
            raise TransportError(f"{self.base_url}: the client was closed while waiting")

    def __enter__(self) -> GoldsetClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the transport

    def _run(self, call: Call) -> Any:
        if call.paginated:
            return self._pages(call)
        response = self._send(call)
        return call.parse(response.json() if response.content else None)

    def _pages(self, call: Call) -> Iterator[Any]:
        url: str | None = call.path
        params: dict[str, Any] | None = call.params
        while url:
            body = self._send(call, url=url, params=params).json()
            for row in body.get("results") or []:
                yield call.parse(row)
            url, params = body.get("next"), None

    def _send(self, call: Call, *, url: str | None = None, params=None, stream=False):
        """One logical request, tried again as :attr:`retry` allows; raises the typed error."""
        headers = _key_header(call)
        first_try = FirstTryWait(patience=self._patience)
        attempt = 0
        while True:
            attempt += 1
            request = self._http.build_request(
                call.method,
                url or call.path,
                params=call.params if url is None else params,
                json=call.json,
                data=call.data,
                files=_files(call),
                headers=headers,
            )
            try:
                response = self._http.send(request, stream=stream)
            except httpx.TransportError as exc:
                wait = self.retry.wait(attempt)
                if wait is None:
                    raise TransportError(f"{self.base_url}: {exc}") from exc
                self._pause(wait)
                continue
            if response.status_code in self.retry.statuses:
                wait = self.retry.wait(attempt, response.headers.get("Retry-After"))
                if wait is not None:
                    response.close()
                    self._pause(wait)
                    continue
            if response.status_code == 409 and not stream:
                response.read()
                if key_still_running(response, sent_key=bool(headers)):
                    wait = first_try.next_wait(self.retry)
                    if wait is not None:
                        attempt -= 1  # waiting for the first try's answer spends no retry
                        response.close()
                        self._pause(wait)
                        continue
            if response.status_code >= 400:
                if stream:
                    response.read()
                    response.close()
                raise _error(response)
            return response

    # ------------------------------------------------------------------ gold versions

    def latest_version(self) -> VersionInfo | None:
        """The newest frozen gold version, or None when nothing is frozen yet."""
        return next(iter(self.list_versions(page_size=1)), None)

    @operation("versions_retrieve")
    def get_version(self, version: int | str) -> VersionInfo:
        """A gold version (with its manifest) by number (``7``, ``"v7"``), tag
        (``"release-2026q4"``) or ``"latest"``."""
        ref = version_ref(version)
        return self._run(
            Call("versions_retrieve", "GET", f"versions/{ref}/", parse=VersionInfo.from_json)
        )

    @operation("versions_download_retrieve")
    def download_version(
        self,
        version: int | str,
        fmt: str = "gold_jsonl",
        dest: str | os.PathLike = ".",
        *,
        progress: ProgressCallback | None = None,
    ) -> Download:
        """Download a version's file (``gold_jsonl``, ``unrag_json``, ``probe_questions``,
        ``probe_packets``, ``adjudication``, ``trec_qrels``, ``manifest``) to ``dest`` (a file, or a directory to
        keep the server's file name). ``version`` is a number, a tag or ``"latest"`` (a tag is
        read once, so the file is that of one version even if the tag moves meanwhile). The
        bytes are hashed as they arrive and checked against the ``X-Checksum-SHA256`` header;
        on a mismatch nothing is left at ``dest`` and :class:`ChecksumMismatch` is raised.
        ``progress`` gets the bytes received."""
        number = self._version_number(version)
        call = Call("versions_download_retrieve", "GET", f"versions/{number}/download/{fmt}/")
        response = self._send(call, stream=True)
        try:
            target = _target(response, Path(dest), number, fmt)
            with _Receiver(response, target, number, fmt, progress) as receiver:
                for chunk in response.iter_bytes():
                    receiver.write(chunk)
            return receiver.download
        except httpx.TransportError as exc:
            raise TransportError(f"{self.base_url}: {exc}") from exc
        finally:
            response.close()

    # ------------------------------------------------------------------ imports, waited for

    def push_answers(
        self,
        path_or_records: FileLike | Records,
        *,
        wait: bool = True,
        timeout: float = 300.0,
        progress: ProgressCallback | None = None,
    ) -> ImportResult:
        """Import answer logs (JSONL, one answer record per line; a path, bytes, a binary file or
        an iterable of dicts) as a background job (admins, write token). With ``wait`` it
        returns once imported and raises :class:`ImportRejected` (every problem with its line
        and field; nothing stored) or :class:`JobFailed`."""
        job = self.import_answers(path_or_records, progress=progress)
        return self.wait_for_import(job.id, timeout=timeout, progress=progress) if wait else job

    def push_questions(
        self,
        path_or_records: FileLike | Records,
        *,
        wait: bool = True,
        timeout: float = 300.0,
        progress: ProgressCallback | None = None,
    ) -> ImportResult:
        """Import questions with their gold evidence packets (JSONL), like :meth:`push_answers`."""
        job = self.import_questions(path_or_records, progress=progress)
        return self.wait_for_import(job.id, timeout=timeout, progress=progress) if wait else job

    def wait_for_import(
        self, import_id: int, *, timeout: float = 300.0, progress: ProgressCallback | None = None
    ) -> ImportResult:
        """Poll an import job until it ends; raises ImportRejected / JobFailed / WaitTimeout.
        ``progress`` gets the job's percent at each poll."""
        job = self._poll(
            lambda: self.get_import(import_id),
            lambda j: j.finished,
            timeout=timeout,
            what=f"import #{import_id}",
            report=_reporter(progress, "import"),
        )
        return finished_import(job)

    # ------------------------------------------------------------------ scoring, waited for

    def score_run(
        self,
        version: int | str,
        run_file: FileLike | Records,
        *,
        name: str = "",
        k: int = 10,
        wait: bool = True,
        timeout: float = 600.0,
        progress: ProgressCallback | None = None,
    ) -> ScoreResult:
        """Score a run (a retrieval run in JSONL or TREC, or an answer log) against a frozen
        gold version (a number, a tag such as ``"release-2026q4"``, or ``"latest"``, resolved
        by the server when it receives the run; admins, write token). The upload is validated
        in the background first (:class:`ImportRejected` with line and field when it is bad);
        then the scoring job runs. With ``wait`` this returns the finished job, with its
        aggregates and, for an answer log, the release gate; without, the job as queued.
        Raises :class:`JobFailed` when scoring fails and :class:`WaitTimeout` after
        ``timeout`` seconds in all."""
        deadline = time.monotonic() + timeout
        queued = self.submit_run(version_ref(version), run_file, name=name, k=k, progress=progress)
        imported = self.wait_for_import(
            queued.id, timeout=max(deadline - time.monotonic(), 0.0), progress=progress
        )
        job_id = int(imported.summary["scoring_job"])
        reused = bool(imported.summary.get("reused"))
        if not wait:
            return _reused(self.get_job(job_id), reused)
        result = self.wait_for_job(
            job_id, timeout=max(deadline - time.monotonic(), 0.0), progress=progress
        )
        return _reused(result, reused)

    def wait_for_job(
        self, job_id: int, *, timeout: float = 600.0, progress: ProgressCallback | None = None
    ) -> ScoreResult:
        """Poll a scoring job until it ends; :class:`JobFailed` unless it succeeded."""
        result = self._poll(
            lambda: self.get_job(job_id),
            lambda r: r.finished,
            timeout=timeout,
            what=f"scoring job #{job_id}",
            report=_reporter(progress, "scoring"),
        )
        return finished_job(result)

    # ------------------------------------------------------------------ plumbing

    def _version_number(self, version: int | str) -> int:
        ref = version_ref(version)
        return ref if isinstance(ref, int) else self.get_version(ref).number

    def _poll(
        self, fetch: Callable[[], T], done: Callable[[T], bool], *, timeout, what, report=None
    ) -> T:
        deadline = time.monotonic() + timeout
        while True:
            data = fetch()
            if report:
                report(data)
            if done(data):
                return data
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"{what} did not finish within {timeout:.0f} s")
            self._pause(min(self.poll_interval, max(deadline - time.monotonic(), 0.0)))


# ---------------------------------------------------------------------- shared with the async client


def _headers(token: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }


def _key_header(call: Call) -> dict[str, str]:
    """A write (POST, PUT, PATCH, DELETE) carries an Idempotency-Key (the caller's, or a fresh
    one for this call, the same for each of its retries): a retry whose first try was applied
    gets that try's answer, so nothing is created or changed twice."""
    if call.method not in WRITES:
        return {}
    return {"Idempotency-Key": call.idempotency_key or uuid.uuid4().hex}


def _files(call: Call):
    if not call.files:
        return None
    return {
        name: (upload.filename, upload.reader(call.progress), "application/octet-stream")
        for name, upload in call.files.items()
    }


def _error(response: httpx.Response):
    try:
        body = response.json()
    except ValueError:
        body = response.text
    return error_for(response.status_code, body, response.headers)


def _reporter(progress: ProgressCallback | None, stage: str):
    if progress is None:
        return None
    return lambda job: progress(Progress(stage, int(job.progress), 100))


def _reused(result: ScoreResult, reused: bool) -> ScoreResult:
    return replace(result, reused=reused)


def is_latest(version: int | str) -> bool:
    return isinstance(version, str) and version.strip().lower() == LATEST


_NUMBER = re.compile(r"[vV]?([0-9]+)")
_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def version_ref(version: int | str) -> int | str:
    """What the API is sent for ``version``: the number for ``7`` or ``"v7"``, else the tag
    name or ``"latest"`` as given (the server resolves it); GoldsetClientError for anything
    that can name no version."""
    if isinstance(version, int) and not isinstance(version, bool):
        if version < 1:
            raise GoldsetClientError(f"a version number is positive, not {version!r}")
        return version
    text = str(version).strip()
    number = _NUMBER.fullmatch(text)
    if number and int(number.group(1)) >= 1:
        return int(number.group(1))
    if not isinstance(version, str) or number or not _TAG.fullmatch(text):
        raise GoldsetClientError(
            f"a version is a number (3, v3), a tag or 'latest', not {version!r}"
        )
    return text


def version_number(version: int | str) -> int:
    ref = version_ref(version)
    if not isinstance(ref, int):
        raise GoldsetClientError(f"a version number is 3 or v3, not {version!r}")
    return ref


def finished_import(job: ImportResult) -> ImportResult:
    if job.status == "rejected":
        raise ImportRejected(
            Problem(
                status=422,
                title="Import rejected",
                detail=job.message or "the file was rejected; nothing was imported",
                errors=tuple(ProblemItem.from_json(e) for e in job.errors),
            )
        )
    if job.status == "failed":
        raise JobFailed(f"import #{job.id} failed: {job.message}")
    return job


def finished_job(result: ScoreResult) -> ScoreResult:
    if result.status != "succeeded":
        raise JobFailed(f"scoring job #{result.job_id} {result.status}: {result.error}")
    return result


def _target(response: httpx.Response, dest: Path, number: int, fmt: str) -> Path:
    if dest.is_dir():
        return dest / _filename(response, f"goldset-v{number}-{fmt}")
    return dest


class _Receiver:
    """Writes a download to a temporary file beside ``target``, hashing as it goes; renamed to
    ``target`` only when the sha256 equals the ``X-Checksum-SHA256`` header."""

    def __init__(self, response, target: Path, number: int, fmt: str, progress):
        self.expected = response.headers.get("X-Checksum-SHA256", "").lower()
        if not self.expected:
            raise ChecksumMismatch("the server sent no X-Checksum-SHA256 header")
        length = response.headers.get("Content-Length")
        self.total = int(length) if length and length.isdigit() else None
        self.target, self.number, self.fmt, self.progress = target, number, fmt, progress
        self.digest, self.size = hashlib.sha256(), 0

    def __enter__(self) -> _Receiver:
        self.target.parent.mkdir(parents=True, exist_ok=True)
        fd, self.partial = tempfile.mkstemp(
            dir=self.target.parent, prefix=".goldset-", suffix=".part"
        )
        self.out = os.fdopen(fd, "wb")
        return self

    def write(self, chunk: bytes) -> None:
        self.digest.update(chunk)
        self.size += len(chunk)
        self.out.write(chunk)
        if self.progress is not None:
            self.progress(Progress("download", self.size, self.total))

    def __exit__(self, exc_type, *exc: object) -> None:
        self.out.close()
        try:
            if exc_type is None:
                received = self.digest.hexdigest()
                if received != self.expected:
                    raise ChecksumMismatch(
                        f"v{self.number} {self.fmt}: received sha256 {received}, the server "
                        f"announced {self.expected}"
                    )
                os.replace(self.partial, self.target)
        finally:
            if os.path.exists(self.partial):
                os.unlink(self.partial)

    @property
    def download(self) -> Download:
        return Download(
            path=self.target, sha256=self.expected, size=self.size, version=self.number,
            fmt=self.fmt,
        )  # fmt: skip


_FILENAME = re.compile(r'filename="([^"/\\]+)"')


def _filename(response: httpx.Response, fallback: str) -> str:
    match = _FILENAME.search(response.headers.get("Content-Disposition", ""))
    return match.group(1) if match else fallback
