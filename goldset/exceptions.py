"""Domain errors raised by services; views turn them into messages, commands into exit codes."""


class GoldsetError(Exception):
    """Base class for rule violations a user can fix."""


class ImportRejected(GoldsetError):
    """A whole file was rejected; ``errors`` lists every problem as 'line N: field: reason' and
    ``problems`` the same as :class:`goldset.imports.errors.Problem` (line, field, message,
    expected) when the importer gave them."""

    def __init__(self, errors: list[str], *, source: str = "", problems=None):
        self.errors = errors
        self.source = source
        self.problems = list(problems or [])
        head = f"{source}: " if source else ""
        super().__init__(
            f"{head}{len(errors)} problem(s); nothing was imported.\n" + "\n".join(errors)
        )


class CrossProjectReference(GoldsetError):
    """A write that would tie an object of one project to an object of another (a triple of A
    pinned to a block version of B, a customer of B on a triple of A, a run of A scored against
    a version of B, a calibration of B used in A): refused, nothing stored. Pages answer 4xx with
    the message, the API 422."""
