"""The adversarial crawl of the REST API (DESIGN.md §13: the API keeps the pages' role and
blinding rules), as tests/workbench/web/test_blinding_crawl.py is for the pages. On the seeded
demo with canaries planted in each project's systems, runs and answer records
(tests/goldset/blinding_support.py), plus what the demo lacks and the API serves (a pairwise
task judged and split, a webhook endpoint with a delivery, a sampling rule), each member of each
project — its annotators, its lead, an admin as the control — takes an API token as the product
makes one (limited to that project) and walks every GET operation of the OpenAPI schema under
``/api/v1/projects/<slug>/``. The operations come from the schema, so a new endpoint is crawled
without touching this file. Path parameters are filled breadth-first from earlier answers
(``results``, ``next``, ids and URLs in bodies, a parent list's objects), at most
``PER_OPERATION`` URLs per operation; annotators and the lead then also try every URL the
project's admin reached (other people's objects, by id).

No body an annotator or a lead reaches holds a canary (numbers as whole numbers only);
annotators never see another annotator's name (beyond the parties of the triples whose
curation they take part in, as on the triple page); a lead never sees a labeler's name in an
answer that carries labels or judgments, nor any person's name in a download; the admin does
see the canary systems and runs (the crawl would notice a leak); nothing answers 5xx; each role
gets 200 from enough operations that the crawl cannot pass by reaching nothing; the admins
between them reach every operation. A member of one project only gets 404 for everything of the
other, and an admin of one project 404 for the other's objects addressed under their own."""

import itertools
import json
import re
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from decimal import Decimal
from urllib.parse import urlencode, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings
from django.urls import resolve, reverse

from goldset.demo.policy import POLICY_SLUG
from goldset.models import (
    AnswerRecord,
    PairStatus,
    Project,
    Question,
    Review,
    Run,
    Tier,
    WebhookEvent,
)
from goldset.models.projects import DEFAULT_PROJECT_SLUG
from goldset.selectors.curation import list_triples_for
from goldset.selectors.pairwise import adjudicable_pairs
from goldset.selectors.projects import access_project
from goldset.services.answer_imports import import_answer_logs
from goldset.services.pairwise import (
    claim_next_pair,
    create_pairwise_task,
    record_pair_adjudication,
    submit_judgment,
)
from goldset.services.sampling import create_sampling_rule
from goldset.services.webhooks import create_webhook_endpoint, send_test_event
from tests.goldset.blinding_support import (
    ANNOTATOR_NAMES,
    PROJECTS,
    canary_demo_data,
    hits,
    names,
)
from tests.goldset.pairwise_support import choice_for, qualify
from workbench.access import entry_for
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.django_db

API = "/api/v1/"
PER_OPERATION = 4  # distinct URLs fetched per operation (items, pages, formats)
# Operations that must answer 200 at least this often per role: each role's share of the API
# (what the access table gives it, with the demo's data behind it), so that a crawl reaching
# nothing fails.
MIN_ANSWERED = {"annotator": 10, "adjudication_lead": 24, "admin": 36}
# A required query parameter's values: (the operation whose answers hold them, the key).
QUERY_SOURCES = {
    ("jobs_compare_retrieve", "jobs"): ("jobs_list", "id"),
    ("versions_diff_retrieve", "a"): ("versions_list", "number"),
    ("versions_diff_retrieve", "b"): ("versions_list", "number"),
}
# Where a path parameter is in its parent's objects when not under its own name (then ``id``).
ALIASES = {"ref": ("number",), "member": ("username",), "fmt": ("files",), "public_id": ("pair",)}
# Operations open to admins that no admin reaches on the demo, and why (any other unreached one
# fails test_the_admins_reach_every_operation: give the demo, or this crawl's fixture, its data).
UNREACHED = {
    "imports_retrieve": "an import job's id is only in the answer to the POST that queued it",
}
# Answers of these operations may name the parties of the triples the caller takes part in.
CURATION_OPERATIONS = ("triples_", "reviews_")
# An object with one of these keys is a label or a judgment: no labeler may be named beside it.
LABEL_KEYS = frozenset({"acceptability", "preference"})
# Who judges each project's pairwise task (qualified by the fixture), and the member of only
# the other project (not a member of this one).
PAIR_REVIEWERS = {DEFAULT_PROJECT_SLUG: ("ann1", "ann2", "ann3"), POLICY_SLUG: ("ann1", "pann1")}
OUTSIDERS = {DEFAULT_PROJECT_SLUG: "pann1", POLICY_SLUG: "author"}
OTHER = {DEFAULT_PROJECT_SLUG: POLICY_SLUG, POLICY_SLUG: DEFAULT_PROJECT_SLUG}


