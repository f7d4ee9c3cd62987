"""Corpus and curation per project (issue 27): a member of project A sees none of project B's
documents, blocks, triples, reviews, customers, slices or draws on any corpus or curation page,
gets 404 for every B object URL (under ``/p/<a>/`` and, for the default project, unprefixed),
B's members get the same pages for B under ``/p/<b>/``; project settings change only their
project's draw; a triple of A can never pin B's text."""

import datetime as dt
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from goldset.exceptions import CrossProjectReference, ImportRejected
from goldset.models import (
    Document,
    ImportJob,
    ImportStatus,
    Project,
    ReviewAssignment,
    Source,
    SpotCheckDraw,
    TaskType,
    Triple,
    TripleState,
    WorkingSlice,
)
from goldset.services.corpus import import_corpus
from goldset.services.customers import create_customer, grant_customer_permission
from goldset.services.import_jobs import run_import_job
from goldset.services.projects import grant_role
from goldset.services.quality import draw_working_slice
from goldset.services.resolution import mark_superseded_pins, revise_triple
from goldset.services.reviews import claim_next_assignment, draw_spot_checks, submit_review
from goldset.services.triples import create_triple, import_triples
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    DomainFactory,
    UserFactory,
    default_project,
)
from workbench.roles import Role

pytestmark = pytest.mark.django_db

CANARY = "bravo"  # in every text, id and slug of project B's data, nowhere in project A's
# searched for in A (the pages echo the query, so not the canary itself): B's block text has it
B_WORD = "zulucanary"
QUARTER = "2026Q1"


def _member(project, username, role):
    user = UserFactory(username=username)
    grant_role(project=project, user=user, role=role)
    return user


def _corpus(project, tag: str, text: str):
    domain = DomainFactory(project=project, slug=f"dom-{tag}", name=f"Domain {tag}")
    document = DocumentFactory(
        project=project, domain=domain, document_id=f"doc-{tag}", title=f"Manual {tag}"
    )
    block = BlockFactory(project=project, document=document, block_id=f"blk-{tag}")
    return BlockVersionFactory(block=block, text=text)


def _write(project, author, version, question, *, gold=True, **fields):
    return create_triple(
        project=project,
        author=author,
        block_version=version,
        question=question,
        expected_answer="AES-256 at the storage layer.",
        task_type=TaskType.FACTUAL_QA if gold else TaskType.SUMMARIZATION,
        source=fields.pop("source", Source.PUBLIC_RFP),
        **fields,
    )


def _review(project, reviewer, triple, verdict="confirm", flags=()):
    assignment = claim_next_assignment(project=project, reviewer=reviewer)
    triple.refresh_from_db()
    assert assignment is not None and assignment.revision_id == triple.current_revision_id
    submit_review(reviewer=reviewer, revision=assignment.revision, verdict=verdict, flags=flags)
    triple.refresh_from_db()
    return assignment


