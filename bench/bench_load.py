"""Load benchmark (issue 17): gunicorn (gthread) + PostgreSQL with annotators simulated over HTTP.

For each size it creates a fresh database ``<prefix><size>``, migrates it, bulk-loads ``size``
answer records and ``size`` pending triples with ``INSERT … SELECT generate_series`` (cloning one
factory-made row, see tests/goldset/bulk_support.py), starts gunicorn and runs:

* ``idle``: one user, each page 10 times in a row (median per page) — the issue's first table;
* ``think50`` / ``think200``: 50 / 200 annotators, each with their own session, half of them
  labeling answers and half reviewing triples, with a uniform 5–30 s think time per item;
* ``closed50``: the same 50 without think time (capacity), and ``closed50-labels`` /
  ``closed50-reviews``: all 50 on one queue (the capacity of each).

Each annotator works as the browser does (see ``work_queue``): the queue page, "Next item" (the
claim and the item's page), then per item a think and one htmx submit whose answer is the next
item (the submit records the decision and claims the next item in the same request); every 10
items they open the queue page again. A user whose think would end after the measured window
stops there, unmeasured (cutting every pause at the deadline made all users submit at once).

It reports p50/p95/p99 per request type, items per second, errors, duplicate assignments (read
back from the database: must be 0) and the load average, as one JSON line per size. The server
runs with ``QUERY_COUNT_HEADER=true``, so the idle scenario also records how many SQL statements
each request ran (``X-Query-Count``): the same count at every size is the issue's "query counts
identical at 10k and 1M", measured on the real pages.

Run (PostgreSQL and Redis as in the README; figures go to BENCHMARKS.md):
    .venv/bin/python bench/bench_load.py --sizes 10000,100000,1000000 --duration 60

The scenarios are bounded by ``--duration``.

With ``--projects N`` (issue 27) the database holds N projects (the default project, then
``bench-p2`` …), each with ``size`` answer records and ``size`` pending triples of its own (the
same cloning, per project); annotator ``i`` is a member of project ``i % N`` only and works at
``/p/<slug>/…``, the idle scenario's annotator (the last) and the lead in the last project
seeded (its rows have the highest ids). The database is ``<prefix><size>x<N>p`` and every JSON
line carries ``projects``:
    .venv/bin/python bench/bench_load.py --projects 10 --sizes 100000 --duration 60
"""

import argparse
import http.client
import json
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlencode

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOMAINS = [
    "security_questionnaire",
    "federal_it",
    "healthcare_ops",
    "supply_chain",
    "financial_services",
]
LABEL = {
    "acceptability": "acceptable",
    "grounding": "fully_grounded",
    "evidence_sufficiency": "sufficient",
    "citation_correctness": "correct",
    "conflict_handling": "not_applicable",
    "safety_boundary": "respected",
    "severe_safety": "no",
    "rationale": "",
}
CSRF = "b" * 32  # an unmasked secret: Django accepts it when cookie and header carry the same


def admin_url(base: str, db: str) -> str:
    return base.rsplit("/", 1)[0] + "/" + db


