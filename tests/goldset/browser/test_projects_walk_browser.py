"""The pages issues 27, 28 and 30 added, walked in Chromium per role, asserting what each person
sees: the projects home with each project's open alerts (leads and admins only), the project
menu (a person's projects only; another project's URL is a 404), the pairwise upload page
(reached from an admin's menu; refused to an annotator or a lead who types its URL), and the
label page of a traced answer record (its retrieved passages by rank, those not in the corpus
with their text escaped; the retriever's scores for admins only, on the adjudication page;
nothing that names the system).

One data set (:func:`seed`) serves every test: three projects — the default one, ``beta-bank``
and ``gamma-secret`` (none of the walkers is in it) — with open alerts in each, a pairwise task
in the default project, and a trace received in ``beta-bank``."""

import json
import re
from dataclasses import dataclass

import pytest
from django.test import Client

from goldset.models import (
    AnswerRecord,
    ImportJob,
    ImportStatus,
    PairJudgment,
    PairwisePair,
    PairwiseTask,
    Project,
    RecordStatus,
)
from goldset.services.projects import grant_role
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    CalibrationResultFactory,
    DocumentFactory,
    DomainFactory,
    UserFactory,
    default_project,
)
from tests.goldset.otlp_support import pipeline_spans, post, protobuf_body, write_token
from tests.goldset.pairwise_support import build_runs, make_task, reviewers
from tests.goldset.rules.traces_support import CHAT_MODEL, CORPUS, SERVICE
from tests.goldset.web.test_projects_home_alerts import ALPHA_KIND, KAPPA_KIND, alpha_snapshot
from tests.goldset.web.test_projects_quality import kappa_snapshot
from workbench.project_urls import project_url
from workbench.roles import Role

pytestmark = [pytest.mark.browser]

# A passage the retriever returned that no block of the corpus has: markup that must reach the
# page as text (were it HTML, the script would set window.pwned and a <b> would be inside).
HOSTILE_ID = "VENDOR-9"
HOSTILE = '<img src=x onerror="window.pwned=1"><b>Vendor</b> note & "quoted" <script>window.pwned=2</script>'
TRACE_CORPUS = {**CORPUS, HOSTILE_ID: HOSTILE}
SECRETS = (SERVICE["service.name"], SERVICE["service.version"], CHAT_MODEL, "gpt-4o-mini")


@dataclass
class World:
    default: Project
    beta: Project
    gamma: Project
    annotator: object
    lead: object
    admin: object
    reviewer: object
    task: PairwiseTask
    record: AnswerRecord
    scores: dict


def seed() -> World:
    default = default_project()
    beta = Project.objects.create(name="Beta bank", slug="beta-bank")
    gamma = Project.objects.create(name="Gamma secret", slug="gamma-secret")
    annotator, lead, admin = (UserFactory(username=f"walk-{r}") for r in ("ann", "lead", "admin"))
    for project in (default, beta):
        grant_role(project=project, user=annotator, role=Role.ANNOTATOR)
        grant_role(project=project, user=lead, role=Role.LEAD)
        grant_role(project=project, user=admin, role=Role.ADMIN)  # a project admin, not staff
    grant_role(project=gamma, user=UserFactory(username="gamma-owner"), role=Role.ADMIN)

    # Open alerts: two in the default project (the α one the worse kind), one in beta, and one
    # in gamma that nobody walking may see.
    pair = [UserFactory(username=f"walk-pair{i}") for i in (1, 2)]
    kappa_snapshot(default, *pair, 0.3)
    alpha_snapshot(default, 0.4)
    kappa_snapshot(beta, *pair, 0.3)
    alpha_snapshot(gamma, 0.1)

    runs, _, _ = build_runs(n_systems=2, n_questions=2)
    task = make_task(runs, actor=lead, name="Walk compare")
    (reviewer,) = reviewers(1, prefix="walk-rev")

    # A trace in beta: its retriever returned AC-2 (in beta's corpus) and three documents that
    # are not in it, the hostile one among them.
    domain = DomainFactory(project=beta, slug="controls", name="Security controls")
    document = DocumentFactory(domain=domain, document_id="doc-AC-2", title="Access control")
    BlockVersionFactory(block=BlockFactory(block_id="AC-2", document=document), text=CORPUS["AC-2"])
    CalibrationResultFactory(annotator=annotator, domain=domain)
    spans, run = pipeline_spans("genai", corpus=TRACE_CORPUS)
    token = write_token(admin, project=beta)
    response = post(Client(), beta, protobuf_body(spans), token=token)
    assert response.status_code == 200, response.content
    record = AnswerRecord.objects.get(project=beta)
    return World(
        default, beta, gamma, annotator, lead, admin, reviewer, task, record, dict(run.ranked)
    )


@pytest.fixture
def world(transactional_db) -> World:
    return seed()