class World:
    """Projects A (the default project, or ``alpha`` under ``/p/alpha/``) and B (``bravo``),
    each with members of every role, and canary data in B."""

    def __init__(self, side: str):
        if side == "default":
            self.a, self.a_prefix = default_project(), ""
        else:
            self.a = Project.objects.create(name="Alpha", slug="alpha")
            self.a_prefix = "/p/alpha"
        self.b = Project.objects.create(name="Bravo", slug=CANARY)
        self.b_prefix = f"/p/{CANARY}"
        a, b = self.a, self.b
        self.a_ann = _member(a, "ann-a", Role.ANNOTATOR)
        self.a_author = _member(a, "author-a", Role.ANNOTATOR)
        self.a_lead = _member(a, "lead-a", Role.LEAD)
        self.a_admin = _member(a, "admin-a", Role.ADMIN)  # an admin of A only (not staff)
        self.b_author = _member(b, "author-b", Role.ANNOTATOR)
        self.b_rev1 = _member(b, "rev1-b", Role.ANNOTATOR)
        self.b_rev2 = _member(b, "rev2-b", Role.ANNOTATOR)
        self.b_lead = _member(b, "lead-b", Role.LEAD)
        self.b_admin = _member(b, "admin-b", Role.ADMIN)
        self.both = _member(a, "ann-both", Role.ANNOTATOR)
        grant_role(project=b, user=self.both, role=Role.ANNOTATOR)

        self.a_version = _corpus(a, "alpha", "Alpha clause: keys rotate every ninety days.")
        self.a_pending = _write(a, self.a_author, self.a_version, "How often do keys rotate?")

        self.b_version = _corpus(b, CANARY, f"Clause {CANARY}: zulucanary data is encrypted.")
        older = BlockVersionFactory(
            block=BlockFactory(
                project=b, document=self.b_version.block.document, block_id=f"blk-{CANARY}-2"
            ),
            text=f"Clause {CANARY} two: backups are kept for thirty days.",
        )
        self.b_customer = create_customer(
            project=b, name=f"Customer {CANARY}", slug=f"cust-{CANARY}", actor=self.b_admin
        )
        grant_customer_permission(customer=self.b_customer, actor=self.b_admin, note="signed")
        self.b_gold = _write(
            b,
            self.b_author,
            self.b_version,
            f"Which cipher does {CANARY} use?",
            source=Source.CUSTOMER_PERMISSIONED,
            customer=self.b_customer,
        )
        _review(b, self.b_rev1, self.b_gold)
        _review(b, self.b_rev2, self.b_gold)
        self.b_dropped = _write(b, self.b_author, self.b_version, f"Is {CANARY} dropped?")
        _review(b, self.b_rev1, self.b_dropped, "flag", ["question_unrealistic"])
        _review(b, self.b_rev2, self.b_dropped, "flag", ["question_unrealistic"])
        self.b_discussed = _write(
            b, self.b_author, self.b_version, f"Is {CANARY} in discussion?", gold=False
        )
        _review(b, self.b_rev1, self.b_discussed, "flag", ["answer_not_entailed"])
        self.b_stale = _write(b, self.b_author, older, f"How long does {CANARY} keep backups?")
        newer = BlockVersionFactory(block=older.block, version=2, text=f"{CANARY}: sixty days.")
        mark_superseded_pins(superseding_version_ids=[newer.pk])
        self.b_open = _write(b, self.b_author, self.b_version, f"Does {CANARY} wait for review?")
        self.b_assignment = claim_next_assignment(project=b, reviewer=self.both)
        draw_working_slice(project=b, quarter=QUARTER, actor=self.b_lead, seed=1)
        year, week, _ = timezone.now().isocalendar()
        draw_spot_checks(project=b, iso_year=year, iso_week=week, actor=self.b_lead, seed=1)
        for triple in (self.b_gold, self.b_dropped, self.b_discussed, self.b_stale):
            triple.refresh_from_db()

    def a_url(self, name, *args) -> str:
        return self.a_prefix + reverse(name, args=args)

    def b_url(self, name, *args) -> str:
        return self.b_prefix + reverse(name, args=args)


@pytest.fixture(params=["default", "alpha"])
def world(request):
    return World(request.param)


# The pages of project A each role opens, with a query where the page searches.
ANNOTATOR_PAGES = [
    ("corpus:documents", ""),
    ("corpus:search", f"?q={B_WORD}"),
    ("curation:triples", ""),
    ("curation:write", ""),
    ("curation:blocks", "?q=blk"),  # every block id: A's only
    ("curation:blocks", f"?q={B_WORD}"),
    ("curation:queue", ""),
]
LEAD_PAGES = [
    ("corpus:documents", ""),
    ("corpus:search", f"?q={B_WORD}"),
    ("curation:blocks", f"?q={B_WORD}"),
    ("curation:dashboard", ""),
    ("curation:rereview", ""),
    ("curation:slices", ""),
    ("curation:spot_checks", ""),
    ("curation:quality", ""),
    ("curation:import", ""),
]
ADMIN_PAGES = [*LEAD_PAGES, ("corpus:import", ""), ("curation:customers", "")]


def _has_no_canary(response) -> None:
    assert response.status_code == 200
    assert CANARY not in response.content.decode().lower()


def test_project_a_pages_show_nothing_of_project_b(world, client_for):
    for user, pages in (
        (world.a_ann, ANNOTATOR_PAGES),
        (world.a_lead, LEAD_PAGES),
        (world.a_admin, ADMIN_PAGES),
    ):
        client = client_for(user)
        for name, query in pages:
            _has_no_canary(client.get(world.a_url(name) + query))


def test_a_member_of_both_projects_sees_only_the_projects_own_queue(world, client_for):
    client = client_for(world.both)
    queue = client.get(world.a_url("curation:queue"))
    assert queue.status_code == 200
    assert f"Does {CANARY} wait" not in queue.content.decode()
    assert client.get(world.b_url("curation:queue")).status_code == 200
    # "next" in A gives A's triple, never B's
    client.post(world.a_url("curation:next"))
    claimed = ReviewAssignment.objects.filter(reviewer=world.both).exclude(pk=world.b_assignment.pk)
    assert [a.revision.triple_id for a in claimed] == [world.a_pending.pk]