@pytest.fixture(scope="module")
def canary_demo(django_db_setup, django_db_blocker, tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("apicrawl")
    with canary_demo_data(django_db_blocker, tmp_path, add=_add_api_objects) as canaries:
        yield canaries


def _add_api_objects(project) -> None:
    """What the demo lacks and the API serves, through the services, in each project (before the
    canaries are planted): a webhook endpoint with a test delivery, a sampling rule, a pairwise
    task judged and split (the policy project first gets a second system answering its
    questions: it has one)."""
    admin = get_user_model().objects.get(username=PROJECTS[project.slug]["admin"])
    with override_settings(WEBHOOKS_ALLOW_PRIVATE_TARGETS=True):
        endpoint, _ = create_webhook_endpoint(
            project=project,
            actor=admin,
            url="http://127.0.0.1:9/hooks/crawl",
            events=list(WebhookEvent.values),
        )
    send_test_event(actor=admin, endpoint=endpoint)
    create_sampling_rule(
        project=project,
        actor=admin,
        name="crawl share",
        kind="percentage",
        percentage=Decimal("10"),
        seed=7,
    )
    if project.slug == POLICY_SLUG:
        _add_second_system(project)
    _add_pairwise_task(project, admin)


def _add_second_system(project) -> None:
    """A second system's run answering each question of the project, imported as answer logs."""
    rows = [
        {
            "run_id": "policy-bot-v2-2026-11",
            "system_id": "policy-bot-v2",
            "question_id": question_id,
            "answer": f"The second bot's answer to {question_id}.",
            "model": {"generator": "policy-bot-v2", "temperature": 0},
            "latency_ms": 1200,
            "cost_usd": 0.002,
        }
        for question_id in Question.objects.filter(project=project).values_list(
            "question_id", flat=True
        )
    ]
    import_answer_logs(
        project=project,
        source="\n".join(json.dumps(row) for row in rows),
        actor=None,
        source_name="crawl-second-system.jsonl",
    )


def _add_pairwise_task(project, admin) -> None:
    """A task over the project's systems, its reviewers each judging a different preference
    (in the default project pairs split and wait for the lead, who adjudicates one), one pair
    claimed and open per reviewer."""
    users = get_user_model().objects
    lead = users.get(username=PROJECTS[project.slug]["lead"])
    reviewers = [users.get(username=name) for name in PAIR_REVIEWERS[project.slug]]
    for reviewer in reviewers:
        qualify(reviewer, project)
    task = create_pairwise_task(
        project=project,
        actor=admin,
        name="Crawl pairs",
        runs=_runs_sharing_questions(project),
        design="all_pairs",
        seed=3030,
        tier=Tier.GOLD,
    )
    for _ in range(2):
        for reviewer, preference in zip(reviewers, ("a", "b", "tie"), strict=False):
            assignment = claim_next_pair(project=project, reviewer=reviewer)
            submit_judgment(
                assignment=assignment,
                choice=choice_for(assignment, preference),
                strength="" if preference == "tie" else "clearly",
                rationale="crawl",
            )
    for reviewer in reviewers:
        assert claim_next_pair(project=project, reviewer=reviewer) is not None
    if project.slug == POLICY_SLUG:
        return  # two annotators: its pairs (three reviewers each) keep collecting judgments
    split = adjudicable_pairs(user=lead, project=project).filter(
        status=PairStatus.NEEDS_ADJUDICATION
    )
    record_pair_adjudication(
        lead=lead, pair=split.first(), choice="left", strength="clearly", rationale="crawl"
    )
    assert task.pairs.filter(status=PairStatus.NEEDS_ADJUDICATION).exists()
    assert task.pairs.filter(status=PairStatus.ADJUDICATED).exists()


def _runs_sharing_questions(project) -> list[Run]:
    """One run per system, those of the question the most systems answered."""
    by_question = defaultdict(dict)
    records = AnswerRecord.objects.filter(project=project, run__isnull=False).order_by("pk")
    for question, run, system in records.values_list("question_id", "run_id", "run__system_id"):
        by_question[question].setdefault(system, run)
    return list(Run.objects.filter(pk__in=max(by_question.values(), key=len).values()))


@pytest.fixture
def unthrottled(settings):
    # the crawl makes hundreds of calls with one token: the rate limit is tested in
    # test_api_rate_limit.py; here a 429 would only hide an answer
    settings.API_TOKEN_RATE = None


# ---------------------------------------------------------------- the schema's operations


@dataclass(frozen=True)
class Operation:
    op_id: str
    template: str  # the schema's path, /api/v1/…
    pattern: re.Pattern  # matches a concrete path of the template
    params: tuple[str, ...]  # path parameters, in path order
    enums: dict = field(hash=False)  # parameter → its schema enum
    query: tuple[str, ...]  # required query parameters
    scoped: bool  # under a project's prefix (the access table's entry)
    roles: frozenset  # who may call it (the access table's entry; empty: anyone)


def _operations() -> list[Operation]:
    """Every GET operation of the OpenAPI schema."""
    schema = Client().get(reverse("api:schema"), HTTP_ACCEPT="application/json").json()
    operations = []
    for template, methods in schema["paths"].items():
        if "get" not in methods:
            continue
        get = methods["get"]
        params = tuple(re.findall(r"\{(\w+)\}", template))
        declared = get.get("parameters", [])
        enums = {p["name"]: p["schema"]["enum"] for p in declared if "enum" in p.get("schema", {})}
        query = tuple(p["name"] for p in declared if p["in"] == "query" and p.get("required"))
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
        view_name = resolve(re.sub(r"\{\w+\}", "1", template)).view_name
        operations.append(
            Operation(
                op_id=get["operationId"],
                template=template,
                pattern=re.compile(f"^{regex}$"),
                params=params,
                enums=enums,
                query=query,
                scoped=entry_for(view_name).scoped,
                roles=frozenset(entry_for(view_name).roles or ()),
            )
        )
    # a fixed path before a parameter's (``adjudications/queue/`` is not adjudication "queue")
    return sorted(operations, key=lambda op: len(op.params))


@pytest.fixture(scope="module")
def operations(django_db_blocker):
    with django_db_blocker.unblock():
        found = _operations()
    assert len(found) >= 45, [op.op_id for op in found]  # the schema was read
    return found


# ---------------------------------------------------------------- the crawl


@dataclass
class Answer:
    op: Operation
    status: int
    text: str
    data: object  # the JSON body, or None


def _token_client(username: str, slug: str | None) -> Client:
    """A client calling with a token ``username`` creates through the product's service, limited
    to project ``slug`` (valid in each of their projects for None)."""
    user = get_user_model().objects.get(username=username)
    project = access_project(user=user, slug=slug).project if slug else None
    _, raw = create_api_token(user=user, name="crawl", project=project)
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}", HTTP_ACCEPT="application/json")


