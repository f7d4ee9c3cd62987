"""Protocol rules for templates (loaded as a template builtin).

``{% protocol "NAME" %}``: the value in force of a protocol tunable (:mod:`goldset.conf`) in the
page's project (``request.project``, via the ``protocol`` context processor; ``project=p`` names
another, e.g. in an e-mail rendered outside a request), so a page says what the code does. Rates print as percentages with
``"percent"`` (``{% protocol "AUDIT_SAMPLE_RATE" "percent" %}`` → "5 %"), thresholds to two
decimals ("0.70"), seeds and counts as they are; on a project's page, the project's values. Templates hold no protocol number of their own
(a test greps them)."""

import json
from decimal import Decimal

from django import template

from goldset.conf import tunable
from goldset.rules.versions import is_superseded

register = template.Library()


def protocol_text(name: str, style: str = "", *, project=None) -> str:
    """How a page prints the tunable ``name`` in force in ``project`` (the installation's value
    without one): ``style`` "percent" for a rate, else the value (floats to two decimals)."""
    value = tunable(name, project=project)
    if style == "percent":
        return f"{float(Decimal(str(value)) * 100):g} %"
    if isinstance(value, float | Decimal) and not isinstance(value, bool):
        return f"{float(value):.2f}"
    return str(value)


def context_project(context):
    """The project a template prints values for: the context processor's ``protocol_project``,
    else the request's project, else None (the installation)."""
    project = context.get("protocol_project")
    if project is None:
        project = getattr(context.get("request"), "project", None)
    return project


@register.simple_tag(takes_context=True)
def protocol(context, name: str, style: str = "", project=None) -> str:
    return protocol_text(name, style, project=project or context_project(context))


@register.filter
def protocol_value(value) -> str:
    """A tunable's value as the environment would spell it (the settings page): JSON for an
    object, ``true``/``false``, numbers as they are."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)


@register.filter
def superseded_by(pinned, newest) -> bool:
    """``{% if v.version|superseded_by:newest %}``: the pin rule
    (:func:`goldset.rules.versions.is_superseded`), so no template compares versions itself."""
    return pinned is not None and is_superseded(pinned=pinned, newest=newest)
