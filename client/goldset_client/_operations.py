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
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import IO, Any, TypeVar

from goldset_client.errors import GoldsetClientError
from goldset_client.models import (
    Adjudication,
    Alert,
    BlindPair,
    Block,
    BlockVersion,
    CalibrationAnswer,
    CalibrationPair,
    Comparison,
    Document,
    Domain,
    FreezeResult,
    ImportResult,
    Label,
    LabelClaim,
    Member,
    OpenItem,
    PairAdjudication,
    PairJudgment,
    PairQualification,
    PairSkip,
    PairwiseAnalysis,
    PairwiseRun,
    PairwiseTask,
    Progress,
    Project,
    ProjectSetting,
    QualificationStatus,
    QueryResult,
    Review,
    ReviewClaim,
    SamplingRule,
    ScoreResult,
    Snapshot,
    Tag,
    Triple,
    VersionDiff,
    VersionInfo,
    WebhookDelivery,
    WebhookEndpoint,
)

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
Records = Iterable[Mapping[str, Any]]
FileLike = str | os.PathLike | bytes | IO[bytes]
ProgressCallback = Callable[[Progress], None]


def operation(operation_id: str) -> Callable[[F], F]:
    """Mark a method as the client's form of the schema operation ``operation_id`` (its
    signature and return type unchanged, for type checkers)."""

    def mark(method: F) -> F:
        method.operation_id = operation_id  # type: ignore[attr-defined]
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


# A TypeVar, not def _optional[T]: the client runs on Python 3.10.
def _optional(parse: Callable[[dict[str, Any]], T]) -> Callable[[Any], T | None]:  # noqa: UP047
    """``parse`` for an answer that may be empty (204: nothing to claim): None then."""
    return lambda body: parse(body) if body else None


def _freeze_result(data: dict[str, Any]) -> FreezeResult:
    return FreezeResult(
        created=bool(data["created"]),
        detail=str(data.get("detail") or ""),
        version=VersionInfo.from_json(data["version"]),
    )


Since = datetime | str | None