def _items(data) -> list[dict]:
    """The objects of an answer: a page's ``results``, a list, or the object itself."""
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        data = data["results"]
    if isinstance(data, list):
        return [item for item in data if isinstance(item, dict)]
    return [data] if isinstance(data, dict) else []


def _scalar(value) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool) and value != ""


def _walk(data):
    """Every (key, scalar value) of a JSON document, nested; strings in lists under None."""
    if isinstance(data, dict):
        for key, value in data.items():
            if _scalar(value):
                yield key, value
            yield from _walk(value)
    elif isinstance(data, list):
        for value in data:
            if isinstance(value, str):
                yield None, value
            yield from _walk(value)


def _values(obj: dict, param: str) -> list:
    for key in (param, *ALIASES.get(param, ()), "id"):
        value = obj.get(key)
        if _scalar(value):
            return [value]
        if isinstance(value, list) and value and all(_scalar(v) for v in value):
            return value
    return []


class Crawl:
    """Breadth-first over the GET operations, in project ``slug``, as one client."""

    def __init__(self, client: Client, slug: str, operations: list[Operation]):
        self.client, self.slug, self.operations = client, slug, operations
        self.answers: dict[str, Answer] = {}
        self.bound: dict[str, list[tuple[dict, object]]] = defaultdict(list)
        self.pool: dict[str, list] = defaultdict(list)  # key → values seen in any body
        self.per_op: Counter = Counter()

    def run(self, also=()) -> dict[str, Answer]:
        """Crawl from every operation without parameters; then fetch ``also`` (URLs found by
        someone else), as many again per operation."""
        queue = deque(self._mount(op) for op in self.operations if not op.params)
        while queue:
            while queue:
                self._fetch(queue.popleft(), queue)
            for op in self.operations:
                queue.extend(self._candidates(op))
            queue = deque(u for u in dict.fromkeys(queue) if u not in self.answers)
            queue = deque(u for u in queue if self._budget_left(u))
        self.per_op.clear()
        for url in also:
            self._fetch(url, deque())
        return self.answers

    def _mount(self, op: Operation, path: str | None = None) -> str:
        path = path or op.template
        return f"{API}projects/{self.slug}/{path[len(API) :]}" if op.scoped else path

    def _locate(self, url: str):
        """(operation, path parameters, the URL as this crawl fetches it), or None for a URL
        outside the project (or the API)."""
        split = urlsplit(url)
        path, query = split.path, f"?{split.query}" if split.query else ""
        prefix = f"{API}projects/"
        inner = path
        if path.startswith(prefix):
            slug, _, rest = path[len(prefix) :].partition("/")
            inner = f"{API}{rest}" if slug == self.slug else None
        elif self.slug != DEFAULT_PROJECT_SLUG:
            inner = None  # unprefixed: the default project's
        for op in self.operations:
            target = path if not op.scoped else inner
            match = op.pattern.match(target) if target else None
            if match:
                return op, match.groupdict(), self._mount(op, target) + query
        return None

    def _budget_left(self, url: str) -> bool:
        found = self._locate(url)
        return found is not None and self.per_op[found[0].op_id] < PER_OPERATION

    def _fetch(self, url: str, queue: deque) -> None:
        found = self._locate(url)
        if found is None:
            return
        op, params, url = found
        if url in self.answers or self.per_op[op.op_id] >= PER_OPERATION:
            return
        self.per_op[op.op_id] += 1
        response = self.client.get(url)
        raw = b"".join(response.streaming_content) if response.streaming else response.content
        text = raw.decode("utf-8", "replace")
        data = None
        if "json" in response.get("Content-Type", "") and text:
            try:
                data = json.loads(text)
            except ValueError:
                data = None
        self.answers[url] = Answer(op, response.status_code, text, data)
        if response.status_code != 200:
            return
        self.bound[op.op_id].append((params, data))
        for key, value in _walk(data):
            if key is not None:
                self.pool[key].append(value)
        # URLs a body names: ``next``, links, the ``api`` of a project (JSON or not)
        for link in re.findall(r"(?:https?://testserver)?/api/v1/[^\s\"'<>\\]*", text):
            queue.append(link)

    def _parent(self, op: Operation) -> Operation | None:
        """The longest other operation (not the project itself) whose path ``op``'s extends."""
        parents = [
            other
            for other in self.operations
            if other is not op
            and other.template != API
            and op.template.startswith(other.template)
            and other.params == op.params[: len(other.params)]
        ]
        return max(parents, key=lambda other: len(other.template), default=None)

    def _candidates(self, op: Operation):
        if op.query:
            yield from self._with_query(op)
            return
        if not op.params:
            return
        parent = self._parent(op)
        bindings = self.bound[parent.op_id] if parent is not None else [({}, None)]
        for known, data in bindings:
            new = [p for p in op.params if p not in known]
            choices = []
            for param in new:
                if param in op.enums:
                    values = op.enums[param]
                elif parent is not None:
                    values = [v for obj in _items(data) for v in _values(obj, param)]
                else:
                    keys = (param, *ALIASES.get(param, ()))
                    values = [v for key in keys for v in self.pool.get(key, [])]
                choices.append(list(dict.fromkeys(values)))
            for combo in itertools.islice(itertools.product(*choices), PER_OPERATION):
                path = op.template
                for param, value in {**known, **dict(zip(new, combo, strict=True))}.items():
                    path = path.replace(f"{{{param}}}", str(value))
                yield self._mount(op, path)

    def _with_query(self, op: Operation):
        values = {}
        for param in op.query:
            source, key = QUERY_SOURCES[(op.op_id, param)]
            found = [
                obj[key]
                for _, data in self.bound[source]
                for obj in _items(data)
                if obj.get(key) is not None
            ]
            values[param] = list(dict.fromkeys(found))
        if not all(values.values()):
            return
        # the first few values, two at a time, each way round
        if len(op.query) == 1:
            (param,) = op.query
            combos = itertools.permutations(values[param][:3], 2)
            queries = [[(param, a), (param, b)] for a, b in combos]
        else:
            queries = [
                list(zip(op.query, combo, strict=True))
                for combo in itertools.product(*(v[:3] for v in values.values()))
            ]
        for query in queries:
            yield self._mount(op) + "?" + urlencode(query)