def test_project_b_object_urls_are_404_in_project_a(world, client_for):
    lead, admin = client_for(world.a_lead), client_for(world.a_admin)
    b_version = world.b_version
    gets = [
        ("corpus:document", b_version.block.document.document_id),
        ("corpus:block", b_version.block.block_id),
        ("curation:triple", world.b_gold.pk),
        ("curation:revise", world.b_discussed.pk),
        ("curation:split", world.b_discussed.pk),
        ("curation:slice", QUARTER),
    ]
    for client in (lead, admin):
        for name, arg in gets:
            assert client.get(world.a_url(name, arg)).status_code == 404, name
        for name, arg in [
            ("curation:message", world.b_discussed.pk),
            ("curation:drop", world.b_discussed.pk),
            ("curation:verify", world.b_discussed.pk),
            ("curation:repin", world.b_stale.pk),
            ("curation:retire", world.b_stale.pk),
        ]:
            assert client.post(world.a_url(name, arg)).status_code == 404, name
    for name in ("curation:customer",):
        assert admin.get(world.a_url(name, world.b_customer.slug)).status_code == 404
    for name in ("curation:grant", "curation:revoke"):
        assert admin.post(world.a_url(name, world.b_customer.slug)).status_code == 404
    both = client_for(world.both)
    assert both.get(world.a_url("curation:review", world.b_assignment.pk)).status_code == 404
    skip = both.post(
        world.a_url("curation:review_skip", world.b_assignment.pk), {"reason": "not mine"}
    )
    assert skip.status_code == 404
    # nothing of B changed
    world.b_discussed.refresh_from_db()
    world.b_stale.refresh_from_db()
    assert world.b_discussed.state == TripleState.IN_DISCUSSION
    assert world.b_stale.state == TripleState.NEEDS_REREVIEW
    assert ReviewAssignment.objects.filter(pk=world.b_assignment.pk).exists()
    assert world.b_customer.permissions.filter(revoked_at__isnull=True).exists()


def test_a_non_member_gets_404_for_project_b_pages(world, client_for):
    client = client_for(world.a_lead)
    for url in (world.b_url("curation:dashboard"), world.b_url("curation:triple", world.b_gold.pk)):
        assert client.get(url).status_code == 404


def test_project_b_pages_work_for_b_members(world, client_for):
    lead, admin = client_for(world.b_lead), client_for(world.b_admin)
    document = world.b_version.block.document
    pages = [
        (lead, world.b_url("corpus:documents"), document.document_id),
        (lead, world.b_url("corpus:search") + f"?q={B_WORD}", "zulucanary"),
        (lead, world.b_url("corpus:document", document.document_id), document.title),
        (lead, world.b_url("corpus:block", world.b_version.block.block_id), "zulucanary"),
        (lead, world.b_url("curation:blocks") + f"?q={B_WORD}", world.b_version.block.block_id),
        (lead, world.b_url("curation:triple", world.b_gold.pk), world.b_gold.external_id),
        (lead, world.b_url("curation:rereview"), world.b_stale.external_id),
        (lead, world.b_url("curation:dashboard"), world.b_stale.external_id),
        (lead, world.b_url("curation:quality"), world.b_dropped.external_id),
        (lead, world.b_url("curation:slices"), QUARTER),
        (lead, world.b_url("curation:slice", QUARTER), world.b_gold.external_id),
        (admin, world.b_url("curation:customers"), world.b_customer.name),
        (admin, world.b_url("curation:customer", world.b_customer.slug), world.b_customer.name),
        (admin, world.b_url("corpus:import"), f"dom-{CANARY}"),
    ]
    for client, url, text in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        assert text in response.content.decode(), url
    author = client_for(world.b_author)
    mine = author.get(world.b_url("curation:triples")).content.decode()
    assert world.b_discussed.external_id in mine
    both = client_for(world.both)
    review = both.get(world.b_url("curation:review", world.b_assignment.pk))
    assert review.status_code == 200 and "zulucanary" in review.content.decode()
    spot = lead.get(world.b_url("curation:spot_checks"))
    assert spot.status_code == 200 and "No spot-check drawn yet" not in spot.content.decode()


# ---------------------------------------------------------------- settings per project


def _gold_triage(project, author, reviewer, version, n):
    triples = [
        _write(project, author, version, f"Summarize clause {i}?", gold=False) for i in range(n)
    ]
    for triple in triples:
        _review(project, reviewer, triple)
        assert triple.state == TripleState.GOLD
    return triples


