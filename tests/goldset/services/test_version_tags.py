"""Version tags (issue 29): one resolver reads a number, ``v7``, a tag or ``latest`` in the
project it is asked in (another project's tag is unknown there); only a project admin creates,
moves or deletes a tag, always onto a sealed version of its own project; every change is kept in
the tag's history, audited, and sent as a ``tag.moved`` webhook event without the note or the
person."""

import pytest
from django.http import Http404

from goldset.exceptions import CrossProjectReference
from goldset.models import Domain, GoldVersion, VersionTag, VersionTagMove, WebhookEvent
from goldset.services import webhooks
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import check_options
from goldset.services.projects import grant_role
from goldset.services.version_tags import (
    TagRefused,
    UnknownVersion,
    VersionRefused,
    delete_version_tag,
    resolve_version,
    set_version_tag,
)
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    UserFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from tests.goldset.project_support import other_project
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def freeze(project, blocks, actor, *, prefix="Q"):
    rows = [gold_row_for(bv, triple_id=f"{prefix}-{i}") for i, bv in enumerate(blocks)]
    return store_frozen_version(project=project, rows=rows, actor=actor)


@pytest.fixture
def versions(admin_user):
    """The default project's v1 (three triples) and v2 (two: a filtered subset, frozen last)."""
    blocks = make_gold_corpus(3)
    return freeze(default_project(), blocks, admin_user), freeze(
        default_project(), blocks[:2], admin_user
    )


@pytest.fixture
def other(versions):
    """A second project with its own v1 and v2, an admin of it who is no member of the default
    project, and a tag ``release`` on its v1."""
    project = other_project(slug="beta")
    admin = UserFactory(username="beta-admin")
    grant_role(project=project, user=admin, role=Role.ADMIN)
    domain = Domain.objects.create(project=project, slug="beta_domain", name="Beta")
    document = DocumentFactory(project=project, document_id="beta-doc", domain=domain)
    blocks = [
        BlockVersionFactory(
            block=BlockFactory(project=project, block_id=f"beta-{i}", document=document)
        )
        for i in range(2)
    ]
    v1 = freeze(project, blocks, admin, prefix="B")
    freeze(project, blocks[:1], admin, prefix="B")
    set_version_tag(project=project, actor=admin, name="release", version=v1)
    return {"project": project, "admin": admin, "v1": v1}


# ---------------------------------------------------------------- the resolver


def test_a_number_a_v_number_a_tag_and_latest_name_a_version(versions, admin_user):
    v1, v2 = versions
    project = default_project()
    set_version_tag(project=project, actor=admin_user, name="release-2026q4", version=v1)
    assert resolve_version(project=project, ref=1) == v1
    assert resolve_version(project=project, ref="2") == v2
    assert resolve_version(project=project, ref="v1") == v1
    assert resolve_version(project=project, ref="V2") == v2
    assert resolve_version(project=project, ref="release-2026q4") == v1
    # latest is whatever was frozen last, even the filtered subset: the reason tags exist
    assert resolve_version(project=project, ref="latest") == v2
    assert resolve_version(project=project, ref="latest").row_count == 2


@pytest.mark.parametrize(
    "ref, message",
    [
        (9, "gold version v9 is not frozen"),
        ("v9", "gold version v9 is not frozen"),
        (0, "gold version v0 is not frozen"),
        ("9" * 40, "is not frozen"),
        ("nightly", "no gold version is tagged 'nightly'"),
        ("Bad Name!", "is not a version number (7, v7), a tag or 'latest'"),
        ("ci\n", "is not a version number"),
        ("", "no version given"),
        (None, "no version given"),
    ],
)
def test_an_unknown_reference_is_the_not_found_error(versions, ref, message):
    with pytest.raises(UnknownVersion, match=message.replace("(", r"\(").replace(")", r"\)")):
        resolve_version(project=default_project(), ref=ref)
    assert issubclass(UnknownVersion, Http404)


def test_latest_before_a_first_freeze_is_not_found(db):
    with pytest.raises(UnknownVersion, match="no gold version is frozen yet"):
        resolve_version(project=default_project(), ref="latest")


def test_a_tag_of_project_a_never_resolves_in_project_b(versions, other):
    # the other project's tag names nothing here, though this project has a v1 too
    with pytest.raises(UnknownVersion, match="tagged 'release'"):
        resolve_version(project=default_project(), ref="release")
    assert resolve_version(project=other["project"], ref="release") == other["v1"]
    assert resolve_version(project=other["project"], ref="1") == other["v1"]
    assert resolve_version(project=default_project(), ref="1") == versions[0]


