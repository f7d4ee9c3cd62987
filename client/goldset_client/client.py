"""The client: one ``httpx.Client`` with the token, methods for the CI flow (push answers,
freeze, download a version, score a run) and problem+json errors raised as typed exceptions."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

import httpx

from goldset_client.errors import (
    ChecksumMismatch,
    GoldsetClientError,
    ImportRejected,
    JobFailed,
    NotFound,
    Problem,
    ProblemItem,
    TransportError,
    WaitTimeout,
    error_for,
)
from goldset_client.models import (
    Download,
    FreezeResult,
    ImportResult,
    ScoreResult,
    VersionInfo,
)

Records = Iterable[Mapping[str, Any]]
FileLike = str | os.PathLike | bytes | IO[bytes]
T = TypeVar("T")
LATEST = "latest"


class GoldsetClient:
    """``GoldsetClient("https://goldset.example.org", token)``; use it as a context manager or
    call :meth:`close`. ``poll_interval`` is how often a waiting call asks for a job's status."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 60.0,
        poll_interval: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.poll_interval = poll_interval
        self._http = httpx.Client(
            base_url=f"{self.base_url}/api/v1/",
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GoldsetClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ gold versions

    def latest_version(self) -> VersionInfo | None:
        """The newest frozen gold version, or None when nothing is frozen yet."""
        page = self._json("GET", "versions/", params={"page_size": 1})
        results = page.get("results") or []
        return VersionInfo.from_json(results[0]) if results else None

    def get_version(self, version: int | str) -> VersionInfo:
        """A gold version by number, or ``"latest"``."""
        return VersionInfo.from_json(
            self._json("GET", f"versions/{self._version_number(version)}/")
        )

    def freeze(
        self,
        *,
        domain: str = "",
        tier: str = "",
        source: str = "",
        public_only: bool = False,
        working_slice: str = "",
        include_superseded: bool = False,
        note: str = "",
    ) -> FreezeResult:
        """Freeze the gold triples these filters select as the next version (admins, write
        token). When the selection equals the latest version nothing is created and the result
        says so (``created`` False) with that version: calling it twice is harmless."""
        body = {
            "domain": domain,
            "tier": tier,
            "source": source,
            "public_only": public_only,
            "working_slice": working_slice,
            "include_superseded": include_superseded,
            "note": note,
        }
        data = self._json("POST", "versions/freeze/", json=body)
        return FreezeResult(
            created=bool(data["created"]),
            detail=str(data.get("detail") or ""),
            version=VersionInfo.from_json(data["version"]),
        )

    def download_version(
        self, version: int | str, fmt: str = "gold_jsonl", dest: str | os.PathLike = "."
    ) -> Download:
        """Download a version's file (``gold_jsonl``, ``unrag_json``, ``probe_questions``,
        ``probe_packets``, ``adjudication``, ``trec_qrels``, ``manifest``) to ``dest`` (a file, or a directory to
        keep the server's file name). The bytes are hashed as they arrive and checked against
        the ``X-Checksum-SHA256`` header; on a mismatch nothing is left at ``dest`` and
        :class:`ChecksumMismatch` is raised."""
        number = self._version_number(version)
        try:
            return self._download(number, fmt, Path(dest))
        except httpx.TransportError as exc:
            raise TransportError(f"{self.base_url}: {exc}") from exc

    def _download(self, number: int, fmt: str, target: Path) -> Download:
        with self._http.stream("GET", f"versions/{number}/download/{fmt}/") as response:
            if response.status_code >= 400:
                response.read()
                raise self._error(response)
            expected = response.headers.get("X-Checksum-SHA256", "")
            if not expected:
                raise ChecksumMismatch("the server sent no X-Checksum-SHA256 header")
            if target.is_dir():
                target = target / _filename(response, f"goldset-v{number}-{fmt}")
            target.parent.mkdir(parents=True, exist_ok=True)
            digest, size = hashlib.sha256(), 0
            fd, partial = tempfile.mkstemp(dir=target.parent, prefix=".goldset-", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as out:
                    for chunk in response.iter_bytes():
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
                if digest.hexdigest() != expected.lower():
                    raise ChecksumMismatch(
                        f"v{number} {fmt}: received sha256 {digest.hexdigest()}, the server "
                        f"announced {expected}"
                    )
                os.replace(partial, target)
            finally:
                if os.path.exists(partial):
                    os.unlink(partial)
        return Download(path=target, sha256=expected.lower(), size=size, version=number, fmt=fmt)

    # ------------------------------------------------------------------ imports

    def push_answers(
        self, path_or_records: FileLike | Records, *, wait: bool = True, timeout: float = 300.0
    ) -> ImportResult:
        """Import answer logs (JSONL, one answer record per line; a path, bytes, a binary file or
        an iterable of dicts) as a background job (admins, write token). With ``wait`` it
        returns once imported and raises :class:`ImportRejected` (every problem with its line
        and field; nothing stored) or :class:`JobFailed`."""
        return self._import("answers/import/", path_or_records, "answers.jsonl", wait, timeout)

    def push_questions(
        self, path_or_records: FileLike | Records, *, wait: bool = True, timeout: float = 300.0
    ) -> ImportResult:
        """Import questions with their gold evidence packets (JSONL), like :meth:`push_answers`."""
        return self._import("questions/import/", path_or_records, "questions.jsonl", wait, timeout)

    def get_import(self, import_id: int) -> ImportResult:
        return ImportResult.from_json(self._json("GET", f"imports/{import_id}/"))

    def wait_for_import(self, import_id: int, *, timeout: float = 300.0) -> ImportResult:
        """Poll an import job until it ends; raises ImportRejected / JobFailed / WaitTimeout."""
        data = self._poll(
            lambda: self._json("GET", f"imports/{import_id}/"),
            lambda d: d.get("status") in ("succeeded", "rejected", "failed"),
            timeout=timeout,
            what=f"import #{import_id}",
        )
        return _finished_import(data)

    # ------------------------------------------------------------------ scoring

    def score_run(
        self,
        version: int | str,
        run_file: FileLike | Records,
        *,
        name: str = "",
        k: int = 10,
        wait: bool = True,
        timeout: float = 600.0,
    ) -> ScoreResult:
        """Score a run (a retrieval run in JSONL or TREC, or an answer log) against a frozen
        gold version (a number or ``"latest"``; admins, write token). The upload is validated
        in the background first (:class:`ImportRejected` with line and field when it is bad);
        then the scoring job runs. With ``wait`` this returns the finished job, with its
        aggregates and, for an answer log, the release gate; without, the job as queued.
        Raises :class:`JobFailed` when scoring fails and :class:`WaitTimeout` after
        ``timeout`` seconds in all."""
        deadline = time.monotonic() + timeout
        number = self._version_number(version)
        content, filename = _payload(run_file, "run.jsonl")
        response = self._request(
            "POST",
            "jobs/",
            data={"version": str(number), "name": name, "k": str(k)},
            files={"file": (filename, content, "application/octet-stream")},
        )
        imported = self.wait_for_import(
            int(response.json()["id"]), timeout=max(deadline - time.monotonic(), 0.0)
        )
        job_id = int(imported.summary["scoring_job"])
        reused = bool(imported.summary.get("reused"))
        if not wait:
            return ScoreResult.from_json(self._json("GET", f"jobs/{job_id}/"), reused=reused)
        data = self._poll(
            lambda: self._json("GET", f"jobs/{job_id}/"),
            lambda d: d.get("status") in ("succeeded", "failed", "cancelled"),
            timeout=max(deadline - time.monotonic(), 0.0),
            what=f"scoring job #{job_id}",
        )
        result = ScoreResult.from_json(data, reused=reused)
        if result.status != "succeeded":
            raise JobFailed(f"scoring job #{job_id} {result.status}: {result.error}")
        return result

    def get_job(self, job_id: int) -> ScoreResult:
        return ScoreResult.from_json(self._json("GET", f"jobs/{job_id}/"))

    # ------------------------------------------------------------------ plumbing

    def _version_number(self, version: int | str) -> int:
        if isinstance(version, str) and version.strip().lower() == LATEST:
            latest = self.latest_version()
            if latest is None:
                raise NotFound(Problem(404, "Not Found", "no gold version is frozen yet"))
            return latest.number
        text = str(version).strip().lower().removeprefix("v")
        if not text.isdigit() or int(text) < 1:
            raise GoldsetClientError(f"a version is a number (3, v3) or 'latest', not {version!r}")
        return int(text)

    def _import(self, path, source, default_name, wait, timeout) -> ImportResult:
        content, filename = _payload(source, default_name)
        response = self._request(
            "POST", path, files={"file": (filename, content, "application/octet-stream")}
        )
        job = ImportResult.from_json(response.json())
        if not wait:
            return job
        return self.wait_for_import(job.id, timeout=timeout)

    def _poll(self, fetch: Callable[[], T], done: Callable[[T], bool], *, timeout, what) -> T:
        deadline = time.monotonic() + timeout
        while True:
            data = fetch()
            if done(data):
                return data
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"{what} did not finish within {timeout:.0f} s")
            time.sleep(min(self.poll_interval, max(deadline - time.monotonic(), 0.0)))

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise TransportError(f"{self.base_url}: {exc}") from exc
        if response.status_code >= 400:
            raise self._error(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        return self._request(method, path, **kwargs).json()

    @staticmethod
    def _error(response: httpx.Response):
        try:
            body = response.json()
        except ValueError:
            body = response.text
        return error_for(response.status_code, body, response.headers)


def _finished_import(data: dict[str, Any]) -> ImportResult:
    job = ImportResult.from_json(data)
    if job.status == "rejected":
        raise ImportRejected(
            Problem(
                status=422,
                title="Import rejected",
                detail=job.message or "the file was rejected; nothing was imported",
                errors=tuple(ProblemItem.from_json(e) for e in data.get("errors") or []),
            )
        )
    if job.status == "failed":
        raise JobFailed(f"import #{job.id} failed: {job.message}")
    return job


def _payload(source: FileLike | Records, default_name: str) -> tuple[bytes, str]:
    """The bytes to upload and a file name, from a path, bytes, a binary file or records."""
    if isinstance(source, bytes):
        return source, default_name
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        return path.read_bytes(), path.name
    if hasattr(source, "read"):
        data = source.read()  # type: ignore[union-attr]
        name = Path(getattr(source, "name", "") or default_name).name
        return (data.encode() if isinstance(data, str) else data), name
    lines = (json.dumps(dict(record), ensure_ascii=False) + "\n" for record in source)
    return "".join(lines).encode("utf-8"), default_name


_FILENAME = re.compile(r'filename="([^"/\\]+)"')


def _filename(response: httpx.Response, fallback: str) -> str:
    match = _FILENAME.search(response.headers.get("Content-Disposition", ""))
    return match.group(1) if match else fallback
