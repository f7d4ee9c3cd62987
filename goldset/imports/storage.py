"""The import storage directory: where an upload waits, on disk, for the worker that imports it.

``settings.IMPORT_STORAGE_DIR`` (default ``var/imports``) is a directory the web and worker
processes share (one volume in docker-compose.yml). It holds two sub-directories:

* ``incoming/``: the upload handler (:mod:`goldset.imports.uploads`) writes each uploaded file
  here while Django parses the request, hashing it as the bytes arrive;
* ``files/``: an accepted upload is *renamed* here (same file system: no copy) under a random
  name, and the import job records that name (relative to the directory), its size and sha256.

The request therefore does no work per byte beyond what Django's upload handler did. A file
given some other way (a ``ContentFile``, a file in memory) is copied here while hashing.

A file is deleted when its job ends (imported, rejected or failed); a rejected or failed job
submitted again gets the new upload's file. Files no unfinished job refers to (a web process that
died mid-request, a transaction that rolled back) are swept by the reconciler once older than
``IMPORT_ORPHAN_SECONDS`` (:func:`orphans`)."""

import codecs
import hashlib
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.imports.reader import BOM

COPY_BLOCK = 1 << 20
INCOMING, FILES = "incoming", "files"
_EMPTY_BOM = hashlib.sha256(BOM).hexdigest()


class UploadRejected(GoldsetError):
    """The upload itself is refused before any job exists (too large, not UTF-8 text, empty)."""


def storage_dir() -> Path:
    return Path(settings.IMPORT_STORAGE_DIR)


def incoming_dir() -> Path:
    path = storage_dir() / INCOMING
    path.mkdir(parents=True, exist_ok=True)
    return path


def files_dir() -> Path:
    path = storage_dir() / FILES
    path.mkdir(parents=True, exist_ok=True)
    return path


def path_of(name: str) -> Path:
    """The absolute path of a stored file from the name a job records."""
    return storage_dir() / name


def human_size(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}".replace(".0 ", " ")
    return f"{size} bytes"


class Fingerprint:
    """sha256, size, the size cap and UTF-8 validity of a file, fed block by block.

    Bytes past the cap are counted but neither hashed nor kept (``over_cap``): a file far too
    large costs no disk. The UTF-8 check decodes only blocks that are not plain ASCII (or that
    continue a character split across blocks)."""

    def __init__(self, cap: int | None = None):
        self.cap = tunable("IMPORT_MAX_UPLOAD_BYTES") if cap is None else cap
        self.digest = hashlib.sha256()
        self.size = 0
        self.over_cap = False
        # Where the first byte that is not UTF-8 is (the line is counted only then, from disk).
        self.bad_utf8_at: int | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")

    def feed(self, block: bytes) -> bool:
        """Account for ``block``; False once the file is over the cap (drop the block)."""
        start = self.size
        self.size += len(block)
        if self.over_cap or self.size > self.cap:
            self.over_cap = True
            return False
        self.digest.update(block)
        if self.bad_utf8_at is None and (self._decoder.getstate()[0] or not block.isascii()):
            try:
                self._decoder.decode(block)
            except UnicodeDecodeError as exc:
                self.bad_utf8_at = max(start + exc.start, 0)
        return True

    def finish(self) -> None:
        if self.bad_utf8_at is None and not self.over_cap:
            try:
                self._decoder.decode(b"", final=True)
            except UnicodeDecodeError:
                self.bad_utf8_at = self.size

    @property
    def sha256(self) -> str:
        return self.digest.hexdigest()

    def check(self, name: str, path: Path) -> None:
        """Raise UploadRejected (with the file's name, and the line for bad UTF-8, counted in
        the copy at ``path``)."""
        if self.over_cap:
            raise UploadRejected(
                f"{name} is {human_size(self.size)}; the limit for an upload is "
                f"{human_size(self.cap)}."
            )
        if self.bad_utf8_at is not None:
            line = _line_at(path, self.bad_utf8_at)
            if self.bad_utf8_at >= self.size:
                raise UploadRejected(f"{name}, line {line}: the file ends inside a character.")
            raise UploadRejected(
                f"{name}, line {line}: not valid UTF-8 text (the file must be UTF-8)."
            )
        if self.size == 0 or (self.size == len(BOM) and self.sha256 == _EMPTY_BOM):
            raise UploadRejected(f"{name} is empty.")


def _line_at(path: Path, offset: int) -> int:
    """The line number of byte ``offset`` of the file at ``path``."""
    line, remaining = 1, offset
    with Path(path).open("rb") as handle:
        while remaining > 0 and (block := handle.read(min(COPY_BLOCK, remaining))):
            line += block.count(b"\n")
            remaining -= len(block)
    return line


@dataclass
class StoredFile:
    """An upload placed in ``files/``: ``name`` is relative to the storage directory."""

    name: str
    sha256: str
    size: int

    @property
    def path(self) -> Path:
        return path_of(self.name)

    def discard(self) -> None:
        remove(self.name)


def _new_name() -> str:
    return f"{FILES}/{uuid.uuid4().hex}.upload"


def store_upload(upload, *, name: str) -> StoredFile:
    """Place ``upload`` in ``files/`` and return its name, sha256 and size; raises UploadRejected
    (nothing kept) for a file over the size cap, not UTF-8 or empty.

    An upload that came through :class:`goldset.imports.uploads.ImportUploadHandler` was hashed
    while Django wrote it to ``incoming/``: it is renamed into place (no pass over its bytes).
    Anything else is copied while hashing, one block at a time."""
    fingerprint = getattr(upload, "fingerprint", None)
    target = _new_name()
    files_dir()
    if fingerprint is not None and hasattr(upload, "temporary_file_path"):
        upload.file.flush()
        fingerprint.check(name, Path(upload.temporary_file_path()))
        os.replace(upload.temporary_file_path(), path_of(target))
        return StoredFile(target, fingerprint.sha256, fingerprint.size)
    fingerprint = Fingerprint()
    if upload.size is not None and upload.size > fingerprint.cap:
        fingerprint.size, fingerprint.over_cap = upload.size, True
        fingerprint.check(name, Path())
    partial = path_of(target + ".part")
    try:
        with partial.open("wb") as out:
            upload.seek(0)
            for block in upload.chunks(COPY_BLOCK):
                if fingerprint.feed(block):  # past the cap: counted for the message, not kept
                    out.write(block)
        fingerprint.finish()
        fingerprint.check(name, partial)
        os.replace(partial, path_of(target))
    finally:
        partial.unlink(missing_ok=True)
    return StoredFile(target, fingerprint.sha256, fingerprint.size)


def remove(name: str) -> None:
    """Delete a stored file (a no-op when it is already gone or ``name`` is empty)."""
    if name:
        path_of(name).unlink(missing_ok=True)


def orphans(*, keep: set[str], older_than_seconds: int) -> list[Path]:
    """Files in ``incoming/`` and ``files/`` older than the grace that ``keep`` (the names of
    unfinished jobs' files) does not hold."""
    root = storage_dir()
    limit = time.time() - older_than_seconds
    found = []
    for sub in (INCOMING, FILES):
        folder = root / sub
        if not folder.is_dir():
            continue
        for entry in os.scandir(folder):
            name = f"{sub}/{entry.name}"
            try:
                old = entry.stat().st_mtime < limit
            except FileNotFoundError:
                continue
            if old and name not in keep and entry.is_file():
                found.append(Path(entry.path))
    return found
