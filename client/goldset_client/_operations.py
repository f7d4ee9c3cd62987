"""Every operation of the API's schema, once: each method builds a :class:`Call` (method, path,
parameters, body, how to read the answer) and hands it to the client's ``_run``, which the sync
client runs at once and the async client awaits; a paginated call becomes an iterator that
follows ``next``. ``@operation("id")`` names the schema's ``operationId`` the method covers (a
test compares them with the live schema)."""

from __future__ import annotations

import io
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from goldset_client.models import (
    Alert,
    Block,
    BlockVersion,
    Comparison,
    Document,
    Domain,
    FreezeResult,
    ImportResult,
    Progress,
    Project,
    QueryResult,
    ScoreResult,
    Snapshot,
    Triple,
    VersionDiff,
    VersionInfo,
)

Records = Iterable[Mapping[str, Any]]
FileLike = str | os.PathLike | bytes | IO[bytes]
ProgressCallback = Callable[[Progress], None]


def operation(operation_id: str):
    """Mark a method as the client's form of the schema operation ``operation_id``."""

    def mark(method):
        method.operation_id = operation_id
        return method

    return mark


def operation_ids(cls) -> dict[str, str]:
    """``{operationId: method name}`` of a client class."""
    return {
        getattr(cls, name).operation_id: name
        for name in dir(cls)
        if not name.startswith("_") and hasattr(getattr(cls, name), "operation_id")
    }


@dataclass(frozen=True)
class Upload:
    """A file to send as multipart/form-data: its name and bytes (kept, so a retry resends)."""

    filename: str
    content: bytes

    def reader(self, progress: ProgressCallback | None) -> IO[bytes]:
        return _ProgressReader(self.content, progress)


class _ProgressReader(io.BytesIO):
    """The upload's bytes, reporting each chunk httpx reads as upload progress."""

    def __init__(self, content: bytes, progress: ProgressCallback | None):
        super().__init__(content)
        self._progress, self._total = progress, len(content)

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        if self._progress is not None and chunk:
            self._progress(Progress("upload", self.tell(), self._total))
        return chunk


@dataclass(frozen=True)
class Call:
    operation_id: str
    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    data: dict[str, str] | None = None
    files: dict[str, Upload] | None = None
    parse: Callable[[Any], Any] = lambda body: body
    paginated: bool = False
    idempotency_key: str | None = None
    progress: ProgressCallback | None = None


def payload(source: FileLike | Records, default_name: str) -> Upload:
    """The bytes to upload and a file name, from a path, bytes, a binary file or records."""
    if isinstance(source, bytes):
        return Upload(default_name, source)
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        return Upload(path.name, path.read_bytes())
    if hasattr(source, "read"):
        data = source.read()  # type: ignore[union-attr]
        name = Path(getattr(source, "name", "") or default_name).name
        return Upload(name, data.encode() if isinstance(data, str) else data)
    lines = (json.dumps(dict(record), ensure_ascii=False) + "\n" for record in source)
    return Upload(default_name, "".join(lines).encode("utf-8"))


def _query(**params: Any) -> dict[str, Any]:
    """Query parameters without the unset ones; datetimes as RFC 3339."""
    out = {}
    for name, value in params.items():
        if value is None or value == "":
            continue
        out[name] = value.isoformat() if isinstance(value, datetime) else value
    return out


def _form(**fields: Any) -> dict[str, str]:
    out = {}
    for name, value in fields.items():
        if value is None or value == "":
            continue
        out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _freeze_result(data: dict[str, Any]) -> FreezeResult:
    return FreezeResult(
        created=bool(data["created"]),
        detail=str(data.get("detail") or ""),
        version=VersionInfo.from_json(data["version"]),
    )


Since = datetime | str | None


def api_prefix(base_url: str, project: str | None) -> str:
    """The URL every call's path is relative to: the API's root, or a project's
    (``/api/v1/projects/<slug>/``); without a project the server addresses its default one."""
    root = f"{base_url}/api/v1/"
    if project is None:
        return root
    slug = project.strip().strip("/")
    if not slug or "/" in slug:
        raise ValueError(f"project: {project!r} is not a project slug")
    return f"{root}projects/{slug}/"