def test_spot_check_rate_of_project_a_changes_its_draw_and_not_project_bs(client_for):
    a = Project.objects.create(name="Alpha", slug="alpha")
    b = Project.objects.create(name="Bravo", slug=CANARY)
    a.settings["CURATION_SPOT_CHECK_RATE"] = "0.5"
    a.save(update_fields=["settings"])
    lead_a, lead_b = _member(a, "lead-a", Role.LEAD), _member(b, "lead-b", Role.LEAD)
    for project, lead, tag in ((a, lead_a, "alpha"), (b, lead_b, CANARY)):
        author = _member(project, f"author-{tag}", Role.ANNOTATOR)
        reviewer = _member(project, f"rev-{tag}", Role.ANNOTATOR)
        triples = _gold_triage(project, author, reviewer, _corpus(project, tag, f"{tag} text"), 4)
        year, week, _ = triples[0].current_revision.reviews.get().submitted_at.isocalendar()
        draw = draw_spot_checks(project=project, iso_year=year, iso_week=week, actor=lead, seed=7)
        assert draw.eligible_revision_ids == sorted(t.current_revision_id for t in triples)
        if project == a:
            assert (draw.rate, len(draw.selected_revision_ids)) == (Decimal("0.5"), 2)
        else:
            assert (draw.rate, len(draw.selected_revision_ids)) == (Decimal("0.1"), 1)
    page_a = client_for(lead_a).get("/p/alpha" + reverse("curation:spot_checks")).content
    page_b = client_for(lead_b).get(f"/p/{CANARY}" + reverse("curation:spot_checks")).content
    assert "a seeded 50 % of the TRIAGE" in page_a.decode()
    assert "a seeded 10 % of the TRIAGE" in page_b.decode()


def test_working_slice_size_of_project_a_leaves_project_b_at_the_default():
    a = Project.objects.create(name="Alpha", slug="alpha")
    b = Project.objects.create(name="Bravo", slug=CANARY)
    a.settings["CURATION_WORKING_SLICE_SIZE"] = "2"
    a.save(update_fields=["settings"])
    for project, tag in ((a, "alpha"), (b, CANARY)):
        author = _member(project, f"author-{tag}", Role.ANNOTATOR)
        reviewer = _member(project, f"rev-{tag}", Role.ANNOTATOR)
        _gold_triage(project, author, reviewer, _corpus(project, tag, f"{tag} text"), 3)
    drawn_a = draw_working_slice(project=a, quarter=QUARTER, actor=None, seed=3)
    drawn_b = draw_working_slice(project=b, quarter=QUARTER, actor=None, seed=3)
    assert (drawn_a.size, len(drawn_a.triple_ids), drawn_a.gold_count) == (2, 2, 3)
    assert (drawn_b.size, len(drawn_b.triple_ids), drawn_b.gold_count) == (120, 3, 3)
    assert set(drawn_a.triple_ids).isdisjoint(drawn_b.triple_ids)


# ---------------------------------------------------------------- cross-project references


@pytest.fixture
def two():
    a = Project.objects.create(name="Alpha", slug="alpha")
    b = Project.objects.create(name="Bravo", slug=CANARY)
    author = _member(a, "author-a", Role.ANNOTATOR)
    return a, b, author, _corpus(a, "alpha", "Alpha text."), _corpus(b, CANARY, "Bravo text.")


def test_a_triple_of_a_cannot_pin_a_block_version_of_b(two):
    a, _b, author, _a_version, b_version = two
    with pytest.raises(CrossProjectReference, match="not in this project's corpus"):
        _write(a, author, b_version, "Which cipher?")
    assert not Triple.objects.exists()


def test_a_revision_of_a_cannot_pin_a_block_version_of_b(two):
    a, _b, author, a_version, b_version = two
    reviewer = _member(a, "rev-a", Role.ANNOTATOR)
    triple = _write(a, author, a_version, "Which cipher?", gold=False)
    _review(a, reviewer, triple, "flag", ["answer_not_entailed"])
    assert triple.state == TripleState.IN_DISCUSSION
    with pytest.raises(CrossProjectReference):
        revise_triple(
            triple=triple,
            actor=author,
            question="Which cipher, exactly?",
            block_version=b_version,
            expected_answer="AES-256.",
        )
    triple.refresh_from_db()
    assert (triple.state, triple.revisions.count()) == (TripleState.IN_DISCUSSION, 1)


def test_a_customer_of_b_cannot_be_named_on_a_triple_of_a(two):
    a, b, author, a_version, _b_version = two
    admin_b = _member(b, "admin-b", Role.ADMIN)
    customer = create_customer(project=b, name="Globex", actor=admin_b)
    grant_customer_permission(customer=customer, actor=admin_b)
    with pytest.raises(CrossProjectReference, match="customer"):
        _write(
            a,
            author,
            a_version,
            "Which cipher?",
            source=Source.CUSTOMER_PERMISSIONED,
            customer=customer,
        )
    assert not Triple.objects.exists()


