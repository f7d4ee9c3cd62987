"""CSV cells that a spreadsheet would run as a formula are neutralised (OWASP "CSV injection"):
a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
apostrophe. Numbers stay numbers."""

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value):
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_safe_row(row) -> list:
    return [csv_safe(v) for v in row]
