"""Reading an upload stored in the database as a stream, one chunk in memory at a time."""

import io

from goldset.models import ImportChunk, ImportJob


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
        self.name, self.size, self.sha256 = job.filename, job.size, job.sha256

    def open(self):
        return io.BufferedReader(_ChunkStream(self.job_id, self.chunk_count), 1 << 16)