def _crawl(username, slug, operations, also=()) -> dict[str, Answer]:
    return Crawl(_token_client(username, slug), slug, operations).run(also)


def _answered(answers: dict[str, Answer]) -> set[str]:
    return {a.op.op_id for a in answers.values() if a.status == 200}


def _check_no_error(answers: dict[str, Answer]) -> None:
    errors = {url: a.status for url, a in answers.items() if a.status >= 500}
    assert not errors, errors


@pytest.fixture(scope="module")
def admin_crawls(canary_demo, operations, django_db_blocker):
    """Each project's crawl by its admin (the control), once for the module."""
    with django_db_blocker.unblock(), override_settings(API_TOKEN_RATE=None):
        return {slug: _crawl(crew["admin"], slug, operations) for slug, crew in PROJECTS.items()}


def _admin_urls(admin_crawls, slug, *, answered=True) -> list[str]:
    """The URLs project ``slug``'s admin reached (``answered``: those answered 200)."""
    return [url for url, a in admin_crawls[slug].items() if a.status == 200 or not answered]


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize(
    ("slug", "username"),
    [(slug, name) for slug, crew in PROJECTS.items() for name in crew["annotators"]],
)
def test_annotators_reach_no_system_run_or_other_annotator(
    canary_demo, operations, admin_crawls, unthrottled, slug, username
):
    user = get_user_model().objects.get(username=username)
    assert access_project(user=user, slug=slug).roles == {"annotator"}
    also = _admin_urls(admin_crawls, slug, answered=False)
    answers = _crawl(username, slug, operations, also=also)
    _check_no_error(answers)
    answered = _answered(answers)
    assert len(answered) >= MIN_ANSWERED["annotator"], sorted(answered)
    assert {"labels_list", "reviews_list", "triples_list"} <= answered, answered
    if username in PAIR_REVIEWERS[slug]:  # the operations only annotators call, reached
        theirs = {op.op_id for op in operations if op.roles and "admin" not in op.roles}
        assert theirs <= answered, theirs - answered
    others = set(ANNOTATOR_NAMES) - {username}
    parties = _curation_parties(user, slug)
    for url, answer in answers.items():
        assert not hits(answer.text, canary_demo), (url, hits(answer.text, canary_demo))
        hidden = others - parties if answer.op.op_id.startswith(CURATION_OPERATIONS) else others
        named = names(sorted(hidden)).search(answer.text)
        assert not named, (url, named and named.group(0))


