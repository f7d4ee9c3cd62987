"""The toolkit's pass over a run file before the scoring library reads it: BOM, UTF-8, NUL,
NaN/Infinity and nesting depth are refused with line and field, as for every import (the
scoring library's own readers then check the run's structure)."""

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from goldset.imports.errors import Problems
from goldset.imports.reader import (
    ByteSource,
    iter_json_lines,
    iter_text_lines,
    open_text_stream,
    sniff_first_char,
)

COPY_BLOCK = 1 << 20


def check_run(source: ByteSource) -> None:
    """The toolkit's checks, one line in memory at a time; raises ImportRejected."""
    problems = Problems()
    if sniff_first_char(source) in ("{", "["):
        for _ in iter_json_lines(source, problems, what="run record"):
            if problems.full:
                break
    else:
        for lineno, text in iter_text_lines(source, problems):
            if "\x00" in text:
                problems.add(lineno, "", "contains a NUL character")
            if problems.full:
                break
    problems.raise_if_any(source.name)


@contextmanager
def checked_run_file(source: ByteSource) -> Iterator[Path]:
    """After :func:`check_run`, the run's bytes (BOM stripped) in a temporary file, copied in
    blocks; the file is deleted on exit. The scoring job is created from this path, so a large
    run is never held in memory."""
    check_run(source)
    with tempfile.TemporaryDirectory(prefix="goldset-run-") as folder:
        path = Path(folder) / "run"
        with source.open() as raw, path.open("wb") as out:
            shutil.copyfileobj(open_text_stream(raw), out, COPY_BLOCK)
        yield path
