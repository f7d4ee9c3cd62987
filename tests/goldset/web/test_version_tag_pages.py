"""Version tags on the versions pages (issue 29): everyone who sees versions (leads and admins)
sees the tags; only admins create, move and delete them (POST, CSRF), a refused name or version
re-renders the page with the field's error (422); another project's members get 404; the scoring
form offers the tags and scores the version a tag names when the run is sent."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from goldset.forms.exports import RunUploadForm
from goldset.models import ImportJob, VersionTag, VersionTagMove
from goldset.services.freeze import store_frozen_version
from goldset.services.projects import grant_role
from goldset.services.version_tags import set_version_tag
from tests.factories import UserFactory, default_project, gold_row_for, make_gold_corpus
from tests.goldset.project_support import other_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def versions(admin_user):
    blocks = make_gold_corpus(3)
    project = default_project()

    def freeze(subset):
        rows = [gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(subset)]
        return store_frozen_version(project=project, rows=rows, actor=admin_user)

    v1, v2 = freeze(blocks), freeze(blocks[:2])
    set_version_tag(
        project=project, actor=admin_user, name="release-2026q4", version=v1, note="signed off"
    )
    return v1, v2


def set_tag(client, **data):
    return client.post(reverse("exports:tag_set"), data)


@pytest.mark.parametrize("url_name", ["exports:versions", "exports:version"])
def test_leads_and_admins_see_the_tags_and_only_admins_the_form(
    client, client_for, annotator, lead, admin_user, versions, url_name
):
    url = reverse(url_name, args=[1] if url_name == "exports:version" else [])
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert client_for(annotator).get(url).status_code == 403  # versions are not theirs
    seen = client_for(lead).get(url)
    assert seen.status_code == 200
    text = seen.content.decode()
    assert "release-2026q4" in text and 'id="tag-form"' not in text
    assert reverse("exports:tag_delete", args=["release-2026q4"]) not in text
    admin = client_for(admin_user).get(url).content.decode()
    assert "release-2026q4" in admin and 'id="tag-form"' in admin
    assert reverse("exports:tag_delete", args=["release-2026q4"]) in admin


def test_the_version_list_shows_each_versions_tags_and_the_history(client_for, lead, versions):
    text = client_for(lead).get(reverse("exports:versions")).content.decode()
    assert 'id="tag-history"' in text and "signed off" in text and "created on v1" in text


def test_an_admin_moves_a_tag_and_the_history_says_so(client_for, admin_user, versions):
    admin = client_for(admin_user)
    response = set_tag(admin, name="release-2026q4", version="2", note="v2 is the release")
    assert response.status_code == 302 and response["Location"] == reverse(
        "exports:version", args=[2]
    )
    assert VersionTag.objects.get(name="release-2026q4").version.number == 2
    page = admin.get(response["Location"]).content.decode()
    assert "moved from v1 to v2" in page and 'id="version-tag-release-2026q4"' in page
    history = admin.get(reverse("exports:versions")).content.decode()
    assert "moved v1 → v2" in history and "v2 is the release" in history
    # a new tag, named by another tag's version
    assert set_tag(admin, name="ci", version="release-2026q4").status_code == 302
    assert VersionTag.objects.get(name="ci").version.number == 2


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.LEAD])
def test_annotators_and_leads_cannot_move_or_delete_a_tag(client_for, make_user, versions, role):
    user = client_for(make_user(role, username=f"no-{role}"))
    assert set_tag(user, name="release-2026q4", version="2").status_code == 403
    delete = user.post(reverse("exports:tag_delete", args=["release-2026q4"]))
    assert delete.status_code == 403
    assert VersionTag.objects.get(name="release-2026q4").version.number == 1
    assert VersionTagMove.objects.count() == 1


def test_anonymous_posts_go_to_the_login_page(client, versions):
    assert set_tag(client, name="ci", version="1").status_code == 302
    assert not VersionTag.objects.filter(name="ci").exists()


def test_the_forms_need_the_csrf_token(admin_user, versions):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    assert set_tag(strict, name="ci", version="1").status_code == 403
    delete = strict.post(reverse("exports:tag_delete", args=["release-2026q4"]))
    assert delete.status_code == 403
    assert not VersionTag.objects.filter(name="ci").exists()


@pytest.mark.parametrize(
    "data, field, message",
    [
        ({"name": "Release", "version": "1"}, "name", "cannot name a tag"),
        ({"name": "v3", "version": "1"}, "name", "cannot name a tag"),
        ({"name": "latest", "version": "1"}, "name", "cannot name a tag"),
        ({"name": "ci", "version": "9"}, "version", "gold version v9 is not frozen"),
        ({"name": "ci", "version": "nope"}, "version", "no gold version is tagged"),
        ({"name": "ci", "version": ""}, "version", "required"),
        ({"name": "", "version": "1"}, "name", "required"),
        ({"name": "ci", "version": "1", "note": "x" * 301}, "note", "at most 300"),
    ],
)
def test_refused_input_is_a_422_naming_the_field(
    client_for, admin_user, versions, data, field, message
):
    response = set_tag(client_for(admin_user), **data)
    assert response.status_code == 422
    errors = response.context["tag_form"].errors
    assert field in errors and message in " ".join(errors[field]), errors
    assert message.split(" ")[0] in response.content.decode()
    assert not VersionTag.objects.filter(name="ci").exists()


def test_an_admin_deletes_a_tag_with_a_note_and_its_history_stays(client_for, admin_user, versions):
    admin = client_for(admin_user)
    response = admin.post(
        reverse("exports:tag_delete", args=["release-2026q4"]), {"note": "superseded"}
    )
    assert response.status_code == 302 and response["Location"] == reverse("exports:versions")
    assert not VersionTag.objects.exists()
    move = VersionTagMove.objects.get(name="release-2026q4", to_version=None)
    assert move.note == "superseded" and move.moved_by == admin_user
    text = admin.get(reverse("exports:versions")).content.decode()
    assert "deleted (was v1)" in text
    assert admin.post(reverse("exports:tag_delete", args=["release-2026q4"])).status_code == 404


def test_a_tag_of_another_project_is_404_and_its_members_404_here(client_for, versions):
    beta = other_project(slug="beta")
    outsider = UserFactory(username="beta-only")
    grant_role(project=beta, user=outsider, role=Role.ADMIN)
    them = client_for(outsider)
    # not a member of the default project: its pages and actions are 404 under /p/default/
    for url in (reverse("exports:versions"), reverse("exports:version", args=[1])):
        assert them.get("/p/default" + url).status_code == 404
    assert (
        them.post(
            "/p/default" + reverse("exports:tag_set"), {"name": "x", "version": "1"}
        ).status_code
        == 404
    )
    delete = them.post("/p/default" + reverse("exports:tag_delete", args=["release-2026q4"]))
    assert delete.status_code == 404
    # in their own project the default project's tag names nothing
    assert (
        them.post("/p/beta" + reverse("exports:tag_delete", args=["release-2026q4"])).status_code
        == 404
    )
    refused = them.post(
        "/p/beta" + reverse("exports:tag_set"), {"name": "x", "version": "release-2026q4"}
    )
    assert refused.status_code == 422
    assert VersionTag.objects.get().name == "release-2026q4"


def test_the_diff_page_takes_tags_and_latest(client_for, lead, versions):
    response = client_for(lead).get(reverse("exports:diff") + "?a=release-2026q4&b=latest")
    assert response.status_code == 200
    assert response.context["diff"].a.number == 1 and response.context["diff"].b.number == 2
    assert client_for(lead).get(reverse("exports:diff") + "?a=nope&b=1").status_code == 404


def test_the_version_pages_take_a_tag_or_latest_beside_the_number(client_for, lead, versions):
    v1, v2 = versions
    seen = client_for(lead)
    assert (
        reverse("exports:version", kwargs={"ref": "release-2026q4"}) == "/versions/release-2026q4/"
    )
    assert reverse("exports:version", args=[1]) == "/versions/v1/"  # a number keeps its URL
    for url, expected in [("/versions/release-2026q4/", v1), ("/versions/RELEASE-2026q4/", v1),
                          ("/versions/latest/", v2), ("/versions/v1/", v1)]:  # fmt: skip
        page = seen.get(url)
        assert page.status_code == 200 and page.context["version"] == expected, url
    for url in ("/versions/nope/", "/versions/v9/", "/versions/9/"):
        assert seen.get(url).status_code == 404, url
    by_number = seen.get(reverse("exports:download", args=[1, "gold_jsonl"]))
    by_tag = seen.get(
        reverse("exports:download", kwargs={"ref": "release-2026q4", "fmt": "gold_jsonl"})
    )
    assert by_tag.status_code == 200
    assert by_tag["X-Checksum-SHA256"] == by_number["X-Checksum-SHA256"]
    assert b"".join(by_tag.streaming_content) == b"".join(by_number.streaming_content)
    missing = seen.get(reverse("exports:download", kwargs={"ref": "nope", "fmt": "gold_jsonl"}))
    assert missing.status_code == 404


def test_the_scoring_form_offers_tags_and_scores_the_version_the_tag_names(
    client_for, admin_user, versions
):
    admin = client_for(admin_user)
    page = admin.get(reverse("exports:jobs")).content.decode()
    assert "release-2026q4 → v1" in page
    form = RunUploadForm(
        {"version": "release-2026q4", "name": "bm25", "k": 10},
        {"file": _run()},
        project=default_project(),
    )
    assert form.is_valid(), form.errors
    assert form.cleaned_data["version"] == versions[0]
    response = admin.post(
        reverse("exports:jobs"),
        {"version": "release-2026q4", "name": "bm25", "k": 10, "file": _run()},
    )
    assert response.status_code in (302, 422), response.content[:500]  # queued, or refused
    job = ImportJob.objects.get(kind="run")
    assert job.options["version"] == 1  # read once: moving the tag later changes nothing
    bad = RunUploadForm(
        {"version": "nope", "name": "x", "k": 10}, {"file": _run()}, project=default_project()
    )
    assert not bad.is_valid() and "no gold version is tagged 'nope'" in bad.errors["version"][0]


def _run():
    return SimpleUploadedFile("run.trec", b"Q-0 Q0 blk 1 2.0 s\n")
