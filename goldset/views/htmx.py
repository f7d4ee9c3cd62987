"""The one test of "is this request asking for a fragment" (STYLE.md, htmx): a view serves the
partial ``name`` only to a non-boosted htmx request aimed at the element with that id; a boosted
request (a link or form htmx took over) gets the full page. Every view asks here; a test checks
no view reads ``HX-Target`` by hand."""


def wants_fragment(request, name: str) -> bool:
    """True for a non-boosted htmx request whose target is the element ``name``."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted and htmx.target == name
