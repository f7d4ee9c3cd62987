"""The toolkit's pass over a run file before the scoring library reads it: BOM, UTF-8, NUL,
NaN/Infinity and nesting depth are refused with line and field, as for every import (the
scoring library's own readers then check the run's structure)."""

from goldset.imports.errors import Problems
from goldset.imports.reader import (
    BOM,
    ByteSource,
    iter_json_lines,
    iter_text_lines,
    sniff_first_char,
)


def checked_run_bytes(source: ByteSource) -> bytes:
    """The run's bytes, BOM stripped, after the toolkit's checks; raises ImportRejected."""
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
    with source.open() as stream:
        data = stream.read()
    return data[len(BOM) :] if data.startswith(BOM) else data
