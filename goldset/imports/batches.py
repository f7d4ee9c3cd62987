"""Validate a whole file, then write it all or nothing, in bounded memory.

An importer reads its file as a stream of records and handles them in batches: ``check`` turns
a batch into a write plan (recording problems, querying the database once per batch), ``write``
stores a plan. :func:`run_import` makes two passes over the source, reporting progress by the
bytes read after every batch (validating 0-50 %, writing 50-100 %):

1. *validate*: every batch is checked and its plan dropped; only the importer's cross-batch
   state (ids seen so far) is kept. Any problem rejects the file here and nothing is written.
2. *write*: in one transaction, every batch is checked again (the database may have changed
   since pass 1) and written with bulk inserts. A problem found now rolls everything back.

Memory is one batch of parsed records plus the ids seen, never the file."""

from collections.abc import Callable, Iterator
from itertools import islice
from typing import Protocol

from django.db import transaction

from goldset.imports.errors import Problems
from goldset.imports.reader import ByteSource

BATCH_SIZE = 1000

Progress = Callable[[str, int], None]


class BatchImporter(Protocol):
    def begin(self, *, writing: bool) -> None:
        """Start a pass: forget the cross-batch state of the previous one."""

    def records(
        self, source: ByteSource, problems: Problems, progress: Callable[[int], None]
    ) -> Iterator: ...

    def check(self, batch: list, problems: Problems): ...

    def write(self, plan) -> None: ...

    def finish(self, *, source: ByteSource):
        """After the last batch of the write pass: audit and return the summary."""


def batched(items, size: int) -> Iterator[list]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def run_import(
    *,
    importer: BatchImporter,
    source: ByteSource,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
    on_written: Callable[[object], None] | None = None,
):
    """Validate ``source`` whole, then write it in one transaction. Raises ImportRejected
    (nothing stored) with every problem found, capped at the error model's limit.
    ``on_written(summary)`` runs inside that transaction (an import job records its result
    atomically with the rows)."""
    size = getattr(source, "size", 0) or 0
    read = [0]  # bytes of the file read so far in this pass (the reader says, every few lines)

    def note(consumed: int) -> None:
        read[0] = consumed

    def report(stage: str, low: int, high: int) -> None:
        # Once per batch, by bytes: validating 0-50 %, writing 50-100 %.
        if progress is not None:
            share = read[0] / size if size else 1
            progress(stage, low + round((high - low) * min(share, 1.0)))

    problems = Problems()
    importer.begin(writing=False)
    report("validating", 0, 50)
    for batch in batched(importer.records(source, problems, note), batch_size):
        importer.check(batch, problems)
        if problems.full:
            break
        report("validating", 0, 50)
    problems.raise_if_any(source.name)
    with transaction.atomic():
        importer.begin(writing=True)
        read[0] = 0
        report("writing", 50, 100)
        for batch in batched(importer.records(source, problems, note), batch_size):
            plan = importer.check(batch, problems)
            problems.raise_if_any(source.name)
            importer.write(plan)
            report("writing", 50, 100)
        problems.raise_if_any(source.name)
        summary = importer.finish(source=source)
        if on_written is not None:
            on_written(summary)
        return summary