def test_an_unsealed_version_is_never_resolved(versions):
    GoldVersion.objects.create(project=default_project(), number=3)  # being frozen
    with pytest.raises(UnknownVersion):
        resolve_version(project=default_project(), ref=3)
    assert resolve_version(project=default_project(), ref="latest").number == 2


# ---------------------------------------------------------------- creating, moving, deleting


def test_creating_and_moving_a_tag_keeps_its_history_and_is_audited(versions, admin_user):
    v1, v2 = versions
    project = default_project()
    created = set_version_tag(project=project, actor=admin_user, name="ci", version=v1, note="a")
    assert created.created and created.changed and created.previous is None
    moved = set_version_tag(project=project, actor=admin_user, name="ci", version=v2, note="b")
    assert not moved.created and moved.changed and moved.previous == v1
    tag = VersionTag.objects.get(project=project, name="ci")
    assert (tag.version, tag.note, tag.moved_by) == (v2, "b", admin_user)
    history = list(VersionTagMove.objects.filter(project=project, name="ci"))
    assert [(m.action, m.from_version, m.to_version, m.note) for m in history] == [
        ("moved", v1, v2, "b"),
        ("created", None, v1, "a"),
    ]
    events = AuditEvent.objects.filter(verb__startswith="version_tag_").order_by("pk")
    assert [(e.verb, e.detail["from"], e.detail["to"], e.actor) for e in events] == [
        ("version_tag_created", None, 1, admin_user),
        ("version_tag_moved", 1, 2, admin_user),
    ]
    assert all(e.project_id == project.pk for e in events)


def test_setting_a_tag_where_it_already_is_records_nothing(versions, admin_user):
    v1, _ = versions
    project = default_project()
    set_version_tag(project=project, actor=admin_user, name="ci", version=v1)
    again = set_version_tag(project=project, actor=admin_user, name="ci", version=v1, note="x")
    assert not again.created and not again.changed
    assert VersionTagMove.objects.filter(name="ci").count() == 1
    assert AuditEvent.objects.filter(verb__startswith="version_tag_").count() == 1


def test_deleting_a_tag_keeps_its_history(versions, admin_user):
    v1, _ = versions
    project = default_project()
    set_version_tag(project=project, actor=admin_user, name="ci", version=v1)
    move = delete_version_tag(project=project, actor=admin_user, name="ci", note="gone")
    assert (move.action, move.from_version, move.to_version) == ("deleted", v1, None)
    assert not VersionTag.objects.filter(name="ci").exists()
    assert VersionTagMove.objects.filter(name="ci").count() == 2
    assert AuditEvent.objects.filter(verb="version_tag_deleted", detail__tag="ci").exists()
    with pytest.raises(Http404):
        delete_version_tag(project=project, actor=admin_user, name="ci")


@pytest.mark.parametrize("role", [Role.LEAD, Role.ANNOTATOR])
def test_only_a_project_admin_moves_a_tag(versions, make_user, admin_user, role):
    v1, v2 = versions
    project = default_project()
    set_version_tag(project=project, actor=admin_user, name="ci", version=v1)
    user = make_user(role, username=f"not-admin-{role}")
    with pytest.raises(TagRefused, match="only a project admin"):
        set_version_tag(project=project, actor=user, name="ci", version=v2)
    with pytest.raises(TagRefused, match="only a project admin"):
        delete_version_tag(project=project, actor=user, name="ci")
    assert VersionTag.objects.get(name="ci").version == v1


def test_an_admin_of_another_project_moves_no_tag_here(versions, other):
    with pytest.raises(TagRefused, match="only a project admin"):
        set_version_tag(
            project=default_project(), actor=other["admin"], name="ci", version=versions[0]
        )


def test_a_tag_never_points_at_an_unsealed_or_another_projects_version(versions, other, admin_user):
    project = default_project()
    unsealed = GoldVersion.objects.create(project=project, number=3)
    with pytest.raises(TagRefused, match="v3 is not frozen") as refused:
        set_version_tag(project=project, actor=admin_user, name="ci", version=unsealed)
    assert refused.value.field == "version"
    with pytest.raises(CrossProjectReference, match="another project"):
        set_version_tag(project=project, actor=admin_user, name="ci", version=other["v1"])
    assert not VersionTag.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    "name",
    ["", "CI", "7", "v7", "V12", "latest", "diff", "freeze", "tags", "jobs", "-ci", ".hidden",
     "a b", "a/b", "ci\n", "é", "x" * 65],
)  # fmt: skip
def test_a_name_a_tag_may_not_take_is_refused_naming_the_field(versions, admin_user, name):
    with pytest.raises(TagRefused) as refused:
        set_version_tag(project=default_project(), actor=admin_user, name=name, version=versions[0])
    assert refused.value.field == "name"
    assert not VersionTag.objects.exists()


