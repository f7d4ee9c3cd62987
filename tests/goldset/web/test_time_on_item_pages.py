"""Time on item and guidelines in the pages: the guideline panel and the timing fields on the
label, review and adjudication pages, what a submit through them stores (garbage included), the
leads' guideline pages and fast-decision list for every role with constant query counts, the
dashboard's time-on-item table, and the times in the adjudication export."""

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from goldset.models import (
    Adjudication,
    ExportFormat,
    FastDecision,
    GuidelineTask,
    GuidelineVersion,
    Label,
    Review,
)
from goldset.rules.time_on_item import ItemTiming
from goldset.services.adjudication import record_adjudication
from goldset.services.agreement import recompute_agreement_snapshots
from goldset.services.freeze import store_frozen_version
from goldset.services.guidelines import save_guideline
from goldset.services.labeling import claim_next_item, submit_label
from goldset.services.probe_exports import render_adjudication_export
from goldset.services.reviews import claim_next_assignment
from goldset.views import quality
from tests.factories import (
    AnswerRecordFactory,
    DomainFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from tests.goldset.answers_helpers import BAD, GOOD, claim_and_label, qualified_annotators
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db

HX_LABEL = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "label-item"}
FORM = {
    "acceptability": "acceptable",
    "grounding": "fully_grounded",
    "evidence_sufficiency": "sufficient",
    "citation_correctness": "correct",
    "conflict_handling": "not_applicable",
    "safety_boundary": "respected",
    "severe_safety": "no",
}
FINAL = {
    "acceptability": "unacceptable",
    "grounding": "partially_grounded",
    "severe_safety": "no",
    "primary_failure": "missing_governing_exception",
    "rationale": "The governing exception is omitted.",
}


@pytest.fixture
def domain():
    return DomainFactory(slug="supply_chain", name="Supply chain")


def _opening(html: str) -> str:
    return re.search(r'name="opened" value="([^"]+)"', html).group(1)


def _panel_outside_form(html: str, form_id: str) -> None:
    """The guideline panel is on the page, before and outside the decision form (so Enter on
    its summary opens it and never submits)."""
    panel, form = html.index('id="guideline-panel"'), html.index(f'id="{form_id}"')
    assert panel < form and html.count("<summary>Guidelines") == 1
    assert html.index("</details>", panel) < form


def test_label_page_shows_the_guideline_and_a_submit_stores_time_and_version(
    domain, lead, client_for
):
    guideline, _ = save_guideline(
        actor=lead,
        domain=domain,
        task=GuidelineTask.ANSWER_LABELING,
        body="## Grounding\n\n*Fully grounded*: every claim cited. <b>raw</b>",
    )
    AnswerRecordFactory(question__domain=domain)
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    client = client_for(annotator)
    url = reverse("answers:item", args=[assignment.record.public_id])
    html = client.get(url).content.decode()
    _panel_outside_form(html, "label-form")
    assert "<em>Fully grounded</em>" in html and "&lt;b&gt;raw&lt;/b&gt;" in html
    assert "version 1" in html and 'data-active-ms data-opening="' in html
    response = client.post(url, {**FORM, "opened": _opening(html), "active_ms": "1234"}, **HX_LABEL)
    assert response.status_code == 200
    label = Label.objects.get(assignment=assignment)
    assert label.guideline_id == guideline.pk
    assert label.server_ms is not None and label.active_ms == min(1234, label.server_ms + 2000)
    # the next item came back with its own opening token and the panel
    following = response.content.decode()
    assert _opening(following) != _opening(html) and 'id="guideline-panel"' in following


