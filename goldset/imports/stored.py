"""An import job's file as a stream: from the import storage directory, one buffer in memory at
a time (or, for a job queued before that directory existed, from its ``ImportChunk`` rows)."""

import io

from goldset.exceptions import GoldsetError
from goldset.imports.storage import path_of
from goldset.models import ImportChunk, ImportJob


class StoredFileMissing(GoldsetError):
    """The job's file is not in the import storage directory (deleted, or another volume)."""


class _ChunkStream(io.RawIOBase):
    def __init__(self, job_id: int, chunk_count: int):
        self.job_id, self.chunk_count = job_id, chunk_count
        self.next_index, self.buffer, self.offset, self.position = 0, b"", 0, 0

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def readinto(self, target) -> int:
        while self.offset >= len(self.buffer):
            if self.next_index >= self.chunk_count:
                return 0
            data = (
                ImportChunk.objects.filter(job_id=self.job_id, index=self.next_index)
                .values_list("data", flat=True)
                .get()
            )
            self.buffer, self.offset = bytes(data), 0
            self.next_index += 1
        n = min(len(target), len(self.buffer) - self.offset)
        target[:n] = self.buffer[self.offset : self.offset + n]
        self.offset += n
        self.position += n
        return n


class StoredUpload:
    """An import job's file as a :class:`~goldset.imports.reader.ByteSource`."""

    def __init__(self, job: ImportJob):
        self.job_id, self.chunk_count = job.pk, job.chunk_count
        self.file_name = job.file_name
        self.name, self.size, self.sha256 = job.filename, job.size, job.sha256

    def check(self) -> None:
        """Raise StoredFileMissing unless the file can be read."""
        if self.file_name and not path_of(self.file_name).is_file():
            raise StoredFileMissing(
                f"The uploaded file of this import ({self.name}) is no longer in the import "
                "storage directory (IMPORT_STORAGE_DIR, shared by web and workers); "
                "submit the file again."
            )

    def open(self):
        if self.file_name:
            self.check()
            return path_of(self.file_name).open("rb", buffering=1 << 16)
        return io.BufferedReader(_ChunkStream(self.job_id, self.chunk_count), 1 << 16)