def create_database(base_url: str, name: str) -> str:
    with psycopg.connect(admin_url(base_url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url(base_url, name)


# ---------------------------------------------------------------- seeding (in a child process)


def seed(size: int, users: int, history: int = 0, projects: int = 1) -> dict:
    """Runs with DJANGO settings pointing at the bench database (see main). Every one of
    ``projects`` projects (the default project first, then ``bench-p2`` …) gets ``size`` answer
    records and ``size`` pending triples of its own; annotator ``i`` is a member of project
    ``i % projects`` only (``homes``: username → project slug), the lead of every project."""
    # Runs in a child process whose environment points Django at the bench database.
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
    django.setup()
    # Django must be set up before models, services and factories are imported.
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection

    from goldset.models import (
        AnswerRecord,
        Project,
        Question,
        Run,
        Triple,
        TripleRevision,
        default_project_id,
    )
    from goldset.services.projects import grant_role
    from tests.goldset.bulk_support import analyze
    from workbench.roles import Role

    started = time.perf_counter()
    User = get_user_model()
    annotators = Group.objects.get(name=Role.ANNOTATOR.value)
    lead_group = Group.objects.get(name=Role.LEAD.value)
    people = User.objects.bulk_create(User(username=f"bench-ann{i}") for i in range(users))
    for user in people:
        user.groups.add(annotators)
    author = User.objects.create(username="bench-author")
    author.groups.add(annotators)
    lead = User.objects.create(username="bench-lead")
    lead.groups.add(lead_group)
    all_projects = [Project.objects.get(pk=default_project_id())] + [
        Project.objects.create(name=f"Bench project {k + 1}", slug=f"bench-p{k + 1}")
        for k in range(1, projects)
    ]
    homes = {}
    supersede_s = 0.0
    for k, project in enumerate(all_projects):
        members = people[k :: len(all_projects)]
        for user in members:
            grant_role(project=project, user=user, role=Role.ANNOTATOR)
            homes[user.username] = project.slug
        grant_role(project=project, user=author, role=Role.ANNOTATOR)
        grant_role(project=project, user=lead, role=Role.LEAD)
        supersede_s += seed_project(project, k, size, members, author)
    # The lead's pages in the idle scenario are those of the idle annotator's project.
    homes["bench-lead"] = homes[people[-1].username]
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM goldset_domainlabelload;"
            "INSERT INTO goldset_domainlabelload (domain_id, slots) SELECT domain_id,"
            " sum(labels_required) FROM goldset_answerrecord WHERE NOT is_calibration"
            " GROUP BY domain_id"
        )
    heavy = []
    if history:
        template = AnswerRecord.objects.filter(project=all_projects[0]).order_by("pk").first()
        triple = Triple.objects.filter(project=all_projects[0]).order_by("pk").first()
        heavy = seed_history(history, people[-HEAVY_USERS:], template, triple)
    analyze(Question, Run, AnswerRecord, Triple, TripleRevision)
    # The agreement figures exist, as in any installation that has been labeling: without them
    # the first label's refresh would be a full recompute inside the measured window.
    from goldset.services.agreement import recompute_agreement_snapshots

    figures_started = time.perf_counter()
    for project in all_projects:
        recompute_agreement_snapshots(project=project, full=True)
    agreement_s = time.perf_counter() - figures_started

    sessions = make_sessions()
    return {
        "seed_s": round(time.perf_counter() - started, 1),
        "agreement_snapshots_s": round(agreement_s, 1),
        "projects": len(all_projects),
        "records": AnswerRecord.objects.count(),
        "revisions": TripleRevision.objects.count(),
        "superseded_pins": Triple.objects.filter(pin_superseded=True).count(),
        "supersede_s": round(supersede_s, 2),
        "history_per_person": history,
        "people_with_history": heavy,
        "homes": homes,
        "sessions": sessions,
    }


def seed_project(project, k: int, size: int, members, author) -> float:
    """``size`` answer records and ``size`` pending triples in ``project`` (the ``k``-th), with
    ``members`` qualified in its domains; returns the seconds the superseding block version's
    trigger work took."""
    from django.db import connection

    from goldset.models import CalibrationResult, Domain, Triple, TripleRevision
    from goldset.services.triples import create_triple
    from tests.factories import (
        AnswerRecordFactory,
        BlockVersionFactory,
        QuestionFactory,
        RunFactory,
        SystemFactory,
    )
    from tests.goldset.bulk_support import clone_rows, seed_answer_records

    tag = f"bench{k}"
    domains = [
        Domain.objects.get_or_create(project=project, slug=s, defaults={"name": s})[0]
        for s in DOMAINS
    ]
    domain_array = "ARRAY[" + ",".join(str(d.pk) for d in domains) + "]"
    CalibrationResult.objects.bulk_create(
        CalibrationResult(
            annotator=u,
            domain=d,
            n_items=6,
            kappa_grounding=0.9,
            kappa_severe_safety=1.0,
            threshold=0.7,
            passed=True,
        )
        for u in members
        for d in domains
    )

    # answer records: Q questions × R runs, GOLD (3 labels) for 2 of 5 questions, else TRIAGE
    template = AnswerRecordFactory(
        project=project,
        question=QuestionFactory(project=project, domain=domains[0]),
        run=RunFactory(
            project=project,
            system=SystemFactory(project=project, system_id=f"bench-system-{k}"),
        ),
    )
    seed_answer_records(
        template,
        size,
        tag=tag,
        domain_ids=[d.pk for d in domains],
        labels_required="CASE WHEN {gold} THEN 3 ELSE 1 END",
        assigned_count="0",
    )

    def block_version(**kwargs):
        return BlockVersionFactory(
            block__project=project,
            block__document__project=project,
            block__document__domain=domains[0],
            **kwargs,
        )

    # pending triples, one unreviewed revision each
    triple = create_triple(
        project=project,
        author=author,
        block_version=block_version(),
        question="What encryption-at-rest mechanism protects customer documents?",
        expected_answer="AES-256 at the storage layer.",
        task_type="factual_qa",
        source="public_rfp",
    )
    clone_rows(
        Triple,
        template_pk=triple.pk,
        source=f"generate_series(1, {size}) AS s(g)",
        overrides={
            "external_id": f"'{tag}-t-' || s.g",
            "current_revision_id": "NULL",
            "domain_id": f"({domain_array})[1 + s.g %% {len(domains)}]",
        },
    )
    clone_rows(
        TripleRevision,
        template_pk=triple.current_revision_id,
        source=(
            f"(SELECT id FROM goldset_triple WHERE project_id = {project.pk}"
            f" AND external_id LIKE '{tag}-t-%%') AS s"
        ),
        overrides={"triple_id": "s.id", "assigned_count": "0", "number": "1"},
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE goldset_triple AS t SET current_revision_id = r.id FROM goldset_triplerevision"
            " AS r WHERE r.triple_id = t.id AND t.project_id = %s AND t.external_id LIKE %s",
            [project.pk, f"{tag}-t-%"],
        )
    # 1 % of the triples pin another block, which then gets a newer version (as a corpus import
    # would): the re-review list has rows, and the new version's trigger work is timed.
    superseded = block_version()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE goldset_triplerevision AS r SET expected_block_version_id = %s"
            " FROM goldset_triple AS t WHERE t.id = r.triple_id AND t.project_id = %s"
            " AND t.external_id LIKE %s AND t.id %% 100 = 0",
            [superseded.pk, project.pk, f"{tag}-t-%"],
        )
    supersede_started = time.perf_counter()
    BlockVersionFactory(block=superseded.block, version=2)
    return time.perf_counter() - supersede_started


