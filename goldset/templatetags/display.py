"""``{{ value|display }}``: a code's display name from :mod:`goldset.rules.display` (loaded as a
template builtin, so every template speaks with the same names); ``|display_list`` for lists."""

from django import template

from goldset.rules.display import display as display_name
from goldset.rules.display import display_list as display_names

register = template.Library()


@register.filter
def display(value):
    return display_name(value)


@register.filter
def display_list(values):
    return display_names(values or ())


@register.filter
def figure(value):
    """A figure as people read it: whole numbers as integers ("17", not "17.000"), others to
    three decimals."""
    if value is None:
        return "—"
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:.3f}"
