"""The access table covers every URL, names only real URLs, and is what decides access."""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, path

from workbench import access
from workbench.access import ACCESS, Entry, Kind, entry_for, register


def _view_names(patterns, namespace=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = p.namespace or ""
            if ns == "admin":
                yield "admin:*"
                continue
            prefix = f"{namespace}{ns}:" if ns else namespace
            yield from _view_names(p.url_patterns, prefix)
        elif isinstance(p, URLPattern) and p.name:
            yield f"{namespace}{p.name}"


def test_every_url_has_an_entry_and_every_entry_a_url():
    names = set(_view_names(get_resolver().url_patterns))
    missing = sorted(n for n in names if entry_for(n) is None)
    assert not missing, f"add these to workbench/access.py: {missing}"
    stale = sorted(set(ACCESS) - names)
    assert not stale, f"entries without a URL: {stale}"


def test_downloads_declare_fields_for_every_role_they_admit():
    for entry in ACCESS.values():
        if entry.kind != Kind.DOWNLOAD:
            continue
        tables = entry.variants.values() if entry.variants else [entry.fields]
        for table in tables:
            assert set(table) == set(entry.roles), entry.name


def test_registering_a_name_twice_is_refused():
    with pytest.raises(ValueError, match="already"):
        register(Entry("home", Kind.PAGE, access.EVERYONE))


def unlisted_view(request):
    raise AssertionError("the middleware must stop this before it runs")


urlpatterns = [path("unlisted/", unlisted_view, name="unlisted")]


@pytest.mark.urls(__name__)
@pytest.mark.django_db
def test_a_view_missing_from_the_table_is_not_reachable(client_for, admin_user):
    assert client_for(admin_user).get("/unlisted/").status_code == 404
