"""Serving a frozen gold-version file: the one path the page and the API share
(:func:`serve_version_file`: spec → pick → verify → project → audit → respond).

For a role whose declared fields (``workbench.access``) are fewer than the file's, the stored
bytes are verified first, then each JSON line is reduced to the role's fields and the people in
it are replaced by the gold version's pseudonyms."""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from django.contrib.auth import get_user_model

from goldset.exceptions import GoldsetError
from goldset.models import GoldVersion
from goldset.rules.exports import pick_file
from goldset.services.exports import (
    CHUNK_SIZE,
    ChecksumMismatch,
    FileSpool,
    canonical_json,
    verified_chunks,
)
from goldset.services.pseudonyms import PREFIX, ensure_pseudonyms, gold_version_scope
from workbench.access import ALL_FIELDS, entry_for, fields_for, project
from workbench.roles import roles_of
from workbench.services.audit import record_event

__all__ = ["ChecksumMismatch", "Download", "NoSuchDownload", "serve_version_file"]


class NoSuchDownload(GoldsetError):
    """The version has no such file for this user (unknown format, or not declared for their
    role): both surfaces answer 404."""


@dataclass(frozen=True)
class Download:
    """What is sent: its name, type, bytes, and the sha256 and size of exactly those bytes."""

    filename: str
    content_type: str
    chunks: Iterator[bytes]
    sha256: str
    size: int


def serve_version_file(*, user, version: GoldVersion, fmt: str, via: str) -> Download:
    """The file of ``version`` in ``fmt`` as ``user`` may download it, audited.

    The role's field spec for the format (``exports:download`` in the access table; none:
    :class:`NoSuchDownload`), the variant the user may have (:func:`pick_file`), the stored bytes
    verified against the freeze checksum (:class:`ChecksumMismatch` before anything is sent),
    projected to the role's fields when they are fewer (spooled, so the audit event and the
    ``X-Checksum-SHA256`` header name the checksum of the bytes sent, and the filename says
    ``blinded``), then one ``gold_version_downloaded`` event (``via`` "page" or "api")."""
    spec = fields_for(entry_for("exports:download"), roles_of(user), variant=fmt)
    if spec is None:
        raise NoSuchDownload(f"gold version v{version.number} has no {fmt} download for you")
    try:
        stored = pick_file(version, fmt=fmt, user=user)
    except GoldsetError as exc:
        raise NoSuchDownload(str(exc)) from exc
    chunks = verified_chunks(stored)
    projected = spec != ALL_FIELDS
    filename, sha256, size = stored.filename, stored.sha256, stored.size
    if projected:
        spool = FileSpool()
        for piece in project_jsonl(chunks, spec=spec, version=version):
            spool.write(piece)
        spool.spool.seek(0)
        chunks = iter(lambda: spool.spool.read(CHUNK_SIZE), b"")
        sha256, size = spool.digest.hexdigest(), spool.size
        prefix = f"goldset-v{version.number}-"  # the lead's variant says so in its name
        filename = filename.replace(prefix, f"{prefix}blinded-", 1)
    record_event(
        actor=user,
        verb="gold_version_downloaded",
        obj=version,
        detail={
            "format": fmt,
            "redacted": stored.redacted,
            "fields": "role" if projected else "all",
            "sha256": sha256,
            "size": size,
            "filename": filename,
            "via": via,
        },
    )
    return Download(
        filename=filename,
        content_type=stored.content_type,
        chunks=chunks,
        sha256=sha256,
        size=size,
    )


_LEGACY_REVIEWER = re.compile(r"^reviewer-(\d+)$")  # files frozen before pseudonyms existed


class VersionPseudonyms:
    """Maps whatever names a person in a version's files (a username, a legacy ``reviewer-<pk>``,
    or an existing pseudonym) to the version's pseudonym, creating it on first use."""

    def __init__(self, version: GoldVersion):
        self.scope = gold_version_scope(version)
        self.memo: dict[str, str] = {}

    def __call__(self, value):
        if value is None or (isinstance(value, str) and value.startswith(PREFIX)):
            return value
        key = str(value)
        if key not in self.memo:
            legacy = _LEGACY_REVIEWER.match(key)
            User = get_user_model()
            user_id = (
                int(legacy.group(1))
                if legacy
                else User.objects.filter(username=key).values_list("pk", flat=True).first()
            )
            if user_id is None or not User.objects.filter(pk=user_id).exists():
                self.memo[key] = "person-unknown"
            else:
                self.memo[key] = ensure_pseudonyms(scope=self.scope, user_ids=[user_id])[user_id]
        return self.memo[key]


def project_jsonl(chunks: Iterator[bytes], *, spec, version: GoldVersion) -> Iterator[bytes]:
    """Each JSON line of ``chunks`` reduced to ``spec``; canonical JSON out (people under the
    version's pseudonyms)."""
    pseudonym = VersionPseudonyms(version)
    pending = b""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        out = [
            canonical_json(project(json.loads(line), spec, pseudonym=pseudonym))
            for line in lines
            if line.strip()
        ]
        if out:
            yield ("\n".join(out) + "\n").encode("utf-8")
    if pending.strip():
        line = canonical_json(project(json.loads(pending), spec, pseudonym=pseudonym))
        yield (line + "\n").encode("utf-8")
