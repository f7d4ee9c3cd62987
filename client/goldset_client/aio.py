"""The async client: the same operations as :class:`~goldset_client.GoldsetClient` on an
``httpx.AsyncClient``; each returns an awaitable, and each list an async iterator over every page.

    async with AsyncGoldsetClient(url, token) as gs:
        async for triple in gs.list_triples(state="gold"):
            ...
        result = await gs.score_run("latest", "run.jsonl")
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
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
from goldset_client.client import (
    _error,
    _files,
    _headers,
    _key_header,
    _Receiver,
    _reporter,
    _reused,
    _target,
    finished_import,
    finished_job,
    version_ref,
)
from goldset_client.errors import TransportError, WaitTimeout
from goldset_client.models import Download, ImportResult, ScoreResult, VersionInfo

T = TypeVar("T")


class AsyncGoldsetClient(Operations):
    """``AsyncGoldsetClient(url, token, project=None)``, used with ``async with`` (or ``await
    aclose()``); ``project`` as for :class:`~goldset_client.GoldsetClient`."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 60.0,
        poll_interval: float = 0.5,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        project: str | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.project = project
        self.poll_interval = poll_interval
        self.retry = retry or RetryPolicy()
        self._patience = timeout  # how long a write waits for its first try still running
        self._http = httpx.AsyncClient(
            base_url=api_prefix(self.base_url, project),
            headers=_headers(token),
            timeout=timeout,
            transport=transport,
        )
        self._closing = asyncio.Event()

    async def aclose(self) -> None:
        self._closing.set()  # a retry or a job wait in another task ends now
        await self._http.aclose()

    async def _pause(self, seconds: float) -> None:
        """Wait before a retry or the next poll, or until the client is closed (then raise)."""
        try:
            await asyncio.wait_for(self._closing.wait(), timeout=seconds)
        except TimeoutError:
            return
        raise TransportError(f"{self.base_url}: the client was closed while waiting")

    async def __aenter__(self) -> AsyncGoldsetClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ the transport

    def _run(self, call: Call) -> Any:
        if call.paginated:
            return self._pages(call)
        return self._one(call)

    async def _one(self, call: Call) -> Any:
        response = await self._send(call)
        return call.parse(response.json() if response.content else None)

    async def _pages(self, call: Call) -> AsyncIterator[Any]:
        url: str | None = call.path
        params: dict[str, Any] | None = call.params
        while url:
            body = (await self._send(call, url=url, params=params)).json()
            for row in body.get("results") or []:
                yield call.parse(row)
            url, params = body.get("next"), None

    async def _send(self, call: Call, *, url: str | None = None, params=None, stream=False):
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
                response = await self._http.send(request, stream=stream)
            except httpx.TransportError as exc:
                wait = self.retry.wait(attempt)
                if wait is None:
                    raise TransportError(f"{self.base_url}: {exc}") from exc
                await self._pause(wait)
                continue
            if response.status_code in self.retry.statuses:
                wait = self.retry.wait(attempt, response.headers.get("Retry-After"))
                if wait is not None:
                    await response.aclose()
                    await self._pause(wait)
                    continue
            if response.status_code == 409 and not stream:
                await response.aread()
                if key_still_running(response, sent_key=bool(headers)):
                    wait = first_try.next_wait(self.retry)
                    if wait is not None:
                        attempt -= 1  # waiting for the first try's answer spends no retry
                        await response.aclose()
                        await self._pause(wait)
                        continue
            if response.status_code >= 400:
                if stream:
                    await response.aread()
                    await response.aclose()
                raise _error(response)
            return response

    # ------------------------------------------------------------------ gold versions

    async def latest_version(self) -> VersionInfo | None:
        async for version in self.list_versions(page_size=1):
            return version
        return None

    @operation("versions_retrieve")
    async def get_version(self, version: int | str) -> VersionInfo:
        """As :meth:`GoldsetClient.get_version`: a number, a tag or ``"latest"``."""
        ref = version_ref(version)
        return await self._run(
            Call("versions_retrieve", "GET", f"versions/{ref}/", parse=VersionInfo.from_json)
        )

    @operation("versions_download_retrieve")
    async def download_version(
        self,
        version: int | str,
        fmt: str = "gold_jsonl",
        dest: str | os.PathLike = ".",
        *,
        progress: ProgressCallback | None = None,
    ) -> Download:
        """As :meth:`GoldsetClient.download_version`: checked against X-Checksum-SHA256."""
        number = await self._version_number(version)
        call = Call("versions_download_retrieve", "GET", f"versions/{number}/download/{fmt}/")
        response = await self._send(call, stream=True)
        try:
            target = _target(response, Path(dest), number, fmt)
            with _Receiver(response, target, number, fmt, progress) as receiver:
                async for chunk in response.aiter_bytes():
                    receiver.write(chunk)
            return receiver.download
        except httpx.TransportError as exc:
            raise TransportError(f"{self.base_url}: {exc}") from exc
        finally:
            await response.aclose()

    # ------------------------------------------------------------------ waits

    async def push_answers(
        self, path_or_records: FileLike | Records, *, wait: bool = True, timeout: float = 300.0,
        progress: ProgressCallback | None = None,
    ) -> ImportResult:  # fmt: skip
        job = await self.import_answers(path_or_records, progress=progress)
        if not wait:
            return job
        return await self.wait_for_import(job.id, timeout=timeout, progress=progress)

    async def push_questions(
        self, path_or_records: FileLike | Records, *, wait: bool = True, timeout: float = 300.0,
        progress: ProgressCallback | None = None,
    ) -> ImportResult:  # fmt: skip
        job = await self.import_questions(path_or_records, progress=progress)
        if not wait:
            return job
        return await self.wait_for_import(job.id, timeout=timeout, progress=progress)

    async def wait_for_import(
        self, import_id: int, *, timeout: float = 300.0, progress: ProgressCallback | None = None
    ) -> ImportResult:
        job = await self._poll(
            lambda: self.get_import(import_id),
            lambda j: j.finished,
            timeout=timeout,
            what=f"import #{import_id}",
            report=_reporter(progress, "import"),
        )
        return finished_import(job)

    async def wait_for_job(
        self, job_id: int, *, timeout: float = 600.0, progress: ProgressCallback | None = None
    ) -> ScoreResult:
        result = await self._poll(
            lambda: self.get_job(job_id),
            lambda r: r.finished,
            timeout=timeout,
            what=f"scoring job #{job_id}",
            report=_reporter(progress, "scoring"),
        )
        return finished_job(result)

    async def score_run(
        self, version: int | str, run_file: FileLike | Records, *, name: str = "", k: int = 10,
        wait: bool = True, timeout: float = 600.0, progress: ProgressCallback | None = None,
    ) -> ScoreResult:  # fmt: skip
        """As :meth:`GoldsetClient.score_run`."""
        deadline = time.monotonic() + timeout
        queued = await self.submit_run(
            version_ref(version), run_file, name=name, k=k, progress=progress
        )
        imported = await self.wait_for_import(
            queued.id, timeout=max(deadline - time.monotonic(), 0.0), progress=progress
        )
        job_id = int(imported.summary["scoring_job"])
        reused = bool(imported.summary.get("reused"))
        if not wait:
            return _reused(await self.get_job(job_id), reused)
        result = await self.wait_for_job(
            job_id, timeout=max(deadline - time.monotonic(), 0.0), progress=progress
        )
        return _reused(result, reused)

    async def _version_number(self, version: int | str) -> int:
        ref = version_ref(version)
        return ref if isinstance(ref, int) else (await self.get_version(ref)).number

    async def _poll(
        self,
        fetch: Callable[[], Awaitable[T]],
        done: Callable[[T], bool],
        *,
        timeout,
        what,
        report=None,
    ) -> T:
        deadline = time.monotonic() + timeout
        while True:
            data = await fetch()
            if report:
                report(data)
            if done(data):
                return data
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"{what} did not finish within {timeout:.0f} s")
            await self._pause(min(self.poll_interval, max(deadline - time.monotonic(), 0.0)))
