"""Protocol rules for templates (loaded as a template builtin).

``{% protocol "NAME" %}``: the value in force of a protocol tunable (:mod:`goldset.conf`), so
a page says what the code does (loaded as a template builtin). Rates print as percentages with
``"percent"`` (``{% protocol "AUDIT_SAMPLE_RATE" "percent" %}`` → "5 %"), thresholds to two
decimals ("0.70"), seeds and counts as they are. Templates hold no protocol number of their own
(a test greps them)."""

from decimal import Decimal

from django import template

from goldset.conf import tunable
from goldset.rules.versions import is_superseded

register = template.Library()


def protocol_text(name: str, style: str = "", *, project=None) -> str:
    """How a page prints the tunable ``name`` (``project``'s value when given): ``style``
    "percent" for a rate, else the value (floats to two decimals)."""
    value = tunable(name, project=project)
    if style == "percent":
        return f"{float(Decimal(str(value)) * 100):g} %"
    if isinstance(value, float | Decimal) and not isinstance(value, bool):
        return f"{float(value):.2f}"
    return str(value)


@register.simple_tag(takes_context=True)
def protocol(context, name: str, style: str = "") -> str:
    """The value in force in the request's project (the installation's outside one)."""
    project = getattr(context.get("request"), "project", None)
    return protocol_text(name, style, project=project)


@register.filter
def superseded_by(pinned, newest) -> bool:
    """``{% if v.version|superseded_by:newest %}``: the pin rule
    (:func:`goldset.rules.versions.is_superseded`), so no template compares versions itself."""
    return pinned is not None and is_superseded(pinned=pinned, newest=newest)
