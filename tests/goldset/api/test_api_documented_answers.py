"""Every answer the live API gives is in its schema (issue 29: "every status code and response
header in the schema"), operation by operation over HTTP: a call without credentials is the
documented 401 with its challenge; a method a path does not take is the documented 405 whose
Allow names exactly the path's documented methods; a body of a type the operation does not read
is the documented 415; a label submit under a held row is the documented 503 with its
Retry-After; and every answer carries the documented X-Request-ID. (The 2xx and rule answers of
every operation are checked the same way in ``tests/client/test_client_operations.py``.)"""

import re
from decimal import Decimal

import httpx
import pytest
from django.core.cache import cache

from goldset.models import AnswerRecord, PairStatus, PairwisePair, WebhookEndpoint
from goldset.services.evaluators import create_evaluator
from goldset.services.sampling import create_sampling_rule
from tests.factories import DomainFactory, default_project
from tests.goldset.answers_helpers import GOOD, build_conflict_item
from tests.goldset.api.documented import Answer, Documented
from tests.goldset.pairwise_support import build_runs, judge_next, make_task, reviewers
from tests.goldset.web.test_submit_lock_waits import held
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
METHODS = ("get", "post", "put", "patch", "delete")
PROBLEM = "application/problem+json"


@pytest.fixture
def api(make_user, settings, live_server):
    """The live schema, its operations, and write tokens of an admin and an annotator."""
    settings.API_TOKEN_RATE = "100000/min"
    cache.clear()
    schema = httpx.get(f"{live_server.url}/api/v1/schema/?format=json", timeout=120).json()
    tokens = {}
    for role in (Role.ADMIN, Role.ANNOTATOR):
        user = make_user(role, username=f"documented-{role}")
        tokens[role] = create_api_token(user=user, name="documented", scope="write")[1]
    return {"schema": schema, "documented": Documented(schema), "tokens": tokens}


def operations(schema):
    for template, path_item in schema["paths"].items():
        for method, operation in path_item.items():
            yield template, method, operation


def call(live_server, method, path, *, token=None, **kwargs) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    headers.update(kwargs.pop("headers", {}))
    return httpx.request(method, f"{live_server.url}{path}", headers=headers, timeout=60, **kwargs)


def as_someone_allowed(live_server, api, method, path, **kwargs) -> httpx.Response:
    """The answer to the admin, or to the annotator where the path is an annotator's only."""
    response = call(live_server, method, path, token=api["tokens"][Role.ADMIN], **kwargs)
    if response.status_code == 403:
        response = call(live_server, method, path, token=api["tokens"][Role.ANNOTATOR], **kwargs)
    return response


def test_every_operation_without_credentials_is_the_documented_401(api, live_server):
    checked = 0
    for template, method, _ in operations(api["schema"]):
        response = call(live_server, method, re.sub(r"\{[^}]+\}", "1", template))
        assert response.status_code == 401, (method, template)
        assert response.headers["Content-Type"] == PROBLEM
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert response.headers["X-Request-ID"]
        assert api["documented"].problems(Answer.of(response)) == []
        checked += 1
    assert checked == 90


def test_a_method_a_path_does_not_take_is_the_documented_405_naming_those_it_takes(
    api, live_server
):
    checked = 0
    for template, path_item in api["schema"]["paths"].items():
        path = re.sub(r"\{[^}]+\}", "1", template)
        documented = {m.upper() for m in path_item}
        for method in sorted({m.upper() for m in METHODS} - documented):
            response = as_someone_allowed(live_server, api, method, path)
            assert response.status_code == 405, (method, template, response.text)
            assert response.headers["Content-Type"] == PROBLEM
            allowed = {m.strip() for m in response.headers["Allow"].split(",")}
            assert allowed - {"HEAD", "OPTIONS"} == documented, template
            assert api["documented"].problems(Answer.of(response)) == []
            checked += 1
    assert checked > 100


@pytest.fixture
def objects(make_user):
    """Real objects for the paths that name one (so a body is read before anything is
    looked up in vain)."""
    admin = make_user(Role.ADMIN, username="documented-owner")
    runs, _, _ = build_runs(n_systems=2, n_questions=1, domain_slug="documented")
    task = make_task(runs, actor=admin, name="documented")
    judges = reviewers(3, prefix="documented-rev")
    for person, preference in zip(judges, ("a", "b", "tie"), strict=True):
        judge_next(person, preference)  # its one pair splits: a lead's to adjudicate
    split = PairwisePair.objects.get(task=task, status=PairStatus.NEEDS_ADJUDICATION)
    rule = create_sampling_rule(
        project=default_project(),
        actor=admin,
        name="tenth",
        kind="percentage",
        percentage=Decimal("10"),
    )
    evaluator = create_evaluator(project=default_project(), name="j", version="1", kind="llm_judge")
    endpoint = WebhookEndpoint.objects.create(
        project=default_project(),
        url="https://hooks.example.org/x",
        events=["tag.moved"],
        secret="whsec_documented",
    )
    return {
        "/api/v1/evaluators/{id}/outputs/": evaluator.pk,
        "/api/v1/pairwise/tasks/{id}/judgments/import/": task.pk,
        "/api/v1/pairwise/adjudications/{public_id}/": split.public_id,
        "/api/v1/members/{member}/": admin.username,
        "/api/v1/sampling-rules/{id}/": rule.pk,
        "/api/v1/webhooks/{id}/": endpoint.pk,
        "/api/v1/tags/{name}/": "ci",
    }


# A reviewer's judgment or skip of a pair they hold: the pair is looked up as theirs (404 here,
# where nobody holds one) before the body is read.
HELD_FIRST = {
    "pairwise_pairs_judgment_create",
    "pairwise_calibration_pairs_judgment_create",
    "pairwise_pairs_skip_create",
}


def test_a_body_of_a_type_the_operation_does_not_read_is_the_documented_415(
    api, live_server, objects
):
    answered = {}
    for template, method, operation in operations(api["schema"]):
        if "requestBody" not in operation:
            continue
        path = re.sub(r"\{[^}]+\}", str(objects.get(template, "1")), template)
        response = as_someone_allowed(
            live_server, api, method, path, content=b"x", headers={"Content-Type": "text/plain"}
        )
        assert api["documented"].problems(Answer.of(response)) == []
        answered[operation["operationId"]] = response.status_code
    assert len(answered) == 28
    assert {op for op, status in answered.items() if status != 415} == HELD_FIRST
    assert {answered[op] for op in HELD_FIRST} == {404}


def test_a_label_submit_under_a_held_row_is_the_documented_503_with_retry_after(
    api, live_server, settings
):
    settings.SUBMIT_LOCK_TIMEOUT_MS = 150
    record, (annotator, *_) = build_conflict_item(DomainFactory(slug="supply_chain"))
    _, token = create_api_token(user=annotator, name="busy", scope="write")
    claimed = call(live_server, "POST", "/api/v1/labels/claim/", token=token)
    assert claimed.status_code == 200 and claimed.json()["item"]["record"] == record.public_id
    label = {**GOOD, "record": record.public_id, "rationale": "The exception is handled."}
    with held(AnswerRecord, record.pk):
        busy = call(live_server, "POST", "/api/v1/labels/", token=token, json=label)
    assert busy.status_code == 503 and busy.headers["Content-Type"] == PROBLEM
    assert busy.headers["Retry-After"].isdigit()
    assert api["documented"].problems(Answer.of(busy)) == []
    stored = call(live_server, "POST", "/api/v1/labels/", token=token, json=label)
    assert stored.status_code == 201
    assert api["documented"].problems(Answer.of(stored)) == []