# The people given a long history (the idle scenario's annotator among them): at most two, as
# every history record takes one of two label slots and every history revision one of two
# review slots.
HEAVY_USERS = 2


def seed_history(n: int, people, answer_template, triple_template) -> list[str]:
    """``n`` labels and ``n`` reviews for each of ``people`` (issue 26: the pages of the people
    who work most), one a minute going back from now, on ``n`` finished answer records and
    ``n`` gold triples of their own (outside the open pools: nothing of it can be claimed)."""
    from django.db import connection

    from goldset.models import Label, LabelAssignment, Review, ReviewAssignment
    from goldset.services.labeling import add_domain_slots
    from tests.goldset.bulk_support import analyze, grow_answer_pool, grow_revision_pool

    grow_answer_pool(answer_template, n, tag="hist")
    # the history is finished work: its slots are not part of the open load
    add_domain_slots(
        domain_id=answer_template.domain_id, delta=-n * answer_template.labels_required
    )
    grow_revision_pool(triple_template, n, tag="hist")
    records = (
        "SELECT r.id, row_number() OVER (ORDER BY r.id) AS g FROM goldset_answerrecord r"
        " JOIN goldset_question q ON q.id = r.question_id WHERE q.question_id LIKE 'hist-%%'"
    )
    revisions = (
        "SELECT t.current_revision_id AS id, row_number() OVER (ORDER BY t.id) AS g"
        " FROM goldset_triple t WHERE t.external_id LIKE 'hist-%%'"
    )
    at = "now() - s.g * interval '1 minute'"
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE goldset_answerrecord SET status = 'final', final_source = 'majority',"
            " final_acceptability = 'acceptable', final_grounding = 'fully_grounded',"
            f" labels_required = {len(people)}, assigned_count = {len(people)}, finalized_at = now()"
            f" WHERE id IN (SELECT id FROM ({records}) AS s)"
        )
        cursor.execute(
            "UPDATE goldset_triple SET state = 'gold', resolution = 'consensus', gold_at = now()"
            " WHERE external_id LIKE 'hist-%%'"
        )
        cursor.execute(
            f"UPDATE goldset_triplerevision SET assigned_count = {len(people)}"
            f" WHERE id IN (SELECT id FROM ({revisions}) AS s)"
        )
        for slot, person in enumerate(people, start=1):
            cursor.execute(
                "INSERT INTO goldset_labelassignment (record_id, annotator_id, slot,"
                " is_calibration, shuffle_seed, shuffle_key, claimed_at, completed_at)"
                " SELECT s.id, %s, %s, false, 6601, substr(md5(s.id || ':h'), 1, 16),"
                f" {at}, {at} FROM ({records}) AS s",
                [person.pk, slot],
            )
            cursor.execute(
                "INSERT INTO goldset_label (acceptability, grounding, severe_safety,"
                " primary_failure, secondary_failures, rationale, created_at, assignment_id,"
                " record_id, annotator_id, evidence_sufficiency, citation_correctness,"
                " conflict_handling, safety_boundary) SELECT 'acceptable', 'fully_grounded',"
                " false, '', '[]'::jsonb, '', a.completed_at, a.id, a.record_id, a.annotator_id,"
                " 'sufficient', 'correct', 'not_applicable', 'respected'"
                " FROM goldset_labelassignment a WHERE a.annotator_id = %s"
                f" AND a.record_id IN (SELECT id FROM ({records}) AS s)",
                [person.pk],
            )
            cursor.execute(
                "INSERT INTO goldset_reviewassignment (revision_id, reviewer_id, slot,"
                f" spot_check, assigned_at, completed_at) SELECT s.id, %s, %s, false, {at},"
                f" {at} FROM ({revisions}) AS s",
                [person.pk, slot],
            )
            cursor.execute(
                "INSERT INTO goldset_review (assignment_id, revision_id, reviewer_id, verdict,"
                " question_unrealistic, wrong_source_block, answer_not_entailed,"
                " entailment_direction, disagreement_category, comment, spot_check,"
                " submitted_at) SELECT a.id, a.revision_id, a.reviewer_id, 'confirm', false,"
                " false, false, '', '', '', false, a.completed_at"
                " FROM goldset_reviewassignment a WHERE a.reviewer_id = %s"
                f" AND a.revision_id IN (SELECT id FROM ({revisions}) AS s)",
                [person.pk],
            )
    analyze(LabelAssignment, Label, ReviewAssignment, Review)
    return [p.username for p in people]


