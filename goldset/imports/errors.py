"""One error model for every importer and every ``import_*`` command.

A :class:`Problem` names where (the line and the field path) and what (the message and, when
useful, what was expected). Every problem a rejection carries has a line: a member of a single
JSON document found without one gets it from the reader's locator, and a problem of the whole
file (an empty file) is on line 1. :class:`Problems` collects them for one file, keeps the first
``MAX_REPORTED`` and counts the rest, and raises :class:`~goldset.exceptions.ImportRejected`
carrying both the structured problems and their one-line renderings
(``line 3: blocks[0].text: …``)."""

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from goldset.exceptions import ImportRejected

MAX_REPORTED = 50


@dataclass(frozen=True)
class Problem:
    line: int | None
    field: str
    message: str
    expected: str = ""

    def __str__(self) -> str:
        parts = [f"line {self.line}"] if self.line is not None else []
        if self.field:
            parts.append(self.field)
        text = self.message
        if self.expected:
            text += f" (expected {self.expected})"
        return ": ".join([*parts, text])

    def as_dict(self) -> dict:
        return {
            "line": self.line,
            "field": self.field,
            "message": self.message,
            "expected": self.expected,
        }


# "name, line N: field.path: message" — how the older importers (runs, evaluator outputs) word
# a problem as text; the field is an identifier path, never a phrase with spaces.
_LOCATED = re.compile(
    r"^(?:[^\n]*?, )?line (?P<line>\d+): (?:(?P<field>[A-Za-z_][\w.\[\]]*): )?(?P<message>.+)$",
    re.S,
)


def problem_from_text(text: str) -> Problem:
    """A problem worded as text (``"run.jsonl, line 3: labels.grounding: 'x' is not …"``) as a
    :class:`Problem` with its line and field; a text naming no line is a whole-file problem,
    reported on line 1 (every problem has a line)."""
    match = _LOCATED.match(text)
    if match is None:
        return Problem(1, "", text)  # a problem of the whole file: its first line
    return Problem(int(match["line"]), match["field"] or "", match["message"])


class Problems:
    """The problems found in one file, in the order found (the first MAX_REPORTED kept)."""

    def __init__(self, *, limit: int = MAX_REPORTED):
        self.items: list[Problem] = []
        self.total = 0
        self.limit = limit
        # Set by a reader whose problems are found without a line (a member of one JSON
        # document): gives each its line when the file is rejected.
        self.locator: Callable[[list[Problem]], list[Problem]] | None = None

    def add(self, line: int | None, field: str, message: str, expected: str = "") -> None:
        self.total += 1
        if len(self.items) < self.limit:
            self.items.append(Problem(line, field, message, expected))

    def extend(self, other: "Problems") -> None:
        for problem in other.items:
            self.add(problem.line, problem.field, problem.message, problem.expected)
        self.total += other.total - len(other.items)

    @property
    def full(self) -> bool:
        return self.total >= self.limit

    def __bool__(self) -> bool:
        return self.total > 0

    def located(self) -> list[Problem]:
        """The problems, each with a line: the reader's locator's, else line 1 for a problem
        of the whole file (an empty file, a missing top-level member)."""
        items = self.items
        if self.locator is not None and any(p.line is None for p in items):
            items = self.locator(items)
        return [p if p.line is not None else replace(p, line=1) for p in items]

    def rejection(self, source: str = "") -> ImportRejected:
        ordered = sorted(self.located(), key=lambda p: p.line)
        lines = [str(p) for p in ordered]
        if self.total > len(self.items):
            lines.append(f"… and {self.total - len(self.items)} more problem(s)")
        return ImportRejected(lines, source=source, problems=ordered)

    def raise_if_any(self, source: str = "") -> None:
        if self:
            raise self.rejection(source)