def project_cards(page) -> dict[str, str]:
    """The projects home's cards: {slug: the card's visible text}."""
    cards = page.locator("#project-cards > section.card")
    return {
        card.get_attribute("id").removeprefix("project-"): card.inner_text() for card in cards.all()
    }


def menu_entries(page) -> list[str]:
    """Open the project menu (a native <details>) unless it is open; its links' texts."""
    if page.locator("#project-switch").get_attribute("open") is None:
        page.click("#project-switch > summary")
    page.locator("#project-menu").wait_for(state="visible")
    return [text.strip() for text in page.locator("#project-menu a").all_inner_texts()]


def switch_to(page, name: str, slug: str):
    """Open the project menu and take ``name``; land on that project's home."""
    entries = menu_entries(page)
    assert name in entries, entries
    page.locator("#project-menu a", has_text=name).click()
    page.wait_for_url(re.compile(rf".*/p/{slug}/$"))
    assert page.locator("#project-switch > summary").inner_text().startswith(name)


def nav_links(page) -> list[str]:
    return [t.strip() for t in page.locator("nav[aria-label=Main] a").all_inner_texts()]


def assert_no_other_project(page, world: World):
    """Gamma is offered nowhere, and its pages answer 404."""
    assert "Gamma secret" not in page.inner_text("body")
    assert "gamma-secret" not in page.content()
    for path in ("/p/gamma-secret/", "/p/gamma-secret/pairwise/tasks/"):
        response = page.goto(path)
        assert response.status == 404, path


def test_an_annotator_in_two_projects_walks_home_menu_and_a_traced_label_page(world, browser_login):
    page = browser_login(world.annotator)
    cards = project_cards(page)
    assert sorted(cards) == ["beta-bank", "default"]
    for text in cards.values():
        assert "your role: Annotator" in text
        assert "alert" not in text.lower()  # no count, no kind, no link: alerts are for leads
        assert "Label queue" in text
    assert ALPHA_KIND not in page.inner_text("body") and KAPPA_KIND not in page.inner_text("body")

    page.click("#project-beta-bank h2 a")
    page.wait_for_url(re.compile(r".*/p/beta-bank/$"))
    # the person's projects by name, the current one marked, then the projects home
    assert menu_entries(page) == ["Beta bank (current)", world.default.name, "All projects"]
    switch_to(page, world.default.name, "default")
    assert "Pairwise tasks" not in nav_links(page)
    switch_to(page, "Beta bank", "beta-bank")

    # The pairwise upload page is an admin's: typed by an annotator, refused.
    upload = page.goto(f"/p/default/pairwise/tasks/{world.task.pk}/import/")
    assert upload.status == 403
    assert "Import judgments" not in page.inner_text("body")

    # The label page of the traced record, reached from the label queue.
    page.goto("/p/beta-bank/answers/")
    page.click("#claim-next")
    page.wait_for_url(re.compile(rf".*/p/beta-bank/answers/items/{world.record.public_id}/$"))
    retrieved = page.locator("#item-retrieved")
    assert retrieved.locator("h2").inner_text() == "Retrieved passages (4)"
    ranks = [
        int(r)
        for r in retrieved.locator("[data-rank]").evaluate_all(
            "els => els.map(e => e.dataset.rank)"
        )
    ]
    assert ranks == [1, 2, 3, 4]
    text = retrieved.inner_text()
    assert "AC-2@v1" in text and "Access control" in text
    unmatched = retrieved.locator("article.passage-unmatched")
    assert unmatched.count() == 3
    assert unmatched.locator(".ev-not-in-corpus").all_inner_texts() == ["not in the corpus"] * 3
    hostile = unmatched.filter(has_text=HOSTILE_ID)
    assert hostile.locator("blockquote.passage-text").inner_text() == HOSTILE  # shown as text
    assert hostile.locator("blockquote.passage-text b, blockquote.passage-text img").count() == 0
    assert page.evaluate("window.pwned") is None
    # Ranks, not the retriever's scores; nothing that names the system or its models.
    assert "score" not in text
    html = page.content()
    assert not [secret for secret in SECRETS if secret in html]

    assert_no_other_project(page, world)


