"""A retried write is applied once (issue 29: retries "idempotent calls only, or with an
idempotency key"). Against the live server, a transport loses the answer to the first try of
every write after the server applied it, as a dropped connection does: the client tries again
with the same ``Idempotency-Key`` and gets the first try's answer (``Idempotent-Replayed``), so
a sampling rule's PATCH is one new version (not a 422 "changes nothing", not two), a webhook's
PATCH one change, a DELETE a 204 (not a 404) and a POST one object: a pairwise task, a
project, a member (201, not the 200 of "already a member")."""

import httpx
import pytest
from django.core.cache import cache
from goldset_client import GoldsetClient, RetryPolicy

from goldset.models import PairwiseTask, Project, SamplingRule, WebhookEndpoint
from tests.goldset.pairwise_support import build_runs
from workbench.models import AuditEvent
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class LosesFirstAnswers(httpx.HTTPTransport):
    """Sends every request; of each distinct write (method, URL, body) the first answer is lost
    after the server sent it. Keeps the answers the client did receive (``received``)."""

    def __init__(self):
        super().__init__()
        self.seen: set[tuple[str, str, bytes]] = set()
        self.received: list[tuple[str, str, int, str | None]] = []

    def handle_request(self, request):
        response = super().handle_request(request)
        write = (request.method, str(request.url), request.read())
        if request.method != "GET" and write not in self.seen:
            self.seen.add(write)
            response.read()
            response.close()
            raise httpx.ReadError(
                "the connection dropped after the server answered", request=request
            )
        self.received.append(
            (
                request.method,
                request.url.path,
                response.status_code,
                response.headers.get("Idempotent-Replayed"),
            )
        )
        return response


def test_a_retried_write_whose_first_try_was_applied_is_applied_once(
    make_user, settings, live_server
):
    settings.API_TOKEN_RATE = "100000/min"
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    cache.clear()
    admin = make_user(Role.ADMIN, username="retry-admin")
    _, token = create_api_token(user=admin, name="retry", scope="write")
    transport = LosesFirstAnswers()
    quick = RetryPolicy(attempts=3, backoff=0.01, max_backoff=0.02)
    with GoldsetClient(live_server.url, token, retry=quick, transport=transport) as gs:
        rule = gs.create_sampling_rule("tenth", "percentage", percentage="10", seed=7)
        assert rule.version == 1 and SamplingRule.objects.count() == 1
        changed = gs.update_sampling_rule(rule.id, daily_cap=5, note="spike")
        assert (changed.version, changed.daily_cap) == (2, 5)
        assert SamplingRule.objects.get(pk=rule.id).version == 2
        assert AuditEvent.objects.filter(verb="sampling_rule_changed").count() == 1

        hook = gs.create_webhook("http://127.0.0.1:9/hook", ["tag.moved"])
        assert WebhookEndpoint.objects.count() == 1
        assert hook.secret  # the first try's answer, secret included
        assert gs.patch_webhook(hook.id, enabled=False).enabled is False
        assert AuditEvent.objects.filter(verb="webhook_endpoint_disabled").count() == 1
        assert gs.delete_webhook(hook.id) is None
        assert not WebhookEndpoint.objects.exists()

        runs, _, _ = build_runs(n_systems=2, n_questions=2, domain_slug="retry_pairwise")
        task = gs.create_pairwise_task("retried", [run.pk for run in runs], seed=4)
        assert PairwiseTask.objects.get().pk == task.id and task.pairs == 2

        made = gs.create_project("retry-bot", "Retry bot")
        assert made.role == "admin" and Project.objects.filter(slug="retry-bot").count() == 1
        renamed = gs.update_project(name="Retry bot 2", project="retry-bot")
        assert renamed.name == "Retry bot 2"
        assert AuditEvent.objects.filter(verb="project.update").count() == 1
        settings_now = gs.update_project_settings(project="retry-bot", KAPPA_GATE="0.8")
        assert {r.name: r.own for r in settings_now}["KAPPA_GATE"] == "0.8"
        assert AuditEvent.objects.filter(verb="project.settings").count() == 1
        make_user(Role.ANNOTATOR, username="retry-member")
        assert gs.add_member("retry-member", "annotator", project="retry-bot").role == "annotator"
        promoted = gs.set_member_role("retry-member", "adjudication_lead", project="retry-bot")
        assert promoted.role == "adjudication_lead"
        assert gs.remove_member("retry-member", project="retry-bot") is None
        assert gs.delete_project("retry-bot") is None
        assert not Project.objects.filter(slug="retry-bot").exists()
    writes = [r for r in transport.received if r[0] != "GET"]
    assert [(method, status, replayed) for method, _, status, replayed in writes] == [
        ("POST", 201, "true"),
        ("PATCH", 200, "true"),
        ("POST", 201, "true"),
        ("PATCH", 200, "true"),
        ("DELETE", 204, "true"),
        ("POST", 201, "true"),  # the pairwise task
        ("POST", 201, "true"),  # the project
        ("PATCH", 200, "true"),
        ("PATCH", 200, "true"),  # its settings
        ("POST", 201, "true"),  # a member
        ("PATCH", 200, "true"),
        ("DELETE", 204, "true"),
        ("DELETE", 204, "true"),  # the project
    ]
