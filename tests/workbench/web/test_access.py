import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

ROLE_PAGES = [
    ("home", {}),
    ("corpus:documents", {}),
]


@pytest.mark.parametrize("name,kwargs", ROLE_PAGES + [("corpus:import", {})])
def test_anonymous_users_are_redirected_to_login(client, name, kwargs):
    url = reverse(name, kwargs=kwargs)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login") + "?next=")


@pytest.mark.parametrize("fixture", ["annotator", "lead", "admin_user"])
@pytest.mark.parametrize("name,kwargs", ROLE_PAGES)
def test_every_role_reaches_home_and_corpus(request, client_for, fixture, name, kwargs):
    user = request.getfixturevalue(fixture)
    assert client_for(user).get(reverse(name, kwargs=kwargs)).status_code == 200


@pytest.mark.parametrize("fixture", ["annotator", "lead"])
def test_only_admins_reach_the_import_page(request, client_for, fixture, admin_user):
    user = request.getfixturevalue(fixture)
    assert client_for(user).get(reverse("corpus:import")).status_code == 403
    assert client_for(admin_user).get(reverse("corpus:import")).status_code == 200


def test_user_without_any_role_is_forbidden(client_for, make_user):
    nobody = make_user(role=None, username="norole")
    assert client_for(nobody).get(reverse("home")).status_code == 403


def test_home_shows_each_role_its_own_next_steps(client_for, annotator, lead, admin_user):
    ann_html = client_for(annotator).get(reverse("home")).content.decode()
    lead_html = client_for(lead).get(reverse("home")).content.decode()
    admin_html = client_for(admin_user).get(reverse("home")).content.decode()
    assert 'id="annotator-actions"' in ann_html and 'id="admin-actions"' not in ann_html
    assert 'id="lead-actions"' in lead_html and 'id="admin-actions"' not in lead_html
    assert 'id="admin-actions"' in admin_html and reverse("corpus:import") in admin_html