def _curation_parties(user, slug) -> set[str]:
    """The authors and reviewers of the triples ``user`` may see (theirs, and those they
    flagged: the parties who discuss a flagged triple, DESIGN.md §5), named on its page too."""
    triples = list_triples_for(project=Project.objects.get(slug=slug), user=user)
    reviewers = Review.objects.filter(revision__triple__in=triples)
    return set(triples.values_list("author__username", flat=True)) | set(
        reviewers.values_list("reviewer__username", flat=True)
    )


@pytest.mark.parametrize("slug", sorted(PROJECTS))
def test_a_lead_reaches_no_system_and_no_labeler_beside_labels(
    canary_demo, operations, admin_crawls, unthrottled, slug
):
    lead = PROJECTS[slug]["lead"]
    user = get_user_model().objects.get(username=lead)
    assert access_project(user=user, slug=slug).roles == {"adjudication_lead"}
    answers = _crawl(lead, slug, operations, also=_admin_urls(admin_crawls, slug, answered=False))
    _check_no_error(answers)
    answered = _answered(answers)
    assert len(answered) >= MIN_ANSWERED["adjudication_lead"], sorted(answered)
    expected = {"adjudications_queue_list", "labels_list", "pairwise_adjudications_list"}
    assert expected | {"pairwise_tasks_judgments_list", "versions_download_retrieve"} <= answered
    identity = names(ANNOTATOR_NAMES)
    person_key = re.compile(r"reviewer-\d+")
    for url, answer in answers.items():
        assert not hits(answer.text, canary_demo), (url, hits(answer.text, canary_demo))
        if answer.data is None or _carries_labels(answer.data):
            # a download (not JSON), or an answer holding labels or judgments
            named = identity.search(answer.text)
            assert not named, (url, named and named.group(0))
            assert not person_key.search(answer.text), url