def test_the_triple_import_of_a_names_the_line_and_field_of_a_pin_to_b(two):
    a, _b, author, _a_version, b_version = two
    line = (
        '{"question": "Which cipher?", "expected_answer": "AES-256.", '
        f'"expected_block": {{"block_id": "{b_version.block.block_id}", "version": 1}}, '
        f'"metadata": {{"domain": "dom-alpha", "task_type": "factual_qa", "source": "public_rfp"}}}}'
    )
    with pytest.raises(ImportRejected) as rejected:
        import_triples(project=a, source=line + "\n", actor=author, source_name="t.jsonl")
    assert rejected.value.errors == [
        f"line 1: expected_block: no block version {b_version.block.block_id} v1 in this "
        "project's corpus"
    ]
    assert not Triple.objects.exists()


def test_the_write_page_of_a_refuses_a_block_of_b(two, client_for):
    a, _b, author, _a_version, b_version = two
    response = client_for(author).post(
        "/p/alpha" + reverse("curation:write"),
        {
            "question": "Which cipher?",
            "block_version": f"{b_version.block.block_id}@1",
            "expected_answer": "AES-256.",
            "task_type": "factual_qa",
            "difficulty": "standard",
            "source": "public_rfp",
        },
    )
    assert response.status_code == 422  # the form again, with the error
    page = response.content.decode()
    assert "There is no version 1 of block" in page and "Bravo text" not in page
    assert not Triple.objects.exists()


def test_corpus_ids_are_per_project_and_an_import_writes_into_its_project(two, client_for):
    a, b, _author, a_version, _b_version = two
    document_id = a_version.block.document.document_id
    manifest = (
        f'{{"document_id": "{document_id}", "title": "Bravo copy", "domain": "dom-{CANARY}", '
        '"authority": 0.5, "blocks": [{"block_id": "blk-alpha", "versions": '
        '[{"text": "Bravo words."}]}]}\n'
    )
    summary = import_corpus(project=b, source=manifest, actor=None, source_name="m.jsonl")
    assert (summary.documents_created, summary.versions_created) == (1, 1)
    a_version.block.refresh_from_db()
    assert a_version.block.versions.count() == 1  # A's block of the same id is untouched
    assert Document.objects.get(project=a, document_id=document_id).title == "Manual alpha"
    assert Document.objects.get(project=b, document_id=document_id).title == "Bravo copy"
    # through the upload page and its import job, into the URL's project
    admin_b = _member(b, "admin-b", Role.ADMIN)
    upload = SimpleUploadedFile(
        "more.jsonl",
        (
            f'{{"document_id": "doc-{CANARY}-new", "title": "New", "domain": "dom-{CANARY}", '
            '"authority": 0.5, "blocks": [{"block_id": "blk-new", "versions": '
            '[{"text": "New words."}]}]}\n'
        ).encode(),
    )
    response = client_for(admin_b).post(f"/p/{CANARY}" + reverse("corpus:import"), {"file": upload})
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.project == b
    assert run_import_job(job_id=job.pk).status == ImportStatus.SUCCEEDED
    assert Document.objects.get(document_id=f"doc-{CANARY}-new").project == b
    # a domain of B is not A's: the same file in A names the line and field
    admin_a = _member(a, "admin-a", Role.ADMIN)
    with pytest.raises(ImportRejected, match=f"line 1: domain: unknown domain 'dom-{CANARY}'"):
        import_corpus(project=a, source=manifest, actor=admin_a, source_name="m.jsonl")


def test_spot_check_week_and_slice_quarter_are_per_project(two):
    a, b, _author, _a, _b = two
    lead_a, lead_b = _member(a, "lead-a", Role.LEAD), _member(b, "lead-b", Role.LEAD)
    year, week, _ = (timezone.now() - dt.timedelta(days=7)).isocalendar()
    draw_spot_checks(project=a, iso_year=year, iso_week=week, actor=lead_a, seed=1)
    draw_spot_checks(project=b, iso_year=year, iso_week=week, actor=lead_b, seed=1)
    draw_working_slice(project=a, quarter=QUARTER, actor=lead_a, seed=1)
    draw_working_slice(project=b, quarter=QUARTER, actor=lead_b, seed=1)
    for project in (a, b):
        assert SpotCheckDraw.objects.filter(project=project).count() == 1
        assert WorkingSlice.objects.filter(project=project, quarter=QUARTER).count() == 1