@pytest.mark.parametrize("garbage", ["-3", "NaN", "1e9", "<script>", "9" * 300, ""])
def test_a_label_posted_with_garbage_timing_is_stored_without_it(domain, client_for, garbage):
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    response = client_for(annotator).post(
        reverse("answers:item", args=[assignment.record.public_id]),
        {**FORM, "opened": "forged:token", "active_ms": garbage},
    )
    assert response.status_code == 302
    label = Label.objects.get(assignment=assignment)
    assert label.server_ms is not None and label.guideline_id is None  # from the claim
    if garbage.isdigit():
        assert label.active_ms == label.server_ms + 2000 or label.active_ms <= label.server_ms
    else:
        assert label.active_ms is None


def test_a_rejected_label_keeps_its_opening_token(domain, client_for):
    AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    client = client_for(annotator)
    url = reverse("answers:item", args=[assignment.record.public_id])
    token = _opening(client.get(url).content.decode())
    again = client.post(url, {"acceptability": "acceptable", "opened": token}, **HX_LABEL)
    assert again.status_code == 200 and _opening(again.content.decode()) == token


def test_review_page_shows_its_guideline_and_records_time_and_version(make_user, lead, client_for):
    author = make_user(Role.ANNOTATOR, username="author")
    reviewer = make_user(Role.ANNOTATOR, username="reviewer")
    triple = write_triple(author)
    guideline, _ = save_guideline(
        actor=lead, domain=triple.domain, task=GuidelineTask.TRIPLE_REVIEW, body="Check entailment."
    )
    assignment = claim_next_assignment(project=default_project(), reviewer=reviewer)
    client = client_for(reviewer)
    url = reverse("curation:review", args=[assignment.pk])
    html = client.get(url).content.decode()
    _panel_outside_form(html, "review-form")
    assert "Check entailment." in html
    client.post(
        url,
        {"verdict": "confirm", "opened": _opening(html), "active_ms": "700"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="review-item",
    )
    review = Review.objects.get(assignment=assignment)
    assert review.guideline_id == guideline.pk
    assert review.server_ms is not None and review.active_ms <= 700


def _needs_adjudication(domain):
    annotators = qualified_annotators(domain, 3)
    record = AnswerRecordFactory(question__domain=domain)
    claim_and_label(annotators[0], **GOOD)
    claim_and_label(annotators[1], **{**GOOD, "grounding": "partially_grounded"})
    claim_and_label(annotators[2], **BAD)
    return record


def test_adjudication_page_shows_its_guideline_and_records_time_from_the_opening(
    domain, lead, client_for
):
    record = _needs_adjudication(domain)
    guideline, _ = save_guideline(
        actor=lead, domain=domain, task=GuidelineTask.ADJUDICATION, body="The block wins."
    )
    client = client_for(lead)
    url = reverse("answers:adjudicate", args=[record.public_id])
    html = client.get(url).content.decode()
    _panel_outside_form(html, "adjudication-form")
    client.post(url, {**FINAL, "opened": _opening(html), "active_ms": "2500"})
    adjudication = Adjudication.objects.get(record=record)
    assert adjudication.guideline_id == guideline.pk
    assert adjudication.server_ms is not None and adjudication.active_ms <= 2500


def _guideline_urls(domain):
    return [
        reverse("guidelines:list"),
        reverse("guidelines:edit", args=[domain.slug, "answer_labeling"]),
        reverse("guidelines:version", args=[domain.slug, "answer_labeling", 1]),
        reverse("quality:fast_decisions"),
    ]


def test_annotators_get_403_and_anonymous_users_the_login_page(
    domain, lead, annotator, client_for, client
):
    save_guideline(actor=lead, domain=domain, task="answer_labeling", body="v1")
    for url in _guideline_urls(domain):
        assert client_for(annotator).get(url).status_code == 403, url
        assert client_for(annotator).post(url, {"body": "x"}).status_code == 403, url
        response = client.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"], url
    assert GuidelineVersion.objects.count() == 1


@pytest.mark.parametrize("role", ["lead", "admin_user"])
def test_leads_and_admins_write_versions_and_read_the_history(domain, role, request, client_for):
    user = request.getfixturevalue(role)
    client = client_for(user)
    edit = reverse("guidelines:edit", args=[domain.slug, "triple_review"])
    assert "none yet" in client.get(reverse("guidelines:list")).content.decode()
    for body in ("# First\n\nConfirm only when entailed.", "# Second\n\nAlso check the block."):
        response = client.post(edit, {"body": body, "note": "wording"})
        assert response.status_code == 302 and response["Location"] == edit
    same = client.post(edit, {"body": "# Second\n\nAlso check the block."}, follow=True)
    assert "No change: version 2 stays in force." in same.content.decode()
    html = client.get(edit).content.decode()
    assert "Version 2 (in force)" in html and "<h1>Second</h1>" in html
    assert html.count("<td>wording</td>") == 2 and ">v1</a>" in html and ">v2</a>" in html
    old = client.get(reverse("guidelines:version", args=[domain.slug, "triple_review", 1]))
    assert "superseded by v2" in old.content.decode() and "<h1>First</h1>" in old.content.decode()
    assert client.post(edit, {"body": "   "}).status_code == 200  # form error, nothing stored
    assert GuidelineVersion.objects.count() == 2
    for url in (
        reverse("guidelines:edit", args=["nope", "triple_review"]),
        reverse("guidelines:edit", args=[domain.slug, "labeling"]),
        reverse("guidelines:version", args=[domain.slug, "triple_review", 9]),
    ):
        assert client.get(url).status_code == 404, url


def test_guideline_list_and_history_query_counts_are_flat(lead, client_for):
    client = client_for(lead)
    counts = []
    for n in (1, 8):
        for i in range(n):
            domain = DomainFactory()
            for v in range(3):
                save_guideline(actor=lead, domain=domain, task="adjudication", body=f"v{v} {i}")
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(reverse("guidelines:list")).status_code == 200
        listed = len(ctx)
        with CaptureQueriesContext(connection) as ctx:
            client.get(reverse("guidelines:edit", args=[domain.slug, "adjudication"]))
        counts.append((listed, len(ctx)))
    assert counts[0] == counts[1], counts


def _fast_decisions(domain, lead, n):
    """n fast GOLD labels (of n records), and one fast review and adjudication."""
    for _ in range(n):
        AnswerRecordFactory(question__domain=domain, labels_required=1)
    for annotator in qualified_annotators(domain, n, prefix=f"fast{n}-"):
        assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
        submit_label(assignment=assignment, **GOOD, timing=ItemTiming(active_ms=900))


def test_fast_decision_list_links_items_names_people_and_pages_by_keyset(
    domain, lead, admin_user, client_for, settings, monkeypatch
):
    settings.FAST_DECISION_SECONDS_GOLD = 5
    client = client_for(lead)
    counts = []
    for n in (2, 12):
        _fast_decisions(domain, lead, n)
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(reverse("quality:fast_decisions"))
        counts.append(len(ctx))
    assert counts[0] == counts[1], counts
    html = response.content.decode()
    first = FastDecision.objects.order_by("-created_at", "-id").select_related("label__record")[0]
    assert reverse("promotion:record", args=[first.label.record.public_id]) in html
    assert "fast12-1" in html and "GOLD" in html and "<td>5.0</td>" in html
    assert "gpt-4o-mini" not in html  # the record's model never reaches the page
    assert FastDecision.objects.count() == 14
    # page 2 by keyset: the rest, none twice
    monkeypatch.setattr(quality, "FAST_PAGE_SIZE", 10)
    page1 = client.get(reverse("quality:fast_decisions")).content.decode()
    cursor = re.search(r'after=([\w-]+)" rel="next"', page1).group(1)
    page2 = client.get(reverse("quality:fast_decisions"), {"after": cursor}).content.decode()
    assert page1.count("<tr><td>") == 10 and page2.count("<tr><td>") == 4
    assert client.get(reverse("quality:fast_decisions"), {"after": "%%%"}).status_code == 404
    assert client_for(admin_user).get(reverse("quality:fast_decisions")).status_code == 200


def test_dashboard_shows_time_on_item_per_annotator_and_links_the_fast_list(
    domain, lead, client_for, settings
):
    settings.FAST_DECISION_SECONDS_GOLD = 5
    for _ in range(3):
        AnswerRecordFactory(question__domain=domain, labels_required=1)
    (annotator,) = qualified_annotators(domain, 1)
    annotator.first_name, annotator.last_name = "Ada", "Byron"
    annotator.save()
    for active in (1000, 7000, 20000):
        assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
        assignment.claimed_at = timezone.now() - timezone.timedelta(minutes=5)
        assignment.save(update_fields=["claimed_at"])
        submit_label(assignment=assignment, **GOOD, timing=ItemTiming(active_ms=active))
    # until the agreement recompute stores them, the figures are marked stale (issue 17)
    html = client_for(lead).get(reverse("quality:agreement")).content.decode()
    assert 'id="time-on-item-stale"' in html
    assert re.search(r'<tr class="stale"><td>Ada Byron <span class="badge warn">stale', html)
    recompute_agreement_snapshots(project=default_project(), full=False)
    html = client_for(lead).get(reverse("quality:agreement")).content.decode()
    assert 'id="time-on-item-stale"' not in html
    section = html[html.index('id="time-on-item"') :]
    section = section[: section.index("</section>")]
    row = re.search(r"<tr><td>Ada Byron</td><td>Answer label</td>(.*?)</tr>", section).group(1)
    # n = 3, median 7.0 s, p90 = 7 + 0.8 × 13 = 17.4 s, one flagged (1 s < 5 s)
    assert re.findall(r"<td>(.*?)</td>", row)[:3] == ["3", "7.0", "17.4"]
    assert reverse("quality:fast_decisions") in section and ">1</a>" in row
    # the same table as JSON (display names and seconds), for leads only
    url = reverse("quality:table-download", args=["time", "json"])
    rows = json.loads(client_for(lead).get(url).content)
    assert {
        "annotator": "Ada Byron",
        "decisions": "label",
        "n": 3,
        "median_active_s": 7.0,
        "p90_active_s": 17.4,
        "flagged_fast": 1,
    } in rows
    csv_body = client_for(lead).get(reverse("quality:table-download", args=["time", "csv"]))
    assert csv_body.content.decode().splitlines()[0].startswith("annotator,decisions,n,")
    assert client_for(annotator).get(url).status_code == 403


def test_the_adjudication_export_carries_times_and_guideline_versions_for_leads(
    domain, lead, admin_user, client_for
):
    save_guideline(actor=lead, domain=domain, task="answer_labeling", body="Label rubric.")
    record = _needs_adjudication(domain)
    save_guideline(actor=lead, domain=domain, task="adjudication", body="Adjudication rubric.")
    record_adjudication(lead=lead, record=record, **{**FINAL, "severe_safety": False})
    blocks = make_gold_corpus(1)
    version = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(blocks)],
        actor=admin_user,
        extra_files={ExportFormat.ADJUDICATION: render_adjudication_export},
    )
    for user in (lead, admin_user):
        response = client_for(user).get(
            reverse("exports:download", args=[version.number, "adjudication"])
        )
        (row,) = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
        assert {label["guideline_version"] for label in row["labels"]} == {1}
        assert all(isinstance(label["server_ms"], int) for label in row["labels"])
        assert all(label["active_ms"] is None for label in row["labels"])  # not sent by a client
        assert row["adjudication"]["guideline_version"] == 1
        assert row["adjudication"]["server_ms"] is None  # nothing said when the page was opened
    live = client_for(admin_user).get(reverse("answers:export_download"))
    body = b"".join(live.streaming_content) if live.streaming else live.content
    assert b'"guideline_version": 1' in body or b'"guideline_version":1' in body
