"""Field checks shared by every importer: each reads one member of a parsed object, records a
:class:`~goldset.imports.errors.Problem` naming the line and field when it is wrong, and returns
a clean value (or an empty one, so checking goes on and every problem is reported).

The same rules everywhere: ids have no control characters and no surrounding whitespace; text
fits its database column; numbers are real finite numbers (not booleans, strings, NaN or
Infinity) within their range."""

import datetime as dt
import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from goldset.imports.errors import Problems
from goldset.imports.reader import NonFinite


def column_length(model, field: str) -> int:
    """The max_length of a model's column, so limits are never restated by hand."""
    return model._meta.get_field(field).max_length


# Unicode's control characters (category Cc): C0, DEL and C1. One regex search instead of a
# category lookup per character (about a tenth of an answer log's validate pass).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _has_control(value: str) -> bool:
    return _CONTROL.search(value) is not None


def is_clean_id(value, max_length: int) -> bool:
    """Whether :meth:`At.identifier` takes ``value`` as it is, without a problem: a non-empty
    string within ``max_length``, no surrounding whitespace, no control character (NUL
    included). Lets an importer check its common case without building an :class:`At`; any
    other value goes through the full check, which words the problem."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= max_length
        and not value[0].isspace()
        and not value[-1].isspace()
        and _CONTROL.search(value) is None
    )


@dataclass(frozen=True)
class At:
    """Where a member lives: the line (None inside a single JSON document) and a path prefix."""

    problems: Problems
    line: int | None
    prefix: str = ""

    def __truediv__(self, sub: str) -> "At":
        return At(self.problems, self.line, self.path(sub))

    def path(self, key: str) -> str:
        if not self.prefix:
            return key
        return self.prefix + (key if key.startswith("[") else f".{key}")

    def add(self, key: str, message: str, expected: str = "") -> None:
        self.problems.add(self.line, self.path(key), message, expected)

    # ---------------------------------------------------------------- strings

    def text(
        self, obj: dict, key: str, *, required: bool = True, max_length: int | None = None
    ) -> str:
        value = obj.get(key)
        if value is None or value == "":
            if required:
                self.add(key, "missing", "a non-empty string")
            return ""
        if not isinstance(value, str):
            self.add(key, f"got {_kind(value)}", "a string")
            return ""
        if "\x00" in value:
            self.add(key, "contains a NUL character")
            return ""
        if max_length is not None and len(value) > max_length:
            self.add(key, f"{len(value)} characters is longer than the limit of {max_length}")
            return ""
        return value

    def identifier(self, obj: dict, key: str, *, max_length: int, required: bool = True) -> str:
        value = self.text(obj, key, required=required, max_length=max_length)
        return self.check_identifier(value, key)

    def check_identifier(self, value: str, key: str) -> str:
        if not value:
            return value
        if value != value.strip():
            self.add(key, f"{value!r} has leading or trailing whitespace", "an id as stored")
            return ""
        if _has_control(value):
            self.add(key, f"{value!r} contains a control character (tab, newline, …)")
            return ""
        return value

    def choice(self, obj: dict, key: str, choices, *, default=None) -> str:
        value = obj.get(key, default)
        if value not in choices:
            self.add(key, f"got {value!r}", f"one of {', '.join(choices)}")
            return ""
        return value

    def str_list(self, obj: dict, key: str, *, max_length: int | None = None) -> list[str]:
        value = obj.get(key, [])
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.add(key, f"got {_kind(value)}", "a list of non-empty strings")
            return []
        for index, item in enumerate(value):
            if "\x00" in item:
                self.add(f"{key}[{index}]", "contains a NUL character")
                return []
            if max_length is not None and len(item) > max_length:
                self.add(f"{key}[{index}]", f"longer than the limit of {max_length}")
                return []
        return value

    # ---------------------------------------------------------------- numbers and dates

    def number(
        self,
        value,
        key: str,
        *,
        minimum: Decimal | int | None = None,
        maximum: Decimal | int | None = None,
        below: Decimal | int | None = None,
        places: str | None = None,
        expected: str = "",
    ) -> Decimal | None:
        """A finite number in range as a Decimal (``None`` when absent or wrong)."""
        if value is None:
            return None
        wanted = expected or _range_text(minimum, maximum, below)
        if isinstance(value, NonFinite) or (isinstance(value, float) and not math.isfinite(value)):
            self.add(key, f"{value!r} is not allowed", wanted)
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            self.add(key, f"got {value!r}", wanted)
            return None
        try:
            number = Decimal(str(value))
        except InvalidOperation:
            self.add(key, f"got {value!r}", wanted)
            return None
        if (
            (minimum is not None and number < minimum)
            or (maximum is not None and number > maximum)
            or (below is not None and number >= below)
        ):
            self.add(key, f"got {value!r}", wanted)
            return None
        return number.quantize(Decimal(places)) if places else number

    def whole(self, value, key: str, *, minimum: int = 0, required: bool = False) -> int | None:
        """A whole number ≥ minimum (``None`` when absent or wrong)."""
        if value is None:
            if required:
                self.add(key, "missing", f"a whole number ≥ {minimum}")
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.add(key, f"got {value!r}", f"a whole number ≥ {minimum}")
            return None
        return value

    def date(self, obj: dict, key: str) -> dt.date | None:
        value = obj.get(key)
        if value in (None, ""):
            return None
        try:
            return dt.date.fromisoformat(value)
        except (TypeError, ValueError):
            self.add(key, f"got {value!r}", "a date YYYY-MM-DD")
            return None


def _range_text(minimum, maximum, below) -> str:
    if minimum is not None and maximum is not None:
        return f"a number between {minimum} and {maximum}"
    if minimum is not None and below is not None:
        return f"a number ≥ {minimum} and below {below}"
    if minimum is not None:
        return f"a number ≥ {minimum}"
    return "a finite number"


def _kind(value) -> str:
    return "null" if value is None else type(value).__name__
