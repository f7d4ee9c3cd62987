"""Issue 24: an API request repeated with the same Idempotency-Key creates once; its first
answer is replayed (draft-ietf-httpapi-idempotency-key-header)."""

import pytest
from django.urls import reverse

from goldset.models import ImportJob, Project
from goldset.services.projects import create_project, grant_role
from tests.goldset.api.test_api import PROBLEM
from workbench.models import IdempotencyKey
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token
from workbench.services.idempotency import claim_api_key
from workbench.services.rate_limits import reset_cache_outage


def bearer(raw, key=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    if key:
        headers["HTTP_IDEMPOTENCY_KEY"] = key
    return headers


@pytest.fixture
def write_token(admin_user):
    reset_cache_outage()
    return create_api_token(user=admin_user, name="ci", scope="write")[1]


def post_run(client, version, raw, key, score=1.0):
    """A run posted as JSON (a different ``score``: different content, which the imports would
    otherwise recognise as the same upload)."""
    run = [
        {"query_id": f"Q-{i}", "results": [{"doc_id": version.blocks[i], "score": score}]}
        for i in range(6)
    ]
    return client.post(
        reverse("api:jobs"),
        {"version": 1, "name": "bm25", "k": 10, "run": run},
        content_type="application/json",
        **bearer(raw, key),
    )


@pytest.mark.django_db
def test_a_repeated_api_request_with_one_idempotency_key_creates_once(
    client, version, write_token, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        first = post_run(client, version, write_token, "ci-run-42")
        second = post_run(client, version, write_token, "ci-run-42")
    assert first.status_code == second.status_code == 202
    assert ImportJob.objects.filter(kind="run").count() == 1
    assert second["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert second.content == first.content and second["Location"] == first["Location"]
    # a retry's body is not read again: even other content under the key creates nothing
    changed = post_run(client, version, write_token, "ci-run-42", score=5.0)
    assert changed["Idempotent-Replayed"] == "true"
    assert ImportJob.objects.filter(kind="run").count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        other = post_run(client, version, write_token, "ci-run-43", score=2.0)
        no_key = post_run(client, version, write_token, None, score=3.0)
    assert other.status_code == no_key.status_code == 202
    assert ImportJob.objects.filter(kind="run").count() == 3


@pytest.mark.django_db
def test_an_idempotency_key_reused_elsewhere_is_422_and_a_running_one_409(
    client, admin_user, version, write_token, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        assert post_run(client, version, write_token, "k1").status_code == 202
    reused = client.post(
        reverse("api:version_freeze"), {}, content_type="application/json",
        **bearer(write_token, "k1"),
    )  # fmt: skip
    assert reused.status_code == 422 and reused["Content-Type"] == PROBLEM
    claim_api_key(user=admin_user, key="k2", method="POST", path="/api/v1/jobs/")  # still running
    running = post_run(client, version, write_token, "k2")
    assert running.status_code == 409 and running["Content-Type"] == PROBLEM
    assert ImportJob.objects.filter(kind="run").count() == 1


@pytest.mark.django_db
def test_a_caller_refused_by_role_or_scope_claims_no_key(client, lead, version):
    _, read = create_api_token(user=lead, name="ro", scope="read")
    reset_cache_outage()
    assert post_run(client, version, read, "k3").status_code == 403
    assert not IdempotencyKey.objects.exists()


@pytest.mark.django_db
def test_a_key_whose_first_request_never_answered_is_free_again(
    client, admin_user, version, write_token, django_capture_on_commit_callbacks
):
    """A process that died mid-request left its key running: after ABANDONED_AFTER it is free."""
    from django.utils import timezone

    from workbench.services.idempotency import ABANDONED_AFTER

    claim = claim_api_key(user=admin_user, key="k4", method="POST", path="/api/v1/jobs/")
    IdempotencyKey.objects.filter(pk=claim.row.pk).update(
        created_at=timezone.now() - ABANDONED_AFTER - ABANDONED_AFTER
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = post_run(client, version, write_token, "k4")
    assert response.status_code == 202 and "Idempotent-Replayed" not in response
    assert IdempotencyKey.objects.get(key="api:k4").status_code == 202


@pytest.mark.django_db
def test_a_rate_limited_first_request_frees_its_key_for_the_retry(
    client, version, write_token, settings, django_capture_on_commit_callbacks
):
    from django.core.cache import cache

    cache.clear()
    settings.API_TOKEN_RATE = "1/min"
    assert client.get(reverse("api:versions"), **bearer(write_token)).status_code == 200
    limited = post_run(client, version, write_token, "k5")
    assert limited.status_code == 429
    assert not IdempotencyKey.objects.filter(key="api:k5").exists()
    cache.clear()  # the window has passed
    with django_capture_on_commit_callbacks(execute=True):
        retried = post_run(client, version, write_token, "k5")
    assert retried.status_code == 202 and "Idempotent-Replayed" not in retried


@pytest.mark.django_db
def test_a_repeat_whose_first_request_took_away_the_callers_access_gets_the_first_answer(
    client, admin_user, make_user
):
    """Deleting a project, or demoting yourself, leaves the repeat no access (404, 403): it gets
    the kept answer all the same, and only the caller who sent it, under its key, with a token
    that reaches the project, does."""
    reset_cache_outage()
    create_project(name="Bot", slug="bot", by=admin_user)
    owner = make_user(Role.ANNOTATOR, username="bot-owner")
    grant_role(project=Project.objects.get(slug="bot"), user=owner, role=Role.ADMIN)
    _, raw = create_api_token(user=owner, name="own", scope="write")
    member = "/api/v1/projects/bot/members/bot-owner/"
    body = {"data": '{"role": "annotator"}', "content_type": "application/json"}
    demoted = client.patch(member, **body, **bearer(raw, "demote-1"))
    assert demoted.status_code == 200 and demoted.json()["role"] == "annotator"
    again = client.patch(member, **body, **bearer(raw, "demote-1"))
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.content == demoted.content
    assert client.patch(member, **body, **bearer(raw, "demote-2")).status_code == 403
    # a token limited to another of the owner's projects reaches nothing in this one
    policy = create_project(name="Policy", slug="policy", by=admin_user)
    grant_role(project=policy, user=owner, role=Role.ADMIN)
    _, limited = create_api_token(user=owner, name="policy", scope="write", project=policy)
    assert client.patch(member, **body, **bearer(limited, "demote-1")).status_code == 404

    staff = create_api_token(user=admin_user, name="staff", scope="write")[1]
    deleted = client.delete("/api/v1/projects/bot/", **bearer(staff, "d-1"))
    assert deleted.status_code == 204 and not Project.objects.filter(slug="bot").exists()
    repeat = client.delete("/api/v1/projects/bot/", **bearer(staff, "d-1"))
    assert repeat.status_code == 204 and repeat["Idempotent-Replayed"] == "true"
    assert client.delete("/api/v1/projects/bot/", **bearer(staff, "d-2")).status_code == 404
    # the key is the admin's: the same key from another caller replays nothing
    assert client.delete("/api/v1/projects/bot/", **bearer(raw, "d-1")).status_code == 404