def _carries_labels(data) -> bool:
    if isinstance(data, dict):
        return bool(LABEL_KEYS & set(data)) or any(_carries_labels(v) for v in data.values())
    if isinstance(data, list):
        return any(_carries_labels(v) for v in data)
    return False


@pytest.mark.parametrize("slug", sorted(PROJECTS))
def test_the_admin_control_sees_the_canaries(canary_demo, admin_crawls, slug):
    answers = admin_crawls[slug]
    _check_no_error(answers)
    answered = _answered(answers)
    assert len(answered) >= MIN_ANSWERED["admin"], sorted(answered)
    seen = {hit for a in answers.values() for hit in hits(a.text, canary_demo)}
    assert {"CANARYSYS", "CANARYRUN"} <= seen, seen


def test_the_admins_reach_every_operation(operations, admin_crawls):
    """Every operation admins may call answers 200 in one project or the other (those only
    annotators call: test_annotators_reach_no_system_run_or_other_annotator)."""
    answered = set().union(*(_answered(answers) for answers in admin_crawls.values()))
    theirs = {op.op_id for op in operations if not op.roles or "admin" in op.roles}
    assert theirs - answered == set(UNREACHED), theirs - answered


@pytest.mark.parametrize("slug", sorted(PROJECTS))
def test_a_member_of_the_other_project_only_gets_404(canary_demo, admin_crawls, unthrottled, slug):
    outsider = OUTSIDERS[slug]
    user = get_user_model().objects.get(username=outsider)
    assert access_project(user=user, slug=OTHER[slug]).roles  # a member there, not here
    client = _token_client(outsider, None)
    urls = [u for u in _admin_urls(admin_crawls, slug) if f"{API}projects/{slug}/" in u]
    assert len(urls) >= MIN_ANSWERED["admin"], urls
    statuses = {url: client.get(url).status_code for url in urls}
    assert set(statuses.values()) == {404}, {u: s for u, s in statuses.items() if s != 404}


@pytest.mark.parametrize("slug", sorted(PROJECTS))
def test_objects_of_one_project_are_404_under_the_other(
    canary_demo, operations, admin_crawls, unthrottled, slug
):
    """Project ``slug``'s objects (by their id or public id, unique in the installation)
    addressed under the other project's prefix, by that project's admin."""
    other = OTHER[slug]
    crawl = Crawl(_token_client(PROJECTS[other]["admin"], other), slug, operations)
    moved = []
    for url in _admin_urls(admin_crawls, slug):
        op, params, _ = crawl._locate(url)
        if op.scoped and {"id", "public_id"} & set(params):
            moved.append(url.replace(f"{API}projects/{slug}/", f"{API}projects/{other}/", 1))
    assert len(moved) >= 10, moved
    statuses = {url: crawl.client.get(url).status_code for url in moved}
    assert set(statuses.values()) == {404}, {u: s for u, s in statuses.items() if s != 404}


def test_every_required_query_parameter_has_a_source(operations):
    needed = {(op.op_id, param) for op in operations for param in op.query}
    assert needed == set(QUERY_SOURCES), "say in QUERY_SOURCES where a new parameter's values are"