def test_a_lead_sees_each_projects_open_alerts_and_no_upload(world, browser_login):
    page = browser_login(world.lead)
    cards = project_cards(page)
    assert sorted(cards) == ["beta-bank", "default"]
    default_alerts = page.locator("#project-default-alerts")
    assert default_alerts.locator("a").inner_text() == "2 open alerts"
    assert default_alerts.locator(".alert-kind").inner_text() == ALPHA_KIND  # the worse kind
    beta_alerts = page.locator("#project-beta-bank-alerts")
    assert beta_alerts.locator("a").inner_text() == "1 open alert"
    assert beta_alerts.locator(".alert-kind").inner_text() == KAPPA_KIND

    default_alerts.locator("a").click()
    page.wait_for_url(re.compile(r".*/p/default/quality/alerts/$"))
    body = page.inner_text("main")
    assert ALPHA_KIND in body and KAPPA_KIND in body

    switch_to(page, "Beta bank", "beta-bank")
    assert menu_entries(page) == ["Beta bank (current)", world.default.name, "All projects"]
    page.locator("#project-menu a", has_text="All projects").click()
    page.wait_for_url(re.compile(r".*/$"))
    assert page.locator("#project-cards").is_visible()

    # The pairwise tasks page (a lead's), without the admin's upload link; the URL refused.
    page.goto("/p/default/")
    page.locator("nav[aria-label=Main] a", has_text="Pairwise tasks").click()
    page.wait_for_url(re.compile(r".*/p/default/pairwise/tasks/$"))
    assert "Walk compare" in page.inner_text("main")
    assert page.locator("a.import-judgments").count() == 0
    refused = page.goto(f"/p/default/pairwise/tasks/{world.task.pk}/import/")
    assert refused.status == 403

    assert_no_other_project(page, world)


def test_an_admin_uploads_judgments_from_the_menu_and_sees_the_scores(world, browser_login):
    AnswerRecord.objects.filter(pk=world.record.pk).update(status=RecordStatus.NEEDS_ADJUDICATION)
    page = browser_login(world.admin)
    cards = project_cards(page)
    assert sorted(cards) == ["beta-bank", "default"]
    assert page.locator("#project-default-alerts a").inner_text() == "2 open alerts"
    assert "Members" in cards["default"] and "Settings" in cards["default"]

    page.click("#project-default h2 a")
    page.wait_for_url(re.compile(r".*/p/default/$"))
    page.locator("nav[aria-label=Main] a", has_text="Pairwise tasks").click()
    page.wait_for_url(re.compile(r".*/p/default/pairwise/tasks/$"))
    page.locator("a.import-judgments").click()
    page.wait_for_url(re.compile(rf".*/p/default/pairwise/tasks/{world.task.pk}/import/$"))
    assert page.locator("h1").inner_text() == "Import judgments into Walk compare"

    pairs = list(PairwisePair.objects.filter(task=world.task).order_by("position"))
    reviewer = world.reviewer.username
    bad = [
        {"pair": pairs[0].public_id, "reviewer": reviewer, "preference": "tie"},
        {"pair": "pw-nowhere", "reviewer": reviewer, "preference": "tie"},
        {"pair": pairs[1].public_id, "reviewer": "walk-ann", "preference": "a"},
    ]
    page.set_input_files("#judgments-file", files=[_jsonl("bad.jsonl", bad)])
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("#import-judgments button[type=submit]")
    assert answer.value.status == 422
    errors = page.locator("#import-errors")
    assert "The file was rejected; nothing was imported." in errors.inner_text()
    problems = errors.locator("li").all_inner_texts()
    assert any(p.startswith("line 2: pair: unknown pair 'pw-nowhere'") for p in problems)
    assert any(p.startswith("line 3: reviewer:") for p in problems), problems
    assert not PairJudgment.objects.exists()

    good = [{"pair": pairs[0].public_id, "reviewer": reviewer, "preference": "tie"}]
    page.set_input_files("#judgments-file", files=[_jsonl("good.jsonl", good)])
    page.click("#import-judgments button[type=submit]")
    page.wait_for_url(re.compile(r".*/p/default/imports/\d+/$"))
    assert page.locator("#import-progress strong").inner_text() == "Imported"
    summary = page.locator("#import-summary").inner_text()
    assert "judgments\t1" in summary or re.search(r"judgments\s+1", summary), summary
    job = ImportJob.objects.get(status=ImportStatus.SUCCEEDED)
    assert job.project == world.default and PairJudgment.objects.count() == 1

    # The traced record, on the adjudication page of beta: the retriever's scores, for admins.
    switch_to(page, "Beta bank", "beta-bank")
    page.goto(project_url(world.beta, "answers:adjudication_queue"))
    page.locator(f"a[href$='/{world.record.public_id}/']").first.click()
    retrieved = page.locator("#item-retrieved")
    retrieved.wait_for()
    text = retrieved.inner_text()
    for doc_id, score in world.scores.items():
        assert doc_id in text
        assert f"score {score}" in text
    assert retrieved.locator("blockquote.passage-text", has_text="Vendor").inner_text() == HOSTILE
    assert page.evaluate("window.pwned") is None

    assert_no_other_project(page, world)


def _jsonl(name: str, rows: list[dict]) -> dict:
    body = "".join(json.dumps(row) + "\n" for row in rows).encode()
    return {"name": name, "mimeType": "application/jsonl", "buffer": body}
