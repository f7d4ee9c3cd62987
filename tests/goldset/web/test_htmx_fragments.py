"""One htmx helper: a view serves a fragment only to a non-boosted htmx request aimed at it
(``goldset.views.htmx.wants_fragment``), and no view reads the target by hand."""

import ast
from pathlib import Path

import pytest
from django.urls import reverse

ROOT = Path(__file__).resolve().parents[3]
HELPER = ROOT / "goldset" / "views" / "htmx.py"

pytestmark = pytest.mark.django_db


def _hand_made_target_checks(path: Path) -> list[str]:
    """Each place ``path`` reads the htmx target or the HX-Target header itself."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr in ("target", "boosted"):
            inner = node.value
            if isinstance(inner, ast.Attribute) and inner.attr == "htmx":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(inner, ast.Name) and inner.id == "htmx":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.lower() in ("hx-target", "http_hx_target", "hx-boosted"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_view_checks_the_htmx_target_by_hand():
    sources = [
        p
        for package in ("goldset", "workbench")
        for p in (ROOT / package).rglob("*.py")
        if p != HELPER and "migrations" not in p.parts
    ]
    offenders = [hit for p in sources for hit in _hand_made_target_checks(p)]
    assert offenders == []
    # the scan itself finds a hand-made check
    assert _hand_made_target_checks(HELPER)


def test_a_boosted_request_aimed_at_a_fragment_gets_the_whole_page(client_for, admin_user):
    admin = client_for(admin_user)
    url = reverse("exports:freeze")
    fragment = admin.post(
        url, {"action": "preview"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="freeze-preview"
    )
    boosted = admin.post(
        url,
        {"action": "preview"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_BOOSTED="true",
        HTTP_HX_TARGET="freeze-preview",
    )
    assert fragment.status_code == boosted.status_code == 200
    assert "<html" not in fragment.content.decode()
    assert "<html" in boosted.content.decode()


def test_a_boosted_request_aimed_at_the_confusion_matrix_gets_the_dashboard(client_for, lead):
    url = reverse("quality:agreement")
    client = client_for(lead)
    plain = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="confusion")
    boosted = client.get(
        url, HTTP_HX_REQUEST="true", HTTP_HX_BOOSTED="true", HTTP_HX_TARGET="confusion"
    )
    assert "<html" not in plain.content.decode()
    assert "<html" in boosted.content.decode()
