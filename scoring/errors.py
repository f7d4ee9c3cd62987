"""Errors raised by the scoring library.

Every problem with user-supplied input is an :class:`InputError` carrying the file name, the
1-based line number (``None`` when the problem is not tied to one line) and a plain-language
message, so that callers (the CLI, the Django import views) can show exactly what to fix.
"""

from __future__ import annotations


class ScoringError(Exception):
    """Base class for every error this library raises on purpose."""


class InputError(ScoringError, ValueError):
    """Bad user input: ``file``, ``line`` (1-based or ``None``) and ``message``."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}, line {self.line}"
        return f"{where}: {self.message}"


class AgreementError(ScoringError, ValueError):
    """The requested agreement statistic cannot be applied to data of this shape."""