@pytest.mark.parametrize("name", ["ci", "release-2026q4", "rc.1", "a_b", "2026q4", "x" * 64])
def test_names_of_letters_digits_dashes_dots_and_underscores_are_taken(versions, admin_user, name):
    set_version_tag(project=default_project(), actor=admin_user, name=name, version=versions[0])
    assert resolve_version(project=default_project(), ref=name) == versions[0]


def test_a_note_over_300_characters_is_refused(versions, admin_user):
    with pytest.raises(TagRefused) as refused:
        set_version_tag(
            project=default_project(), actor=admin_user, name="ci", version=versions[0],
            note="x" * 301,
        )  # fmt: skip
    assert refused.value.field == "note"


def test_the_same_name_in_two_projects_is_two_tags(versions, other, admin_user):
    set_version_tag(
        project=default_project(), actor=admin_user, name="release", version=versions[1]
    )
    assert resolve_version(project=default_project(), ref="release") == versions[1]
    assert resolve_version(project=other["project"], ref="release") == other["v1"]


# ---------------------------------------------------------------- the webhook event


@pytest.fixture
def endpoint(admin_user, receiver, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    endpoint, secret = webhooks.create_webhook_endpoint(
        project=default_project(),
        actor=admin_user,
        url=receiver.url,
        events=[WebhookEvent.TAG_MOVED],
    )
    receiver.secret = secret
    return endpoint


def test_every_change_is_a_signed_tag_moved_event_without_the_note_or_the_admin(
    versions, endpoint, receiver, admin_user, django_capture_on_commit_callbacks
):
    v1, v2 = versions
    project = default_project()
    for change in (
        lambda: set_version_tag(
            project=project, actor=admin_user, name="ci", version=v1, note="secret reason"
        ),
        lambda: set_version_tag(project=project, actor=admin_user, name="ci", version=v2),
        lambda: set_version_tag(project=project, actor=admin_user, name="ci", version=v2),
        lambda: delete_version_tag(project=project, actor=admin_user, name="ci"),
    ):
        with django_capture_on_commit_callbacks(execute=True):
            change()
    requests = receiver.wait_for(3)
    assert all(r.verified for r in requests)
    payloads = [r.payload for r in requests]
    assert {p["type"] for p in payloads} == {"tag.moved"}
    data = [p["data"] for p in payloads]
    assert [(d["action"], d["from_version"], d["to_version"]) for d in data] == [
        ("created", None, 1),
        ("moved", 1, 2),
        ("deleted", 2, None),
    ]  # the no-op in between sent nothing
    assert set(data[0]) == {"tag", "action", "from_version", "to_version", "moved_at", "links"}
    assert data[1]["links"] == {
        "page": "/p/default/versions/v2/",
        "api": "/api/v1/projects/default/tags/ci/",
    }
    text = b"".join(r.body for r in requests).decode()
    assert "secret reason" not in text and admin_user.username not in text


def test_another_projects_endpoints_never_hear_of_this_projects_tags(
    versions, other, admin_user, django_capture_on_commit_callbacks, settings
):
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    theirs, _ = webhooks.create_webhook_endpoint(
        project=other["project"], actor=other["admin"], url="http://127.0.0.1:9/x",
        events=[WebhookEvent.TAG_MOVED],
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=False):
        set_version_tag(project=default_project(), actor=admin_user, name="ci", version=versions[0])
    assert not theirs.deliveries.exists()


# ---------------------------------------------------------------- a run names a tag


def test_a_run_import_reads_a_tag_once_and_keeps_its_number(versions, admin_user):
    v1, _ = versions
    project = default_project()
    set_version_tag(project=project, actor=admin_user, name="ci", version=v1)
    options = check_options(
        project=project, kind="run", actor=admin_user, options={"version": "ci", "name": "x"}
    )
    assert options["version"] == 1
    assert check_options(
        project=project, kind="run", actor=admin_user, options={"version": "latest"}
    )["version"] == 2  # fmt: skip
    with pytest.raises(VersionRefused, match="tagged 'nope'") as refused:
        check_options(project=project, kind="run", actor=admin_user, options={"version": "nope"})
    assert refused.value.field == "version"