class Operations(ABC):
    """The API's 29 operations. Lists return iterators over every page (``page_size`` rows a
    request); ``updated_since`` (a datetime or RFC 3339 text) gives the rows created or changed
    since then, for incremental sync. Every call but :meth:`list_projects` goes to the client's
    project (``project=``), or to the server's default project without one."""

    base_url: str

    @abstractmethod
    def _run(self, call: Call) -> Any:
        """Send ``call`` and decode its answer (the sync client returns the value, the async
        client an awaitable of it)."""

    # ------------------------------------------------------------------ projects

    @operation("projects_list")
    def list_projects(self):
        """The projects the token's owner belongs to (the token's one project, for a token
        limited to one), each with the owner's role in it."""
        return self._run(
            Call("projects_list", "GET", f"{self.base_url}/api/v1/projects/",
                 parse=lambda rows: [Project.from_json(r) for r in rows])
        )  # fmt: skip

    # ------------------------------------------------------------------ corpus

    @operation("domains_list")
    def list_domains(self, *, page_size: int | None = None):
        return self._run(
            Call("domains_list", "GET", "domains/", _query(page_size=page_size),
                 parse=Domain.from_json, paginated=True)
        )  # fmt: skip

    @operation("documents_list")
    def list_documents(
        self, *, domain: str = "", q: str = "", updated_since: Since = None,
        page_size: int | None = None,
    ):  # fmt: skip
        params = _query(domain=domain, q=q, updated_since=updated_since, page_size=page_size)
        return self._run(
            Call("documents_list", "GET", "documents/", params, parse=Document.from_json,
                 paginated=True)
        )  # fmt: skip

    @operation("documents_retrieve")
    def get_document(self, document_id: str):
        return self._run(
            Call("documents_retrieve", "GET", f"documents/{document_id}/",
                 parse=Document.from_json)
        )  # fmt: skip

    @operation("documents_blocks_list")
    def list_document_blocks(self, document_id: str, *, page_size: int | None = None):
        return self._run(
            Call("documents_blocks_list", "GET", f"documents/{document_id}/blocks/",
                 _query(page_size=page_size), parse=Block.from_json, paginated=True)
        )  # fmt: skip

    @operation("blocks_versions_list")
    def list_block_versions(
        self, block_id: str, *, updated_since: Since = None, page_size: int | None = None
    ):
        return self._run(
            Call("blocks_versions_list", "GET", f"blocks/{block_id}/versions/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=BlockVersion.from_json, paginated=True)
        )  # fmt: skip

    @operation("blocks_versions_retrieve")
    def get_block_version(self, block_id: str, version: int):
        return self._run(
            Call("blocks_versions_retrieve", "GET", f"blocks/{block_id}/versions/{version}/",
                 parse=BlockVersion.from_json)
        )  # fmt: skip

    # ------------------------------------------------------------------ triples

    @operation("triples_list")
    def list_triples(
        self, *, state: str = "", updated_since: Since = None, page_size: int | None = None
    ):
        return self._run(
            Call("triples_list", "GET", "triples/",
                 _query(state=state, updated_since=updated_since, page_size=page_size),
                 parse=Triple.from_json, paginated=True)
        )  # fmt: skip

    @operation("triples_retrieve")
    def get_triple(self, triple_id: str):
        return self._run(
            Call("triples_retrieve", "GET", f"triples/{triple_id}/", parse=Triple.from_json)
        )

    # ------------------------------------------------------------------ imports (queued)

    def _upload(self, operation_id, path, source, default_name, *, fields=None, key=None,
                progress=None) -> Any:  # fmt: skip
        return self._run(
            Call(operation_id, "POST", path, data=_form(**(fields or {})),
                 files={"file": payload(source, default_name)}, parse=ImportResult.from_json,
                 idempotency_key=key, progress=progress)
        )  # fmt: skip

    @operation("triples_import_create")
    def import_triples(
        self, source: FileLike | Records, *, on_behalf: bool = False,
        idempotency_key: str | None = None, progress: ProgressCallback | None = None,
    ):  # fmt: skip
        """Queue an import of triples (gold JSONL shape); returns the import job."""
        return self._upload("triples_import_create", "triples/import/", source, "triples.jsonl",
                            fields={"on_behalf": on_behalf}, key=idempotency_key,
                            progress=progress)  # fmt: skip

    @operation("questions_import_create")
    def import_questions(
        self, source: FileLike | Records, *, idempotency_key: str | None = None,
        progress: ProgressCallback | None = None,
    ):  # fmt: skip
        """Queue an import of questions with gold evidence packets; returns the import job."""
        return self._upload("questions_import_create", "questions/import/", source,
                            "questions.jsonl", key=idempotency_key, progress=progress)  # fmt: skip

    @operation("answers_import_create")
    def import_answers(
        self, source: FileLike | Records, *, idempotency_key: str | None = None,
        progress: ProgressCallback | None = None,
    ):  # fmt: skip
        """Queue an import of answer logs; returns the import job."""
        return self._upload("answers_import_create", "answers/import/", source, "answers.jsonl",
                            key=idempotency_key, progress=progress)  # fmt: skip

    @operation("evaluators_outputs_create")
    def import_evaluator_outputs(
        self, evaluator_id: int, source: FileLike | Records, *,
        idempotency_key: str | None = None, progress: ProgressCallback | None = None,
    ):  # fmt: skip
        """Queue an import of one evaluator's outputs; returns the import job."""
        return self._upload("evaluators_outputs_create", f"evaluators/{evaluator_id}/outputs/",
                            source, "outputs.jsonl", key=idempotency_key,
                            progress=progress)  # fmt: skip

    @operation("imports_create")
    def create_import(
        self, kind: str, source: FileLike | Records, *, domain: str = "",
        on_behalf: bool | None = None, version: int | None = None, name: str = "",
        k: int | None = None, idempotency_key: str | None = None,
        progress: ProgressCallback | None = None,
    ):  # fmt: skip
        """Queue an import of any kind (corpus, triples, questions, answers, run)."""
        fields = {"kind": kind, "domain": domain, "on_behalf": on_behalf, "version": version,
                  "name": name, "k": k}  # fmt: skip
        return self._upload("imports_create", "imports/", source, f"{kind}.jsonl",
                            fields=fields, key=idempotency_key, progress=progress)  # fmt: skip

    @operation("imports_retrieve")
    def get_import(self, import_id: int):
        return self._run(
            Call("imports_retrieve", "GET", f"imports/{import_id}/", parse=ImportResult.from_json)
        )

    @operation("imports_cancel_create")
    def cancel_import(self, import_id: int, *, idempotency_key: str | None = None):
        """Cancel a queued or running import (:class:`Conflict` when it has ended)."""
        return self._run(
            Call("imports_cancel_create", "POST", f"imports/{import_id}/cancel/",
                 parse=ImportResult.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("imports_retry_create")
    def retry_import(self, import_id: int, *, idempotency_key: str | None = None):
        """Queue a failed or cancelled import again (:class:`Conflict` otherwise)."""
        return self._run(
            Call("imports_retry_create", "POST", f"imports/{import_id}/retry/",
                 parse=ImportResult.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ gold versions

    @operation("versions_list")
    def list_versions(self, *, updated_since: Since = None, page_size: int | None = None):
        """Gold versions, newest first."""
        return self._run(
            Call("versions_list", "GET", "versions/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=VersionInfo.from_json, paginated=True)
        )  # fmt: skip

    @operation("versions_diff_retrieve")
    def diff_versions(self, a: int, b: int):
        return self._run(
            Call("versions_diff_retrieve", "GET", "versions/diff/", {"a": a, "b": b},
                 parse=VersionDiff.from_json)
        )  # fmt: skip

    @operation("versions_freeze_create")
    def freeze(
        self, *, domain: str = "", tier: str = "", source: str = "", public_only: bool = False,
        working_slice: str = "", include_superseded: bool = False, note: str = "",
        idempotency_key: str | None = None,
    ):  # fmt: skip
        """Freeze the gold triples these filters select as the next version (admins, write
        token). When the selection equals the latest version nothing is created and the result
        says so (``created`` False) with that version: calling it twice is harmless."""
        body = {"domain": domain, "tier": tier, "source": source, "public_only": public_only,
                "working_slice": working_slice, "include_superseded": include_superseded,
                "note": note}  # fmt: skip
        return self._run(
            Call("versions_freeze_create", "POST", "versions/freeze/", json=body,
                 parse=_freeze_result, idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ scoring

    @operation("jobs_list")
    def list_jobs(self, *, updated_since: Since = None, page_size: int | None = None):
        """Scoring jobs, newest first (``updated_since``: created, started or finished since)."""
        return self._run(
            Call("jobs_list", "GET", "jobs/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=ScoreResult.from_json, paginated=True)
        )  # fmt: skip

    @operation("jobs_create")
    def submit_run(
        self, version: int, run: FileLike | Records | list[dict[str, Any]], *, name: str = "",
        k: int = 10, as_json: bool = False, idempotency_key: str | None = None,
        progress: ProgressCallback | None = None,
    ):  # fmt: skip
        """Queue a run to score against gold version ``version`` (a number): as a file
        (multipart), or with ``as_json`` a list of run lines as a JSON body. Returns the import
        job that validates it; its summary names the scoring job."""
        if as_json:
            body = {"version": version, "name": name, "k": k, "run": list(run)}  # type: ignore[arg-type]
            return self._run(
                Call("jobs_create", "POST", "jobs/", json=body, parse=ImportResult.from_json,
                     idempotency_key=idempotency_key)
            )  # fmt: skip
        return self._upload("jobs_create", "jobs/", run, "run.jsonl",
                            fields={"version": version, "name": name, "k": k},
                            key=idempotency_key, progress=progress)  # fmt: skip

    @operation("jobs_retrieve")
    def get_job(self, job_id: int):
        return self._run(
            Call("jobs_retrieve", "GET", f"jobs/{job_id}/", parse=ScoreResult.from_json)
        )

    @operation("jobs_queries_list")
    def list_job_queries(self, job_id: int, *, page_size: int | None = None):
        return self._run(
            Call("jobs_queries_list", "GET", f"jobs/{job_id}/queries/",
                 _query(page_size=page_size), parse=QueryResult.from_json, paginated=True)
        )  # fmt: skip

    @operation("jobs_compare_retrieve")
    def compare_jobs(self, job_ids: Iterable[int], *, method: str = ""):
        """Paired comparison of succeeded jobs on one gold version (:class:`Unprocessable`
        when they are not comparable)."""
        return self._run(
            Call("jobs_compare_retrieve", "GET", "jobs/compare/",
                 _query(jobs=list(job_ids), method=method), parse=Comparison.from_json)
        )  # fmt: skip

    # ------------------------------------------------------------------ agreement

    @operation("agreement_list")
    def list_agreement(
        self, *, protocol: str = "", axis: str = "", metric: str = "", tier: str = "",
        updated_since: Since = None, page_size: int | None = None,
    ):  # fmt: skip
        params = _query(protocol=protocol, axis=axis, metric=metric, tier=tier,
                        updated_since=updated_since, page_size=page_size)  # fmt: skip
        return self._run(
            Call("agreement_list", "GET", "agreement/", params, parse=Snapshot.from_json,
                 paginated=True)
        )  # fmt: skip

    @operation("alerts_list")
    def list_alerts(self):
        return self._run(
            Call("alerts_list", "GET", "alerts/",
                 parse=lambda rows: [Alert.from_json(r) for r in rows])
        )  # fmt: skip