def _decimals(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A body's fields with Decimals as strings (JSON has no decimal type; the API reads both)."""
    return {k: str(v) if isinstance(v, Decimal) else v for k, v in fields.items()}


# A gold version as the API takes it: a number (7, "v7"), a tag ("release-2026q4") or "latest".
VersionRef = int | str


def _segment(value: str, what: str) -> str:
    """``value`` as one path segment: refused when it could leave its place."""
    text = str(value).strip()
    if not text or "/" in text or "?" in text or "#" in text or text in (".", ".."):
        raise GoldsetClientError(f"{what}: {value!r} is not a {what} name")
    return text


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
    """The API's 90 operations. Lists return iterators over every page (``page_size`` rows a
    request); ``updated_since`` (a datetime or RFC 3339 text) gives the rows created or changed
    since then, for incremental sync. Every call but :meth:`list_projects` and
    :meth:`create_project` goes to the client's project (``project=``), or to the server's
    default project without one; the calls that manage a project also take ``project=`` to
    name another."""

    base_url: str

    @abstractmethod
    def _run(self, call: Call) -> Any:
        """Send ``call`` and decode its answer (the sync client returns the value, the async
        client an awaitable of it)."""

    # ------------------------------------------------------------------ projects

    @operation("projects_list")
    def list_projects(self, *, updated_since: Since = None) -> list[Project]:
        """The projects the token's owner belongs to (the token's one project, for a token
        limited to one), each with the owner's role in it; ``updated_since``: those created or
        archived since."""
        return self._run(
            Call("projects_list", "GET", f"{self.base_url}/api/v1/projects/",
                 _query(updated_since=updated_since),
                 parse=lambda rows: [Project.from_json(r) for r in rows])
        )  # fmt: skip

    def _in(self, project: str | None, path: str) -> str:
        """``path`` in project ``project``, or in the client's project for None."""
        return path if project is None else api_prefix(self.base_url, project) + path

    @operation("projects_create")
    def create_project(
        self, slug: str, name: str, *, description: str = "", copy_from: str | None = None,
        idempotency_key: str | None = None,
    ) -> Project:  # fmt: skip
        """Create a project (installation admins, with a token valid in every project); you
        become its admin. ``copy_from``: the slug of a project whose settings, domains,
        guidelines and routing rules it starts from. A malformed, reserved or taken slug is
        :class:`Unprocessable` naming ``slug``."""
        body = {"slug": slug, "name": name, "description": description, "copy_from": copy_from}
        return self._run(
            Call("projects_create", "POST", f"{self.base_url}/api/v1/projects/", json=body,
                 parse=Project.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("projects_retrieve")
    def get_project(self, *, project: str | None = None) -> Project:
        """The project (the client's, or ``project``): name, description, archived, your role."""
        return self._run(
            Call("projects_retrieve", "GET", self._in(project, ""), parse=Project.from_json)
        )

    @operation("projects_partial_update")
    def update_project(
        self, *, name: str | None = None, description: str | None = None,
        archived: bool | None = None, project: str | None = None,
        idempotency_key: str | None = None,
    ) -> Project:  # fmt: skip
        """Change the project's name, description or archived state (its admins); only the
        arguments given are sent. Archiving keeps everything readable."""
        body = {k: v for k, v in (("name", name), ("description", description),
                                  ("archived", archived)) if v is not None}  # fmt: skip
        return self._run(
            Call("projects_partial_update", "PATCH", self._in(project, ""), json=body,
                 parse=Project.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("projects_destroy")
    def delete_project(self, project: str, *, idempotency_key: str | None = None) -> None:
        """Delete the project named (installation admins): :class:`Conflict` while it holds
        frozen gold versions or other data (archive it instead)."""
        return self._run(
            Call("projects_destroy", "DELETE", api_prefix(self.base_url, project),
                 parse=lambda body: None, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("projects_settings_retrieve")
    def get_project_settings(self, *, project: str | None = None) -> list[ProjectSetting]:
        """The project's protocol settings (its admins): each with the installation's value,
        the project's own (None: none), the value in force."""
        return self._run(
            Call("projects_settings_retrieve", "GET", self._in(project, "settings/"),
                 parse=lambda rows: [ProjectSetting.from_json(r) for r in rows])
        )  # fmt: skip

    @operation("projects_settings_partial_update")
    def update_project_settings(
        self, changes: Mapping[str, Any] | None = None, *, project: str | None = None,
        idempotency_key: str | None = None, **settings: Any,
    ) -> list[ProjectSetting]:  # fmt: skip
        """Set settings of the project (its admins), all or nothing, e.g.
        ``update_project_settings(KAPPA_GATE="0.8")``; None resets one to the installation's
        value. A refused value is :class:`Unprocessable` naming the setting. Returns the
        settings in force."""
        body = _decimals({**(changes or {}), **settings})
        return self._run(
            Call("projects_settings_partial_update", "PATCH", self._in(project, "settings/"),
                 json=body, parse=lambda rows: [ProjectSetting.from_json(r) for r in rows],
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("projects_members_list")
    def list_members(self, *, project: str | None = None) -> list[Member]:
        """The project's members and their roles, by username (its admins)."""
        return self._run(
            Call("projects_members_list", "GET", self._in(project, "members/"),
                 parse=lambda rows: [Member.from_json(r) for r in rows])
        )  # fmt: skip

    @operation("projects_members_create")
    def add_member(
        self, username: str, role: str, *, project: str | None = None,
        idempotency_key: str | None = None,
    ) -> Member:  # fmt: skip
        """Add ``username`` to the project with ``role`` (``annotator``, ``adjudication_lead``,
        ``admin``), or set the role of a member (its admins); :class:`Conflict` for another
        role of its last admin."""
        return self._run(
            Call("projects_members_create", "POST", self._in(project, "members/"),
                 json={"username": username, "role": role}, parse=Member.from_json,
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("projects_members_retrieve")
    def get_member(self, member: str | int, *, project: str | None = None) -> Member:
        """A member by username (or user id) and their role."""
        path = f"members/{_segment(str(member), 'member')}/"
        return self._run(
            Call("projects_members_retrieve", "GET", self._in(project, path),
                 parse=Member.from_json)
        )  # fmt: skip

    @operation("projects_members_partial_update")
    def set_member_role(
        self, member: str | int, role: str, *, project: str | None = None,
        idempotency_key: str | None = None,
    ) -> Member:  # fmt: skip
        """Set a member's role (its admins); effective at their next request;
        :class:`Conflict` for another role of its last admin."""
        path = f"members/{_segment(str(member), 'member')}/"
        return self._run(
            Call("projects_members_partial_update", "PATCH", self._in(project, path),
                 json={"role": role}, parse=Member.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("projects_members_destroy")
    def remove_member(
        self, member: str | int, *, project: str | None = None, idempotency_key: str | None = None
    ) -> None:
        """Remove a member from the project (its admins); :class:`Conflict` for its last
        admin."""
        path = f"members/{_segment(str(member), 'member')}/"
        return self._run(
            Call("projects_members_destroy", "DELETE", self._in(project, path),
                 parse=lambda body: None, idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ corpus

    @operation("domains_list")
    def list_domains(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[Domain]:
        return self._run(
            Call("domains_list", "GET", "domains/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=Domain.from_json, paginated=True)
        )  # fmt: skip

    @operation("documents_list")
    def list_documents(
        self, *, domain: str = "", q: str = "", updated_since: Since = None,
        page_size: int | None = None,
    ) -> Iterator[Document]:  # fmt: skip
        params = _query(domain=domain, q=q, updated_since=updated_since, page_size=page_size)
        return self._run(
            Call("documents_list", "GET", "documents/", params, parse=Document.from_json,
                 paginated=True)
        )  # fmt: skip

    @operation("documents_retrieve")
    def get_document(self, document_id: str) -> Document:
        return self._run(
            Call("documents_retrieve", "GET", f"documents/{document_id}/",
                 parse=Document.from_json)
        )  # fmt: skip

    @operation("documents_blocks_list")
    def list_document_blocks(
        self, document_id: str, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[Block]:
        """A document's blocks; ``updated_since``: those with a version created since."""
        return self._run(
            Call("documents_blocks_list", "GET", f"documents/{document_id}/blocks/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=Block.from_json, paginated=True)
        )  # fmt: skip

    @operation("blocks_versions_list")
    def list_block_versions(
        self, block_id: str, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[BlockVersion]:
        return self._run(
            Call("blocks_versions_list", "GET", f"blocks/{block_id}/versions/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=BlockVersion.from_json, paginated=True)
        )  # fmt: skip

    @operation("blocks_versions_retrieve")
    def get_block_version(self, block_id: str, version: int) -> BlockVersion:
        return self._run(
            Call("blocks_versions_retrieve", "GET", f"blocks/{block_id}/versions/{version}/",
                 parse=BlockVersion.from_json)
        )  # fmt: skip

    # ------------------------------------------------------------------ triples

    @operation("triples_list")
    def list_triples(
        self, *, state: str = "", updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[Triple]:
        return self._run(
            Call("triples_list", "GET", "triples/",
                 _query(state=state, updated_since=updated_since, page_size=page_size),
                 parse=Triple.from_json, paginated=True)
        )  # fmt: skip

    @operation("triples_retrieve")
    def get_triple(self, triple_id: str) -> Triple:
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
    ) -> ImportResult:  # fmt: skip
        """Queue an import of triples (gold JSONL shape); returns the import job."""
        return self._upload("triples_import_create", "triples/import/", source, "triples.jsonl",
                            fields={"on_behalf": on_behalf}, key=idempotency_key,
                            progress=progress)  # fmt: skip

    @operation("questions_import_create")
    def import_questions(
        self, source: FileLike | Records, *, idempotency_key: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> ImportResult:  # fmt: skip
        """Queue an import of questions with gold evidence packets; returns the import job."""
        return self._upload("questions_import_create", "questions/import/", source,
                            "questions.jsonl", key=idempotency_key, progress=progress)  # fmt: skip

    @operation("answers_import_create")
    def import_answers(
        self, source: FileLike | Records, *, idempotency_key: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> ImportResult:  # fmt: skip
        """Queue an import of answer logs; returns the import job."""
        return self._upload("answers_import_create", "answers/import/", source, "answers.jsonl",
                            key=idempotency_key, progress=progress)  # fmt: skip

    @operation("evaluators_outputs_create")
    def import_evaluator_outputs(
        self, evaluator_id: int, source: FileLike | Records, *,
        idempotency_key: str | None = None, progress: ProgressCallback | None = None,
    ) -> ImportResult:  # fmt: skip
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
    ) -> ImportResult:  # fmt: skip
        """Queue an import of any kind (corpus, triples, questions, answers, run)."""
        fields = {"kind": kind, "domain": domain, "on_behalf": on_behalf, "version": version,
                  "name": name, "k": k}  # fmt: skip
        return self._upload("imports_create", "imports/", source, f"{kind}.jsonl",
                            fields=fields, key=idempotency_key, progress=progress)  # fmt: skip

    @operation("imports_retrieve")
    def get_import(self, import_id: int) -> ImportResult:
        return self._run(
            Call("imports_retrieve", "GET", f"imports/{import_id}/", parse=ImportResult.from_json)
        )

    @operation("imports_cancel_create")
    def cancel_import(self, import_id: int, *, idempotency_key: str | None = None) -> ImportResult:
        """Cancel a queued or running import (:class:`Conflict` when it has ended)."""
        return self._run(
            Call("imports_cancel_create", "POST", f"imports/{import_id}/cancel/",
                 parse=ImportResult.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("imports_retry_create")
    def retry_import(self, import_id: int, *, idempotency_key: str | None = None) -> ImportResult:
        """Queue a failed or cancelled import again (:class:`Conflict` otherwise)."""
        return self._run(
            Call("imports_retry_create", "POST", f"imports/{import_id}/retry/",
                 parse=ImportResult.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ gold versions

    @operation("versions_list")
    def list_versions(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[VersionInfo]:
        """Gold versions, newest first."""
        return self._run(
            Call("versions_list", "GET", "versions/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=VersionInfo.from_json, paginated=True)
        )  # fmt: skip

    @operation("versions_diff_retrieve")
    def diff_versions(self, a: VersionRef, b: VersionRef) -> VersionDiff:
        """Triples added, removed and changed from ``a`` to ``b`` (numbers, tags or latest)."""
        return self._run(
            Call("versions_diff_retrieve", "GET", "versions/diff/", {"a": a, "b": b},
                 parse=VersionDiff.from_json)
        )  # fmt: skip

    @operation("versions_freeze_create")
    def freeze(
        self, *, domain: str = "", tier: str = "", source: str = "", public_only: bool = False,
        working_slice: str = "", include_superseded: bool = False, note: str = "",
        idempotency_key: str | None = None,
    ) -> FreezeResult:  # fmt: skip
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

    # ------------------------------------------------------------------ version tags

    @operation("tags_list")
    def list_tags(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[Tag]:
        """The project's version tags by name (``updated_since``: moved since)."""
        return self._run(
            Call("tags_list", "GET", "tags/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=Tag.from_json, paginated=True)
        )  # fmt: skip

    @operation("tags_retrieve")
    def get_tag(self, name: str) -> Tag:
        """A tag with its history (newest first)."""
        return self._run(
            Call("tags_retrieve", "GET", f"tags/{_segment(name, 'tag')}/", parse=Tag.from_json)
        )  # fmt: skip

    @operation("tags_update")
    def set_tag(
        self, name: str, version: VersionRef, *, note: str = "", idempotency_key: str | None = None
    ) -> Tag:
        """Create the tag ``name`` on ``version`` (a number, ``"v7"``, another tag or
        ``"latest"``, resolved now) or move it there (admins, write token); returns the tag.
        Putting it where it already is changes nothing."""
        return self._run(
            Call("tags_update", "PUT", f"tags/{_segment(name, 'tag')}/",
                 json={"version": version, "note": note}, parse=Tag.from_json,
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("tags_destroy")
    def delete_tag(self, name: str, *, note: str = "", idempotency_key: str | None = None) -> None:
        """Delete the tag (its history stays; admins, write token)."""
        return self._run(
            Call("tags_destroy", "DELETE", f"tags/{_segment(name, 'tag')}/", _query(note=note),
                 parse=lambda body: None, idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ scoring

    @operation("jobs_list")
    def list_jobs(
        self, *, version: int | str | None = None, system: str = "", status: str = "",
        updated_since: Since = None, page_size: int | None = None,
    ) -> Iterator[ScoreResult]:  # fmt: skip
        """Scoring jobs, newest first: those scored on ``version`` (a number, ``"v7"`` or
        ``"latest"``; the server resolves it), of ``system`` (answer logs it answered in,
        retrieval runs named after it), in ``status``, created, started or finished since
        ``updated_since``."""
        params = _query(version=version, system=system, status=status,
                        updated_since=updated_since, page_size=page_size)  # fmt: skip
        return self._run(
            Call("jobs_list", "GET", "jobs/", params, parse=ScoreResult.from_json, paginated=True)
        )

    @operation("jobs_create")
    def submit_run(
        self, version: VersionRef, run: FileLike | Records | list[dict[str, Any]], *,
        name: str = "", k: int = 10, as_json: bool = False, idempotency_key: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> ImportResult:  # fmt: skip
        """Queue a run to score against gold version ``version`` (a number, ``"v7"``, a tag or
        ``"latest"``, resolved by the server when it receives the run): as a file (multipart),
        or with ``as_json`` a list of run lines as a JSON body. Returns the import job that
        validates it; its summary names the scoring job."""
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
    def get_job(self, job_id: int) -> ScoreResult:
        return self._run(
            Call("jobs_retrieve", "GET", f"jobs/{job_id}/", parse=ScoreResult.from_json)
        )

    @operation("jobs_queries_list")
    def list_job_queries(
        self, job_id: int, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[QueryResult]:
        """A job's per-query rows; ``updated_since``: none unless the job finished since."""
        return self._run(
            Call("jobs_queries_list", "GET", f"jobs/{job_id}/queries/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=QueryResult.from_json, paginated=True)
        )  # fmt: skip

    @operation("jobs_compare_retrieve")
    def compare_jobs(self, job_ids: Iterable[int], *, method: str = "") -> Comparison:
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
    ) -> Iterator[Snapshot]:  # fmt: skip
        params = _query(protocol=protocol, axis=axis, metric=metric, tier=tier,
                        updated_since=updated_since, page_size=page_size)  # fmt: skip
        return self._run(
            Call("agreement_list", "GET", "agreement/", params, parse=Snapshot.from_json,
                 paginated=True)
        )  # fmt: skip

    @operation("alerts_list")
    def list_alerts(self) -> list[Alert]:
        return self._run(
            Call("alerts_list", "GET", "alerts/",
                 parse=lambda rows: [Alert.from_json(r) for r in rows])
        )  # fmt: skip

    # ------------------------------------------------------------------ labels

    @operation("labels_list")
    def list_labels(
        self, *, record: str = "", updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[Label]:
        """The labels the pages show you, newest first: an annotator their own; a lead or admin
        also those of the items their adjudication queue opens (the labeler named for admins
        only). ``record``: one item's."""
        return self._run(
            Call("labels_list", "GET", "labels/",
                 _query(record=record, updated_since=updated_since, page_size=page_size),
                 parse=Label.from_json, paginated=True)
        )  # fmt: skip

    @operation("labels_retrieve")
    def get_label(self, label_id: int) -> Label:
        return self._run(
            Call("labels_retrieve", "GET", f"labels/{label_id}/", parse=Label.from_json)
        )

    @operation("labels_claim_create")
    def claim_item(self, *, idempotency_key: str | None = None) -> LabelClaim:
        """Claim your next item to label (annotators): your open claim first; ``claimed`` False
        with the reason when none waits."""
        return self._run(
            Call("labels_claim_create", "POST", "labels/claim/", parse=LabelClaim.from_json,
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("labels_create")
    def submit_label(
        self, record: str, *, acceptability: str, grounding: str, evidence_sufficiency: str,
        citation_correctness: str, conflict_handling: str, safety_boundary: str,
        severe_safety: bool = False, primary_failure: str = "",
        secondary_failures: Iterable[str] = (), rationale: str = "",
        idempotency_key: str | None = None,
    ) -> Label:  # fmt: skip
        """Label an item you claimed (the label page's rules: a refused rule is
        :class:`Unprocessable` naming the field). Submitting again returns your first label."""
        body = {"record": record, "acceptability": acceptability, "grounding": grounding,
                "evidence_sufficiency": evidence_sufficiency,
                "citation_correctness": citation_correctness,
                "conflict_handling": conflict_handling, "safety_boundary": safety_boundary,
                "severe_safety": severe_safety, "primary_failure": primary_failure,
                "secondary_failures": list(secondary_failures), "rationale": rationale}  # fmt: skip
        return self._run(
            Call("labels_create", "POST", "labels/", json=body, parse=Label.from_json,
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ reviews

    @operation("reviews_list")
    def list_reviews(
        self, *, triple: str = "", updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[Review]:
        """Reviews the pages show you: yours, and those of resolved revisions of the triples
        you may see (reviews stay blind while a revision is under review)."""
        return self._run(
            Call("reviews_list", "GET", "reviews/",
                 _query(triple=triple, updated_since=updated_since, page_size=page_size),
                 parse=Review.from_json, paginated=True)
        )  # fmt: skip

    @operation("reviews_retrieve")
    def get_review(self, review_id: int) -> Review:
        return self._run(
            Call("reviews_retrieve", "GET", f"reviews/{review_id}/", parse=Review.from_json)
        )

    @operation("reviews_claim_create")
    def claim_review(self, *, idempotency_key: str | None = None) -> ReviewClaim:
        """Claim the next revision to review (annotators); ``claimed`` False when none waits."""
        return self._run(
            Call("reviews_claim_create", "POST", "reviews/claim/", parse=ReviewClaim.from_json,
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("reviews_create")
    def submit_review(
        self, assignment: int, verdict: str, *, flags: Iterable[str] = (),
        entailment_direction: str = "", disagreement_category: str = "", comment: str = "",
        idempotency_key: str | None = None,
    ) -> Review:  # fmt: skip
        """Review the revision of your ``assignment`` (from :meth:`claim_review`): ``confirm``,
        or ``flag`` naming what is wrong. Submitting again returns your first review."""
        body = {"assignment": assignment, "verdict": verdict, "flags": list(flags),
                "entailment_direction": entailment_direction,
                "disagreement_category": disagreement_category, "comment": comment}  # fmt: skip
        return self._run(
            Call("reviews_create", "POST", "reviews/", json=body, parse=Review.from_json,
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ adjudications

    @operation("adjudications_list")
    def list_adjudications(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[Adjudication]:
        """Adjudications of the items your queue opens to you (leads, admins), newest first."""
        return self._run(
            Call("adjudications_list", "GET", "adjudications/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=Adjudication.from_json, paginated=True)
        )  # fmt: skip

    @operation("adjudications_retrieve")
    def get_adjudication(self, adjudication_id: int) -> Adjudication:
        return self._run(
            Call("adjudications_retrieve", "GET", f"adjudications/{adjudication_id}/",
                 parse=Adjudication.from_json)
        )  # fmt: skip

    @operation("adjudications_queue_list")
    def list_adjudication_queue(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[OpenItem]:
        """Items waiting for you as a lead, oldest first, each with its labels by slot."""
        return self._run(
            Call("adjudications_queue_list", "GET", "adjudications/queue/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=OpenItem.from_json, paginated=True)
        )  # fmt: skip

    @operation("adjudications_create")
    def adjudicate(
        self, record: str, *, acceptability: str, grounding: str, rationale: str,
        severe_safety: bool = False, primary_failure: str = "",
        secondary_failures: Iterable[str] = (), idempotency_key: str | None = None,
    ) -> Adjudication:  # fmt: skip
        """Record the final label of an item in your queue (a rationale always required;
        :class:`Conflict` when it is already adjudicated)."""
        body = {"record": record, "acceptability": acceptability, "grounding": grounding,
                "severe_safety": severe_safety, "primary_failure": primary_failure,
                "secondary_failures": list(secondary_failures), "rationale": rationale}  # fmt: skip
        return self._run(
            Call("adjudications_create", "POST", "adjudications/", json=body,
                 parse=Adjudication.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ pairwise review

    @operation("pairwise_tasks_list")
    def list_pairwise_tasks(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[PairwiseTask]:
        """The project's pairwise tasks, newest first (leads, admins): their counts, never
        the systems."""
        return self._run(
            Call("pairwise_tasks_list", "GET", "pairwise/tasks/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=PairwiseTask.from_json, paginated=True)
        )  # fmt: skip

    @operation("pairwise_tasks_judgments_list")
    def list_pairwise_judgments(
        self, task_id: int, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[PairJudgment]:
        """A task's judgments (leads, admins; the systems named to admins only)."""
        return self._run(
            Call("pairwise_tasks_judgments_list", "GET", f"pairwise/tasks/{task_id}/judgments/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=PairJudgment.from_json, paginated=True)
        )  # fmt: skip

    @operation("pairwise_tasks_analysis_retrieve")
    def get_pairwise_analysis(self, task_id: int) -> PairwiseAnalysis:
        """A task's analysis: Bradley–Terry ranking, win rates with CIs, agreement, position
        bias (leads, admins)."""
        return self._run(
            Call("pairwise_tasks_analysis_retrieve", "GET", f"pairwise/tasks/{task_id}/analysis/",
                 parse=PairwiseAnalysis.from_json)
        )  # fmt: skip

    @operation("pairwise_tasks_judgments_import_create")
    def import_pairwise_judgments(
        self, task_id: int, source: FileLike | Records, *,
        idempotency_key: str | None = None, progress: ProgressCallback | None = None,
    ) -> ImportResult:  # fmt: skip
        """Queue an import of judgments into a task (admins); returns the import job."""
        return self._upload("pairwise_tasks_judgments_import_create",
                            f"pairwise/tasks/{task_id}/judgments/import/", source,
                            "judgments.jsonl", key=idempotency_key, progress=progress)  # fmt: skip

    @operation("pairwise_claim_create")
    def claim_pair(self, *, idempotency_key: str | None = None) -> BlindPair | None:
        """Claim your next pair to judge (qualified reviewers): blind, sides as shown to you."""
        return self._run(
            Call("pairwise_claim_create", "POST", "pairwise/claim/",
                 parse=_optional(BlindPair.from_json), idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("pairwise_pairs_retrieve")
    def get_pair(self, public_id: str) -> BlindPair:
        """A pair you hold, as shown to you (no system)."""
        return self._run(
            Call("pairwise_pairs_retrieve", "GET", f"pairwise/pairs/{public_id}/",
                 parse=BlindPair.from_json)
        )  # fmt: skip

    @operation("pairwise_pairs_judgment_create")
    def judge_pair(
        self, public_id: str, choice: str, *, strength: str = "", rationale: str = "",
        active_ms: int | None = None, idempotency_key: str | None = None,
    ) -> BlindPair:  # fmt: skip
        """Judge a pair you hold: ``left``, ``right`` (as shown to you), ``tie`` or
        ``both_unacceptable``, with a strength for a preference. ``active_ms``: the time you
        were active on the pair, as your tool measured it (time on item). Again: your first
        judgment."""
        body: dict[str, Any] = {"choice": choice, "strength": strength, "rationale": rationale}
        if active_ms is not None:
            body["active_ms"] = active_ms
        return self._run(
            Call("pairwise_pairs_judgment_create", "POST",
                 f"pairwise/pairs/{public_id}/judgment/", json=body,
                 parse=BlindPair.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("pairwise_pairs_skip_create")
    def skip_pair(
        self, public_id: str, reason: str, *, idempotency_key: str | None = None
    ) -> PairSkip:
        """Hand back a pair you hold but did not judge, with a reason; it is never offered to
        you again."""
        return self._run(
            Call("pairwise_pairs_skip_create", "POST", f"pairwise/pairs/{public_id}/skip/",
                 json={"reason": reason}, parse=PairSkip.from_json,
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("pairwise_undo_create")
    def undo_pair_judgment(self, *, idempotency_key: str | None = None) -> BlindPair:
        """Withdraw your last judgment (within the undo window, while its pair still collects
        judgments); returns the pair to judge again (``judgment`` None)."""
        return self._run(
            Call("pairwise_undo_create", "POST", "pairwise/undo/", parse=BlindPair.from_json,
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("pairwise_runs_list")
    def list_pairwise_runs(self) -> list[PairwiseRun]:
        """The runs a new task may compare (leads, admins): ``id`` and ``label`` ("Run N";
        the run id for admins only)."""
        return self._run(
            Call("pairwise_runs_list", "GET", "pairwise/runs/",
                 parse=lambda rows: [PairwiseRun.from_json(r) for r in rows])
        )  # fmt: skip

    @operation("pairwise_tasks_create")
    def create_pairwise_task(
        self, name: str, runs: Iterable[int], *, design: str = "all_pairs",
        comparisons_per_question: int | None = None, tier: str = "tier_b",
        seed: int | None = None, gold_version: int | str | None = None,
        idempotency_key: str | None = None,
    ) -> PairwiseTask:  # fmt: skip
        """Create a task (leads, admins) comparing ``runs`` (ids from
        :meth:`list_pairwise_runs`), its pairs drawn with ``seed``; ``gold_version`` (a number
        or a tag) limits it to that version's questions."""
        body = {"name": name, "runs": list(runs), "design": design, "tier": tier,
                "comparisons_per_question": comparisons_per_question,
                "gold_version": None if gold_version is None else str(gold_version)}  # fmt: skip
        if seed is not None:
            body["seed"] = seed
        return self._run(
            Call("pairwise_tasks_create", "POST", "pairwise/tasks/", json=body,
                 parse=PairwiseTask.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("pairwise_adjudications_list")
    def list_pair_adjudications(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[PairAdjudication]:
        """Split pairs waiting for you (leads, admins), blind on your sides, with the
        reviewers' judgments; ``updated_since``: those split since."""
        return self._run(
            Call("pairwise_adjudications_list", "GET", "pairwise/adjudications/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=PairAdjudication.from_json, paginated=True)
        )  # fmt: skip

    @operation("pairwise_adjudications_retrieve")
    def get_pair_adjudication(self, public_id: str) -> PairAdjudication:
        """A split pair you may adjudicate, as its adjudication page shows it."""
        return self._run(
            Call("pairwise_adjudications_retrieve", "GET", f"pairwise/adjudications/{public_id}/",
                 parse=PairAdjudication.from_json)
        )  # fmt: skip

    @operation("pairwise_adjudications_create")
    def adjudicate_pair(
        self, public_id: str, choice: str, *, rationale: str, strength: str = "",
        idempotency_key: str | None = None,
    ) -> PairAdjudication:  # fmt: skip
        """Record the final preference on a split pair: ``choice`` as the pair is shown to
        you, a strength with a preference, a rationale always."""
        body = {"choice": choice, "strength": strength, "rationale": rationale}
        return self._run(
            Call("pairwise_adjudications_create", "POST", f"pairwise/adjudications/{public_id}/",
                 json=body, parse=PairAdjudication.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ pairwise qualification

    @operation("pairwise_calibration_pairs_list")
    def list_pair_calibration(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[CalibrationPair]:
        """The project's calibration pairs (leads, admins): question, answers A and B, the
        reference relative to them (``a``, ``b``, ``tie``, ``both_unacceptable``)."""
        return self._run(
            Call("pairwise_calibration_pairs_list", "GET", "pairwise/calibration/pairs/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=CalibrationPair.from_json, paginated=True)
        )  # fmt: skip

    @operation("pairwise_calibration_candidate_retrieve")
    def get_pair_calibration_candidate(self) -> BlindPair | None:
        """The next pair to set a reference on, blind on your sides (leads, admins); None when
        every pair is a calibration pair."""
        return self._run(
            Call("pairwise_calibration_candidate_retrieve", "GET",
                 "pairwise/calibration/candidate/", parse=_optional(BlindPair.from_json))
        )  # fmt: skip

    @operation("pairwise_calibration_pairs_create")
    def add_pair_calibration(
        self, pair: str, *, choice: str | None = None, idempotency_key: str | None = None
    ) -> CalibrationPair:
        """Make ``pair`` a calibration pair with your reference: ``choice`` as the candidate is
        shown to you (``left``, ``right``, ``tie``, ``both_unacceptable``), or without it the
        pair's final preference. Again: the same calibration pair."""
        body = {"pair": pair} if choice is None else {"pair": pair, "choice": choice}
        return self._run(
            Call("pairwise_calibration_pairs_create", "POST", "pairwise/calibration/pairs/",
                 json=body, parse=CalibrationPair.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("pairwise_qualifications_list")
    def list_pair_qualifications(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[PairQualification]:
        """The reviewers' scored calibration attempts: κ, gate, passed (leads, admins)."""
        return self._run(
            Call("pairwise_qualifications_list", "GET", "pairwise/qualifications/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=PairQualification.from_json, paginated=True)
        )  # fmt: skip

    @operation("pairwise_qualification_retrieve")
    def get_pair_qualification(self) -> QualificationStatus:
        """Your qualification status for pairwise review (reviewers)."""
        return self._run(
            Call("pairwise_qualification_retrieve", "GET", "pairwise/qualification/",
                 parse=QualificationStatus.from_json)
        )  # fmt: skip

    @operation("pairwise_calibration_claim_create")
    def claim_pair_calibration(self, *, idempotency_key: str | None = None) -> BlindPair | None:
        """Your next calibration pair, blind (reviewers); None once you judged them all."""
        return self._run(
            Call("pairwise_calibration_claim_create", "POST", "pairwise/calibration/claim/",
                 parse=_optional(BlindPair.from_json), idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("pairwise_calibration_pairs_judgment_create")
    def judge_pair_calibration(
        self, public_id: str, choice: str, *, idempotency_key: str | None = None
    ) -> CalibrationAnswer:
        """Judge a calibration pair as it is shown to you; the answer's ``qualification``
        carries your result once the last one is judged."""
        return self._run(
            Call("pairwise_calibration_pairs_judgment_create", "POST",
                 f"pairwise/calibration/pairs/{public_id}/judgment/", json={"choice": choice},
                 parse=CalibrationAnswer.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ sampling rules

    @operation("sampling_rules_list")
    def list_sampling_rules(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[SamplingRule]:
        """The project's sampling rules of production traces in evaluation order (admins)."""
        return self._run(
            Call("sampling_rules_list", "GET", "sampling-rules/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=SamplingRule.from_json, paginated=True)
        )  # fmt: skip

    @operation("sampling_rules_create")
    def create_sampling_rule(
        self, name: str, kind: str, *, idempotency_key: str | None = None, **settings: Any
    ) -> SamplingRule:
        """Create a rule (version 1, enabled): ``kind`` one of percentage, feedback, judge,
        uncertainty, domain, task_type, new_question; ``settings``: ``percentage``, ``seed``,
        ``threshold``, ``value``, ``daily_cap``, ``position``, ``note`` as the kind needs
        (:class:`Unprocessable` naming the field otherwise)."""
        body = {"name": name, "kind": kind, **_decimals(settings)}
        return self._run(
            Call("sampling_rules_create", "POST", "sampling-rules/", json=body,
                 parse=SamplingRule.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("sampling_rules_retrieve")
    def get_sampling_rule(self, rule_id: int) -> SamplingRule:
        return self._run(
            Call("sampling_rules_retrieve", "GET", f"sampling-rules/{rule_id}/",
                 parse=SamplingRule.from_json)
        )  # fmt: skip

    @operation("sampling_rules_partial_update")
    def update_sampling_rule(
        self, rule_id: int, *, idempotency_key: str | None = None, **changes: Any
    ) -> SamplingRule:
        """Change a rule (its next version, audited; ``note`` says why), e.g.
        ``update_sampling_rule(3, daily_cap=50, note="spike")``, or enable or disable it:
        ``update_sampling_rule(3, enabled=False)``."""
        return self._run(
            Call("sampling_rules_partial_update", "PATCH", f"sampling-rules/{rule_id}/",
                 json=_decimals(changes), parse=SamplingRule.from_json,
                 idempotency_key=idempotency_key)
        )  # fmt: skip

    # ------------------------------------------------------------------ webhooks

    @operation("webhooks_list")
    def list_webhooks(
        self, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[WebhookEndpoint]:
        """The project's webhook endpoints (admins)."""
        return self._run(
            Call("webhooks_list", "GET", "webhooks/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=WebhookEndpoint.from_json, paginated=True)
        )  # fmt: skip

    @operation("webhooks_create")
    def create_webhook(
        self, url: str, events: Iterable[str], *, description: str = "", enabled: bool = True,
        idempotency_key: str | None = None,
    ) -> WebhookEndpoint:  # fmt: skip
        """Register an endpoint; the result's ``secret`` is shown this once. With the client's
        automatic Idempotency-Key a retried call gets the same endpoint and secret."""
        body = {"url": url, "events": list(events), "description": description,
                "enabled": enabled}  # fmt: skip
        return self._run(
            Call("webhooks_create", "POST", "webhooks/", json=body,
                 parse=WebhookEndpoint.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("webhooks_retrieve")
    def get_webhook(self, endpoint_id: int) -> WebhookEndpoint:
        return self._run(
            Call("webhooks_retrieve", "GET", f"webhooks/{endpoint_id}/",
                 parse=WebhookEndpoint.from_json)
        )  # fmt: skip

    @operation("webhooks_update")
    def update_webhook(
        self, endpoint_id: int, *, url: str, events: Iterable[str], description: str = "",
        enabled: bool = True, idempotency_key: str | None = None,
    ) -> WebhookEndpoint:  # fmt: skip
        """Replace an endpoint's settings (the URL is checked again)."""
        body = {"url": url, "events": list(events), "description": description,
                "enabled": enabled}  # fmt: skip
        return self._run(
            Call("webhooks_update", "PUT", f"webhooks/{endpoint_id}/", json=body,
                 parse=WebhookEndpoint.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("webhooks_partial_update")
    def patch_webhook(
        self, endpoint_id: int, *, idempotency_key: str | None = None, **changes: Any
    ) -> WebhookEndpoint:
        """Change some of an endpoint's settings (``url``, ``events``, ``description``,
        ``enabled``), e.g. ``patch_webhook(3, enabled=False)``."""
        if "events" in changes:
            changes["events"] = list(changes["events"])
        return self._run(
            Call("webhooks_partial_update", "PATCH", f"webhooks/{endpoint_id}/", json=changes,
                 parse=WebhookEndpoint.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("webhooks_destroy")
    def delete_webhook(self, endpoint_id: int, *, idempotency_key: str | None = None) -> None:
        """Delete an endpoint and its delivery log."""
        return self._run(
            Call("webhooks_destroy", "DELETE", f"webhooks/{endpoint_id}/",
                 parse=lambda body: None, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("webhooks_deliveries_list")
    def list_webhook_deliveries(
        self, endpoint_id: int, *, updated_since: Since = None, page_size: int | None = None
    ) -> Iterator[WebhookDelivery]:
        """An endpoint's delivery log, newest first."""
        return self._run(
            Call("webhooks_deliveries_list", "GET", f"webhooks/{endpoint_id}/deliveries/",
                 _query(updated_since=updated_since, page_size=page_size),
                 parse=WebhookDelivery.from_json, paginated=True)
        )  # fmt: skip

    @operation("webhooks_test_create")
    def send_test_webhook(
        self, endpoint_id: int, *, idempotency_key: str | None = None
    ) -> WebhookDelivery:
        """Queue a ``webhook.test`` event to this endpoint (:class:`Conflict` when disabled)."""
        return self._run(
            Call("webhooks_test_create", "POST", f"webhooks/{endpoint_id}/test/",
                 parse=WebhookDelivery.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip

    @operation("webhooks_deliveries_redeliver_create")
    def redeliver_webhook(
        self, delivery_id: int, *, idempotency_key: str | None = None
    ) -> WebhookDelivery:
        """One more attempt of a finished delivery (:class:`Conflict` while it is open)."""
        return self._run(
            Call("webhooks_deliveries_redeliver_create", "POST",
                 f"webhooks/deliveries/{delivery_id}/redeliver/",
                 parse=WebhookDelivery.from_json, idempotency_key=idempotency_key)
        )  # fmt: skip
