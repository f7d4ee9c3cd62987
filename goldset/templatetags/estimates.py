"""Formatting of figures with confidence intervals (``scoring`` Estimate dicts)."""

from django import template

register = template.Library()


def _num(value, digits: int, pct: bool) -> str:
    if value is None:
        return "—"
    return f"{100 * value:.1f} %" if pct else f"{value:.{digits}f}"


@register.filter
def est(estimate, arg="2"):
    """``{value, low, high}`` as "0.72 [0.69, 0.75]"; ``arg`` digits, or "pct" for percentages;
    the reason when undefined."""
    if not estimate:
        return "—"
    pct = arg == "pct"
    digits = 2 if pct else int(arg)
    if estimate.get("value") is None:
        return f"— ({estimate['reason']})" if estimate.get("reason") else "—"
    text = _num(estimate["value"], digits, pct)
    if estimate.get("low") is not None:
        text += f" [{_num(estimate['low'], digits, pct)}, {_num(estimate['high'], digits, pct)}]"
    return text


@register.filter
def num(value, digits=2):
    return _num(value, int(digits), False)


@register.filter
def pct(value):
    """A share in [0, 1] as "70.0 %" (— when unknown)."""
    if value in (None, ""):
        return "—"
    return _num(float(value), 1, True)