def make_sessions() -> dict:
    """A signed-in session for every bench annotator and the lead (in the seeding child, or in
    a child of its own for a database seeded earlier with ``--prepare``)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    sessions = {}
    people = get_user_model().objects.filter(username__startswith="bench-").order_by("pk")
    for user in people.exclude(username="bench-author"):
        store = SessionStore()
        store["_auth_user_id"] = str(user.pk)
        # The backend that signs people in here (a session naming another is not accepted).
        store["_auth_user_backend"] = settings.AUTHENTICATION_BACKENDS[0]
        store["_auth_user_hash"] = user.get_session_auth_hash()
        # Stamped as a login would (the idle and absolute timeouts count from here).
        store["_wb_started_at"] = store["_wb_last_seen"] = int(time.time())
        store.create()
        sessions[user.username] = store.session_key
    return sessions


# ---------------------------------------------------------------- HTTP users


class Client:
    def __init__(self, port: int, session_key: str, project: str = ""):
        self.port = port
        # Every path this user requests is under their project's mount (DESIGN.md §15).
        self.prefix = f"/p/{project}" if project else ""
        self.cookie = f"sessionid={session_key}; csrftoken={CSRF}"
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=180)

    def request(self, method: str, path: str, form: dict | None = None, *, htmx: str = ""):
        """One request on this user's connection; ``htmx`` names the element an htmx request
        targets (the browser's ``HX-Target``). The location returned is the redirect's, or the
        URL htmx is told to push (the next item) or to load (``HX-Redirect``)."""
        body = urlencode(form or {}, doseq=True) if method == "POST" else None
        headers = {"Cookie": self.cookie, "Host": "127.0.0.1"}
        if method == "POST":
            headers.update(
                {"Content-Type": "application/x-www-form-urlencoded", "X-CSRFToken": CSRF}
            )
        if htmx:
            headers.update({"HX-Request": "true", "HX-Target": htmx})
        if path.startswith("/") and not path.startswith(self.prefix + "/"):
            path = self.prefix + path
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                queries = response.getheader("X-Query-Count")
                location = (
                    response.getheader("Location")
                    or response.getheader("HX-Push-Url")
                    or response.getheader("HX-Redirect")
                    or ""
                )
                return (
                    response.status,
                    location,
                    response.read(),
                    int(queries) if queries else None,
                    server_timing(response.getheader("Server-Timing") or ""),
                )
            except (http.client.HTTPException, ConnectionError, TimeoutError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=180)
                if attempt:
                    raise
        raise RuntimeError("unreachable")


def server_timing(header: str) -> dict:
    """``Server-Timing: app;dur=…, db;dur=…, cpu;dur=…`` as seconds per part."""
    parts = (part.split(";dur=") for part in header.split(", ") if ";dur=" in part)
    return {name: float(ms) / 1000 for name, ms in parts}


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.times = defaultdict(list)
        self.server = defaultdict(lambda: defaultdict(list))  # kind -> part -> seconds
        self.errors = defaultdict(int)
        self.items = defaultdict(int)
        self.queries = defaultdict(set)  # X-Query-Count values seen per request kind

    def timed(self, kind: str, call, ok=(200, 302)):
        started = time.perf_counter()
        try:
            status, location, body, queries, timing = call()
        except Exception:
            with self.lock:
                self.errors[kind] += 1
            return None
        elapsed = time.perf_counter() - started
        with self.lock:
            self.times[kind].append(elapsed)
            if queries is not None:
                self.queries[kind].add(queries)
            for part, seconds in timing.items():
                self.server[kind][part].append(seconds)
            if status not in ok:
                self.errors[kind] += 1
        return status, location, body


# The two queues as the browser works them (templates/answers/item.html, curation/review.html).
QUEUES = {
    "labels": {
        "page": ("label_queue_page", "/answers/"),
        "claim": ("claim_answer", "/answers/claim/"),
        "item": re.compile(r"/answers/items/"),
        "item_page": "answer_item_page",
        "submit": "submit_label",
        "form": LABEL,
        "target": "label-item",
    },
    "reviews": {
        "page": ("review_queue_page", "/curation/reviews/"),
        "claim": ("claim_review", "/curation/reviews/next/"),
        "item": re.compile(r"/curation/reviews/\d+/"),
        "item_page": "review_page",
        "submit": "submit_review",
        "form": {"verdict": "confirm"},
        "target": "review-item",
    },
}
STINT = 10  # items between two visits of the queue page


def work_queue(client: Client, rec: Recorder, think, kind: str, *, stint: int = STINT) -> bool:
    """One stint in a queue, as an annotator's browser does it: the queue page, "Next item"
    (the claim, redirected to the item's page), then think and submit. htmx answers each submit
    with the next item (its URL pushed), so an item costs one request: the submit, which
    records the decision and claims the next item. ``think`` raises TimeoutError when the
    pause would end after the measured window: the user stops there, as people stop at
    different moments (cutting every pause at the deadline made them all submit at once)."""
    queue = QUEUES[kind]
    rec.timed(queue["page"][0], lambda: client.request("GET", queue["page"][1]))
    got = rec.timed(queue["claim"][0], lambda: client.request("POST", queue["claim"][1]))
    if not got or not queue["item"].search(got[1]):
        return False
    url = got[1]
    rec.timed(queue["item_page"], lambda: client.request("GET", url))
    for _ in range(stint):
        think()
        done = rec.timed(
            queue["submit"],
            lambda url=url: client.request("POST", url, queue["form"], htmx=queue["target"]),
            ok=(200,),
        )
        if not done:
            return False
        if not queue["item"].search(done[1]):  # a form error, or the queue is empty
            with rec.lock:
                rec.errors[f"{queue['submit']}_no_next_item"] += 1
            return False
        with rec.lock:
            rec.items[kind] += 1
        url = done[1]
    return True


def run_users(port, sessions, homes, *, n_users, duration, think_range, queues, seed=17) -> dict:
    """``n_users`` annotators for ``duration`` seconds; user i works ``queues[i % len(queues)]``."""
    rec = Recorder()
    deadline = time.monotonic() + duration
    over = threading.Event()  # set when the measured window ends: every wait below ends with it
    names = [f"bench-ann{i}" for i in range(n_users)]
    loads = []

    def user(i, name):
        rng = random.Random(seed * 1000 + i)
        client = Client(port, sessions[name], homes.get(name, ""))

        def think():
            """The simulated person's pause: a pause that would outlast the window ends the
            user there (TimeoutError), unmeasured."""
            pause = rng.uniform(*think_range) if think_range else 0.0
            if time.monotonic() + pause >= deadline or over.wait(pause):
                raise TimeoutError

        # Arrivals spread over the longest think, as people start their day.
        if think_range and over.wait(rng.uniform(0, think_range[1])):
            return
        try:
            while not over.is_set():
                if not work_queue(client, rec, think, queues[i % len(queues)]):
                    over.wait(1)  # nothing to claim, or an error: a person looks again later
        except TimeoutError:
            return

    def sample_load():
        loads.append(os.getloadavg()[0])
        while not over.wait(5):
            loads.append(os.getloadavg()[0])

    threads = [threading.Thread(target=user, args=(i, n)) for i, n in enumerate(names)]
    sampler = threading.Thread(target=sample_load)
    window = threading.Timer(duration, over.set)
    started = time.monotonic()
    for t in (*threads, sampler, window):
        t.start()
    for t in (*threads, sampler):
        t.join()
    wall = time.monotonic() - started
    return summarize(rec, wall, loads)


SCENARIO = re.compile(r"(think|closed)(\d+)(?:-(labels|reviews))?")


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def summarize(rec: Recorder, wall: float, loads) -> dict:
    return {
        "wall_s": round(wall, 1),
        "labels_per_s": round(rec.items["labels"] / wall, 2),
        "reviews_per_s": round(rec.items["reviews"] / wall, 2),
        "errors": dict(rec.errors),
        "load_avg_1m_max": round(max(loads), 2) if loads else None,
        "requests": {
            kind: {
                "n": len(t),
                "p50_ms": round(pct(t, 50) * 1000, 1),
                "p95_ms": round(pct(t, 95) * 1000, 1),
                "p99_ms": round(pct(t, 99) * 1000, 1),
                # Where the time went on the server (Server-Timing): median and p95 of each part.
                "server": {
                    part: [round(pct(v, 50) * 1000, 1), round(pct(v, 95) * 1000, 1)]
                    for part, v in sorted(rec.server[kind].items())
                },
            }
            for kind, t in sorted(rec.times.items())
        },
    }


IDLE_PAGES = {
    "label_queue_page": ("annotator", "/answers/"),
    "review_queue_page": ("annotator", "/curation/reviews/"),
    "adjudication_queue": ("lead", "/answers/adjudication/"),
    "agreement_dashboard": ("lead", "/quality/agreement/"),
    "curation_dashboard": ("lead", "/curation/leads/"),
    "rereview_list": ("lead", "/curation/leads/rereview/"),
    "fast_decisions": ("lead", "/quality/fast-decisions/"),
    "corpus_documents": ("lead", "/corpus/"),
}


def run_idle(port, sessions, homes) -> dict:
    # the last annotator: one of the two with a history when the seed gave them one (with
    # several projects, a member of the last project seeded; the lead works in that project)
    annotator = max((k for k in sessions if k.startswith("bench-ann")), key=lambda k: int(k[9:]))
    clients = {
        "annotator": Client(port, sessions[annotator], homes.get(annotator, "")),
        "lead": Client(port, sessions["bench-lead"], homes.get("bench-lead", "")),
    }
    out = {}
    for name, (who, path) in IDLE_PAGES.items():
        times, statuses, queries = [], set(), set()
        for _ in range(10):
            started = time.perf_counter()
            status, _, _, counted, _ = clients[who].request("GET", path)
            times.append(time.perf_counter() - started)
            statuses.add(status)
            queries.add(counted)
        out[name] = {
            "median_ms": round(statistics.median(times) * 1000, 1),
            "status": sorted(statuses),
            "queries": sorted(q for q in queries if q is not None),
        }
    for kind in QUEUES:  # ten short stints per queue: claim, item page, one submit
        rec = Recorder()
        for _ in range(10):
            work_queue(clients["annotator"], rec, lambda: None, kind, stint=1)
        for step in (QUEUES[kind]["claim"][0], QUEUES[kind]["item_page"], QUEUES[kind]["submit"]):
            out[step] = {
                "median_ms": round(statistics.median(rec.times[step]) * 1000, 1),
                "queries": sorted(rec.queries[step]),
            }
    return out


def warm_up(port, sessions, homes, n_connections: int) -> None:
    """Load every page once in every worker (imports, URL conf, templates), not measured."""

    def visit(i):
        name = f"bench-ann{i % 100}"
        client = Client(port, sessions[name], homes.get(name, ""))
        lead = Client(port, sessions["bench-lead"], homes.get(name, ""))
        for who, path in IDLE_PAGES.values():
            (lead if who == "lead" else client).request("GET", path)

    threads = [threading.Thread(target=visit, args=(i,)) for i in range(n_connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def duplicates(db_url: str) -> dict:
    with psycopg.connect(db_url) as conn:
        return {
            "answer_slots_over_assigned": conn.execute(
                "SELECT count(*) FROM (SELECT r.id FROM goldset_answerrecord r JOIN"
                " goldset_labelassignment a ON a.record_id = r.id AND NOT a.is_calibration"
                " GROUP BY r.id, r.labels_required HAVING count(*) > r.labels_required) x"
            ).fetchone()[0],
            "answer_same_annotator_twice": conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM goldset_labelassignment GROUP BY record_id,"
                " annotator_id HAVING count(*) > 1) x"
            ).fetchone()[0],
            "review_slots_over_assigned": conn.execute(
                "SELECT count(*) FROM (SELECT v.id FROM goldset_triplerevision v JOIN"
                " goldset_reviewassignment a ON a.revision_id = v.id GROUP BY v.id,"
                " v.reviewers_needed HAVING count(*) > v.reviewers_needed) x"
            ).fetchone()[0],
            "review_same_reviewer_twice": conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM goldset_reviewassignment GROUP BY"
                " revision_id, reviewer_id HAVING count(*) > 1) x"
            ).fetchone()[0],
        }


def _machine_ticks() -> tuple[int, int]:
    """``(idle, all)`` CPU ticks of the machine so far (``/proc/stat``; idle counts iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return fields[3] + fields[4], sum(fields)


def settle(db_url: str, deadline_s: float = 600) -> float:
    """Seconds until the deployed topology is at rest: no agreement recompute waiting or running
    and the machine at least 85 % idle over the last 3 s or more (a worker's start-up, its
    warm-up and the reconciler's first pass are over), so the scenarios measure the steady
    state. Raises when it is not at rest after ``deadline_s``."""
    from tests.waiting import wait_until

    started = time.monotonic()
    window = {"since": started, "ticks": _machine_ticks()}

    def at_rest() -> bool:
        if time.monotonic() - window["since"] < 3:
            return False
        (idle0, all0), (idle1, all1) = window["ticks"], _machine_ticks()
        window.update(since=time.monotonic(), ticks=(idle1, all1))
        if (idle1 - idle0) / max(all1 - all0, 1) < 0.85:
            return False
        with psycopg.connect(db_url) as conn:
            return not conn.execute(
                "SELECT count(*) FROM goldset_outboxmessage"
                " WHERE kind = 'agreement.recompute' AND done_at IS NULL"
            ).fetchone()[0]

    wait_until(at_rest, timeout=deadline_s, what="the worker, beat and PostgreSQL to be at rest")
    return round(time.monotonic() - started, 1)


def _proc_table() -> dict[int, tuple[int, str, float]]:
    """pid → (parent pid, command name, CPU seconds so far: user + system, with its reaped
    children's) of every process."""
    tick = os.sysconf("SC_CLK_TCK")
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        # utime, stime, cutime, cstime: its own and its reaped children's (a forked agreement
        # process, a PostgreSQL backend that closed), counted once in the live parent.
        table[int(entry)] = (int(fields[1]), name, sum(map(int, fields[11:15])) / tick)
    return table


def cpu_by_kind(roots: dict[str, int]) -> dict[str, float]:
    """CPU seconds so far of the process trees under ``roots`` (kind → pid; a process that
    ended counts once its parent has reaped it) and of the rest of the machine: where a
    scenario's CPU went (the difference of two calls)."""
    table = _proc_table()
    kinds: dict[str, float] = defaultdict(float)
    for pid, (_, _, cpu) in table.items():
        kind, walk = None, pid
        while walk in table and kind is None:
            kind = next((k for k, root in roots.items() if root == walk), None)
            walk = table[walk][0]
        if kind is not None:
            kinds[kind] += cpu
    # The machine's busy time: what the trees above did not use went to PostgreSQL (its
    # backends come and go with connections, and a closed one's CPU would land in the window
    # it closed in), the kernel and anything else running.
    idle, every = _machine_ticks()
    busy = (every - idle) / os.sysconf("SC_CLK_TCK")
    kinds["PostgreSQL and the rest"] = busy - sum(kinds.values())
    return dict(kinds)


def refreshes(db_url: str, since: float, until: float) -> dict:
    """The agreement recomputes the worker started in a scenario's window (``time.time()``
    bounds): how many, and the seconds each ran (wall, as the outbox row records it)."""
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "SELECT extract(epoch FROM coalesce(done_at, now()) - started_at)::float"
            " FROM goldset_outboxmessage WHERE kind = 'agreement.recompute'"
            " AND started_at >= to_timestamp(%s) AND started_at < to_timestamp(%s)"
            " ORDER BY started_at",
            (since, until),
        ).fetchall()
    return {"n": len(rows), "seconds": [round(r[0], 2) for r in rows]}


def wait_for(port: int, deadline_s: float = 60):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/health/?format=json", headers={"Host": "127.0.0.1"})
            conn.getresponse().read()
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError("gunicorn did not come up")


def one_size(args, size: int) -> dict:
    name = f"{args.db_prefix}{size}" + (f"x{args.projects}p" if args.projects > 1 else "")
    prepared = Path(tempfile.gettempdir()) / f"{name}.seed.json"
    env = {
        **os.environ,
        "DATABASE_URL": admin_url(args.database_url, name),
        "REDIS_URL": args.redis_url,
        "SECRET_KEY": secrets.token_hex(32),
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "QUERY_COUNT_HEADER": "true",
    }
    python = sys.executable
    if args.use_prepared:  # seeded earlier by --prepare (and not used since): fresh sessions
        info = json.loads(prepared.read_text())
        homes = info.pop("homes")
        made = subprocess.run(
            [python, __file__, "--sessions-only"],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        sessions = json.loads(made.stdout.strip().splitlines()[-1])
        prepared.unlink()
    else:
        create_database(args.database_url, name)
        subprocess.run(
            [python, "manage.py", "migrate", "--no-input", "-v", "0"],
            cwd=ROOT,
            env={**env, "DB_STATEMENT_TIMEOUT_MS": "0"},
            check=True,
        )
        seeded = subprocess.run(
            [
                python,
                __file__,
                "--seed-only",
                str(size),
                "--users",
                str(args.users),
                "--history",
                str(args.history),
                "--projects",
                str(args.projects),
            ],  # fmt: skip
            cwd=ROOT,
            env={**env, "DB_STATEMENT_TIMEOUT_MS": "0"},
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        info = json.loads(seeded.stdout.strip().splitlines()[-1])
        sessions = info.pop("sessions")
        homes = info.pop("homes")
        if args.prepare:
            prepared.write_text(json.dumps({**info, "homes": homes}))
            return {"size": size, "prepared": str(prepared), **info}
    subprocess.run(
        [python, "manage.py", "collectstatic", "--no-input", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    import redis  # only the orchestrating process talks to Redis (to empty the bench queue)

    redis.Redis.from_url(args.redis_url).flushdb()
    server = subprocess.Popen(
        [
            python, "-m", "gunicorn", "workbench.wsgi:application",
            "--bind", f"127.0.0.1:{args.port}",
            "--worker-class", "gthread", "--workers", str(args.workers),
            "--threads", str(args.threads), "--timeout", "120", "--log-level", "warning",
            "--keep-alive", str(args.keep_alive),
        ],
        cwd=ROOT,
        env=env,
    )  # fmt: skip
    background = []
    if args.worker:
        background = [
            subprocess.Popen(
                ["nice", "-n", str(args.worker_nice), python, "-m", "celery", "-A", "workbench",
                 "worker", "--concurrency=2", "--loglevel=WARNING"],
                cwd=ROOT, env={**env, "DB_STATEMENT_TIMEOUT_MS": "0"},
            ),
            subprocess.Popen(
                [python, "-m", "celery", "-A", "workbench", "beat", "--loglevel=WARNING",
                 "--schedule", str(Path(tempfile.gettempdir()) / f"{name}-beat")],
                cwd=ROOT, env=env,
            ),
        ]  # fmt: skip
    result = {"size": size, **info, "worker": args.worker}
    try:
        wait_for(args.port, deadline_s=300)  # four workers warming up on a busy machine
        warm_up(args.port, sessions, homes, args.workers * args.threads)
        if args.worker:
            result["settle_s"] = settle(env["DATABASE_URL"])
        result["idle"] = run_idle(args.port, sessions, homes)
        for scenario in filter(None, args.scenarios.split(",")):
            pace, n_users, only = SCENARIO.fullmatch(scenario).groups()
            window_start = time.time()
            roots = {"web": server.pid, "load generator": os.getpid()}
            if background:
                roots.update(worker=background[0].pid, beat=background[1].pid)
            cpu_before = cpu_by_kind(roots)
            result[scenario] = run_users(
                args.port,
                sessions,
                homes,
                n_users=int(n_users),
                duration=args.duration,
                think_range=(5.0, 30.0) if pace == "think" else None,
                queues=[only] if only else ["labels", "reviews"],
            )
            cpu_after = cpu_by_kind(roots)
            result[scenario]["cpu_s"] = {
                kind: round(cpu_after[kind] - cpu_before.get(kind, 0.0), 1) for kind in cpu_after
            }
            if args.worker:
                result[scenario]["agreement_refreshes"] = refreshes(
                    env["DATABASE_URL"], window_start, time.time()
                )
            print(
                json.dumps({"size": size, "projects": args.projects, scenario: result[scenario]}),
                file=sys.stderr,
            )
    finally:
        for process in [server, *background]:
            process.terminate()
        for process in [server, *background]:
            process.wait(timeout=60)
    result["duplicates"] = duplicates(env["DATABASE_URL"])
    return result


def markdown(path: str) -> str:
    """BENCHMARKS.md tables from the JSON lines this script printed (one per size)."""
    results = [json.loads(line) for line in Path(path).read_text().splitlines() if '"idle"' in line]
    sizes = [f"{r['size']:,}" for r in results]
    head = "| {} | " + " | ".join(sizes) + " |\n|---|" + "---:|" * len(sizes) + "\n"
    steps = ["answer_item_page", "submit_label", "review_page", "submit_review"]
    out = [head.format("request (median ms, one user, idle server)")]
    for kind in ["claim_answer", "claim_review", *steps, *IDLE_PAGES]:
        cells = [str(r["idle"].get(kind, {}).get("median_ms", "–")) for r in results]
        out.append(f"| {kind} | " + " | ".join(cells) + " |\n")
    out.append("\n" + head.format("SQL statements per request (idle, `X-Query-Count`)"))
    for kind in ["claim_answer", "claim_review", *steps, *IDLE_PAGES]:
        cells = []
        for r in results:
            seen = r["idle"].get(kind, {}).get("queries")
            cells.append("/".join(map(str, seen)) if seen else "–")
        out.append(f"| {kind} | " + " | ".join(cells) + " |\n")
    scenarios = [k for k in results[0] if SCENARIO.fullmatch(k)]
    kinds = ["claim_answer", "submit_label", "claim_review", "submit_review",
             "answer_item_page", "review_page", "label_queue_page", "review_queue_page"]  # fmt: skip
    for scenario in scenarios:
        out.append("\n" + head.format(f"{scenario}: p50 / p95 / p99 ms"))
        for kind in kinds:
            cells = []
            for r in results:
                q = r.get(scenario, {}).get("requests", {}).get(kind)
                cells.append(
                    f"{q['p50_ms']:.0f} / {q['p95_ms']:.0f} / {q['p99_ms']:.0f}" if q else "–"
                )
            out.append(f"| {kind} | " + " | ".join(cells) + " |\n")
        for kind in ("submit_label", "submit_review"):
            cells = []
            for r in results:
                server = r.get(scenario, {}).get("requests", {}).get(kind, {}).get("server")
                cells.append(
                    " / ".join(f"{server[part][1]:.0f}" for part in ("app", "db", "cpu"))
                    if server
                    else "–"
                )
            out.append(
                f"| {kind} on the server, p95 app / db / cpu | " + " | ".join(cells) + " |\n"
            )
        for key in ("labels_per_s", "reviews_per_s", "load_avg_1m_max"):
            out.append(
                f"| {key} | "
                + " | ".join(str(r.get(scenario, {}).get(key, "–")) for r in results)
                + " |\n"
            )
        errors = [sum(r.get(scenario, {}).get("errors", {}).values()) for r in results]
        out.append("| errors | " + " | ".join(map(str, errors)) + " |\n")
    dupes = [sum(r["duplicates"].values()) for r in results]
    out.append("\n| duplicate or over-assigned slots | " + " | ".join(map(str, dupes)) + " |\n")
    return "".join(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument(
        "--scenarios", default="think50,think200,closed50,closed50-labels,closed50-reviews"
    )
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument(
        "--keep-alive",
        type=int,
        default=2,
        help="gunicorn --keep-alive seconds (2, gunicorn's default, is what docker-compose runs)",
    )
    parser.add_argument("--port", type=int, default=8617)
    parser.add_argument("--db-prefix", default="goldset_perf_bench_")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/x"),
    )
    parser.add_argument(
        "--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/12")
    )
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        help="labels and reviews behind each of the two people with a history (the idle "
        "scenario's annotator is one): their queue, item and review pages are measured with it",
    )
    parser.add_argument(
        "--worker",
        action="store_true",
        help="also run a Celery worker and beat as deployed (docker-compose), the worker under "
        "`nice -n --worker-nice`, so agreement refreshes and the reconciler share the machine",
    )
    parser.add_argument("--worker-nice", type=int, default=10)
    parser.add_argument(
        "--projects",
        type=int,
        default=1,
        help="projects, each with `size` answer records and `size` triples of its own; the "
        "annotators are members of one project each (spread over them) and work at /p/<slug>/",
    )
    parser.add_argument("--seed-only", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--sessions-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--prepare",
        action="store_true",
        help="create, migrate and seed each size's database, then stop (no server, no scenario)",
    )
    parser.add_argument(
        "--use-prepared",
        action="store_true",
        help="run on the databases --prepare seeded (each once: its seed note is then removed)",
    )
    parser.add_argument(
        "--markdown", metavar="RESULTS_JSONL", help="print the BENCHMARKS.md tables"
    )
    args = parser.parse_args()
    if args.projects < 1:
        parser.error("--projects: at least 1")
    if args.history and args.projects > 1:
        parser.error("--history: with one project only (its two people are in one project)")
    if args.markdown:
        print(markdown(args.markdown))
        return
    if args.seed_only:
        print(json.dumps(seed(args.seed_only, args.users, args.history, args.projects)))
        return
    if args.sessions_only:
        print(json.dumps(make_sessions()))
        return
    for size in (int(s) for s in args.sizes.split(",")):
        print(json.dumps(one_size(args, size)))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
