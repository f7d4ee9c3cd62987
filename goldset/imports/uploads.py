"""The upload handler of every request (``settings.FILE_UPLOAD_HANDLERS``).

Like Django's ``TemporaryFileUploadHandler`` it streams each uploaded file to a temporary file,
but the file lives in the import storage's ``incoming/`` directory and is fingerprinted as the
bytes arrive (sha256, size cap, UTF-8; :class:`goldset.imports.storage.Fingerprint`). Accepting
the upload is then a rename (:func:`goldset.imports.storage.store_upload`): the request does no
second pass over a 200 MB file. Bytes past the size cap are not written; the file is refused with
its size. A file nothing renames is deleted when the request ends, as Django's would be."""

import os
import tempfile

from django.core.files.uploadedfile import TemporaryUploadedFile, UploadedFile
from django.core.files.uploadhandler import FileUploadHandler

from goldset.imports.storage import Fingerprint, incoming_dir


class StagedUploadedFile(TemporaryUploadedFile):
    """A temporary upload in ``incoming/`` with its :class:`Fingerprint`."""

    def __init__(self, name, content_type, size, charset, content_type_extra=None):
        _, ext = os.path.splitext(name)
        # Not TemporaryUploadedFile.__init__: that one writes to FILE_UPLOAD_TEMP_DIR, which may
        # be another file system than the storage directory (a rename must not become a copy).
        file = tempfile.NamedTemporaryFile(suffix=".upload" + ext[:16], dir=incoming_dir())
        UploadedFile.__init__(self, file, name, content_type, size, charset, content_type_extra)
        self.fingerprint = Fingerprint()


class ImportUploadHandler(FileUploadHandler):
    # Django's 64 KiB chunks: 1 MiB ones made its multipart parser use twice the CPU.

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.file = StagedUploadedFile(self.file_name, self.content_type, 0, self.charset)

    def receive_data_chunk(self, raw_data, start):
        if self.file.fingerprint.feed(raw_data):
            self.file.write(raw_data)

    def file_complete(self, file_size):
        self.file.fingerprint.finish()
        self.file.seek(0)
        self.file.size = file_size
        return self.file

    def upload_interrupted(self):
        if hasattr(self, "file"):
            self.file.close()
