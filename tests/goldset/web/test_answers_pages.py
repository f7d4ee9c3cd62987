import pytest
from django.urls import reverse

from goldset.models import Label, LabelAssignment
from goldset.services.labeling import claim_next_item, submit_label
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import (
    BAD,
    GOOD,
    assert_blind,
    build_conflict_item,
    claim_and_label,
    default_project,
    qualified_annotators,
)
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def hx(target):
    return {**HX, "HTTP_HX_TARGET": target}


def form_data(**fields):
    data = {**GOOD, **fields}
    data["severe_safety"] = "yes" if data["severe_safety"] else "no"
    return {k: v for k, v in data.items() if v not in ("", [], None)}


@pytest.fixture
def domain():
    return DomainFactory(slug="supply_chain")


@pytest.fixture
def item(domain):
    record, annotators = build_conflict_item(domain)
    for annotator in annotators:
        claim_next_item(annotator=annotator, project=default_project())
    return record, annotators


def test_label_page_shows_question_answer_citations_and_evidence_blind(client_for, item):
    record, (one, *_) = item
    response = client_for(one).get(reverse("answers:item", args=[record.public_id]))
    html = response.content.decode()
    assert response.status_code == 200
    assert record.answer in html and record.question.text in html
    assert "blk-memo-02@v1" in html and "Northwest Lane Budget-Control Memo" in html
    assert "regional_exception" in html and "conflict" in html
    assert 'data-axis="grounding"' in html and 'data-option="4"' in html
    assert_blind(html)


def test_every_annotator_and_lead_page_and_fragment_is_blind(client_for, item, lead):
    record, (one, two, three) = item
    ann = client_for(one)
    url = reverse("answers:item", args=[record.public_id])
    pages = [
        ann.get(reverse("answers:queue")),
        ann.get(reverse("answers:queue"), **hx("queue-summary")),
        ann.get(url),
        ann.get(url, **hx("label-form")),
        ann.post(
            url,
            form_data(severe_safety=True, **{k: v for k, v in BAD.items() if k != "severe_safety"}),
            **hx("label-form"),
        ),
        ann.get(reverse("answers:calibration")),
    ]
    submit_label(
        assignment=LabelAssignment.objects.get(annotator=one),
        **{**GOOD, "rationale": "memo governs"},
    )
    submit_label(
        assignment=LabelAssignment.objects.get(annotator=two),
        **{**GOOD, "grounding": "partially_grounded", "rationale": "ok"},
    )
    submit_label(assignment=LabelAssignment.objects.get(annotator=three), **BAD)
    pages.append(ann.get(url))
    boss = client_for(lead)
    lead_url = reverse("answers:adjudicate", args=[record.public_id])
    pages += [
        boss.get(reverse("answers:adjudication_queue")),
        boss.get(reverse("answers:adjudication_queue"), **hx("adjudication-items")),
        boss.get(lead_url),
        boss.get(lead_url, **hx("adjudication-form")),
        boss.post(
            lead_url,
            {"acceptability": "acceptable", "grounding": "fully_grounded", "severe_safety": "no"},
            **hx("adjudication-form"),
        ),
        boss.get(reverse("answers:calibration_status")),
    ]
    assert [p.status_code for p in pages] == [200] * len(pages)
    for page in pages:
        assert_blind(page.content.decode())
    # the lead sees the labels as Annotator 1/2/3, never usernames
    lead_html = pages[-4].content.decode()
    assert "Annotator 1" in lead_html and "Annotator 3" in lead_html
    assert one.username not in lead_html and "memo governs" in lead_html
    # fragments are only the partial
    assert pages[3].content.decode().lstrip().startswith('<form id="label-form"')
    assert "<html" not in pages[-3].content.decode()


def test_admin_sees_system_and_identities_on_the_adjudication_page(client_for, item, admin_user):
    record, annotators = item
    for n, annotator in enumerate(annotators):
        fields = (
            BAD
            if n == 2
            else {
                **GOOD,
                "grounding": ["fully_grounded", "partially_grounded"][n],
                "rationale": "x",
            }
        )
        submit_label(assignment=LabelAssignment.objects.get(annotator=annotator), **fields)
    html = (
        client_for(admin_user)
        .get(reverse("answers:adjudicate", args=[record.public_id]))
        .content.decode()
    )
    assert "secret_system_hybrid_xyz" in html and annotators[0].username in html


def test_annotator_cannot_open_an_item_not_assigned_to_them(client_for, item, domain):
    record, _ = item
    (outsider,) = qualified_annotators(domain, 1, prefix="outsider")
    assert (
        client_for(outsider).get(reverse("answers:item", args=[record.public_id])).status_code
        == 404
    )
    assert (
        client_for(outsider)
        .post(reverse("answers:item", args=[record.public_id]), form_data())
        .status_code
        == 404
    )
    assert Label.objects.count() == 0


def test_annotator_never_sees_another_annotators_label(client_for, item):
    record, (one, two, _) = item
    submit_label(
        assignment=LabelAssignment.objects.get(annotator=one),
        **{**BAD, "rationale": "ONE-PRIVATE-NOTE"},
    )
    html = client_for(two).get(reverse("answers:item", args=[record.public_id])).content.decode()
    assert "ONE-PRIVATE-NOTE" not in html and 'id="label-form"' in html
    # nor through the lead's page, which needs the lead role
    assert (
        client_for(two).get(reverse("answers:adjudicate", args=[record.public_id])).status_code
        == 403
    )


def test_lead_cannot_open_items_still_collecting_labels(client_for, item, lead):
    record, _ = item
    assert (
        client_for(lead).get(reverse("answers:adjudicate", args=[record.public_id])).status_code
        == 404
    )


def test_severe_safety_without_rationale_is_rejected_over_http(client_for, item):
    record, (one, *_) = item
    url = reverse("answers:item", args=[record.public_id])
    data = form_data(**{**BAD, "severe_safety": True})
    response = client_for(one).post(url, data)
    assert response.status_code == 200
    assert "rule: severe safety label" in response.content.decode()
    partial = client_for(one).post(url, data, **hx("label-form"))
    assert partial.status_code == 200 and "rule: severe safety label" in partial.content.decode()
    assert Label.objects.count() == 0


def test_acceptable_on_conflict_item_needs_rationale_over_http_then_is_stored(client_for, item):
    record, (one, *_) = item
    url = reverse("answers:item", args=[record.public_id])
    client = client_for(one)
    response = client.post(url, form_data())
    assert response.status_code == 200
    assert "rule: acceptable despite a conflict flag" in response.content.decode()
    ok = client.post(url, form_data(rationale="The memo is cited and governs."), **hx("label-form"))
    assert ok.status_code == 200 and ok["HX-Redirect"] == reverse("answers:queue")
    assert Label.objects.get().rationale == "The memo is cited and governs."


def test_every_view_of_an_item_is_an_audit_event(client_for, item):
    record, (one, *_) = item
    before = AuditEvent.objects.filter(verb="viewed", object_id=str(record.pk)).count()
    client_for(one).get(reverse("answers:item", args=[record.public_id]))
    client_for(one).get(reverse("answers:item", args=[record.public_id]))
    events = AuditEvent.objects.filter(verb="viewed", object_id=str(record.pk))
    assert events.count() == before + 2 and events.first().actor == one


def test_claim_redirects_to_the_next_item_or_explains(client_for, domain):
    AnswerRecordFactory(question__domain=domain)
    (ready,) = qualified_annotators(domain, 1)
    response = client_for(ready).post(reverse("answers:claim"))
    assignment = LabelAssignment.objects.get(annotator=ready)
    assert response.status_code == 302
    assert response["Location"] == reverse("answers:item", args=[assignment.record.public_id])
    newcomer = UserFactory(role=Role.ANNOTATOR, username="newbie")
    page = client_for(newcomer).post(reverse("answers:claim"), follow=True)
    assert "Pass a domain&#x27;s calibration set" in page.content.decode()


@pytest.mark.parametrize(
    "name,args,allowed",
    [
        ("answers:queue", [], {"annotator"}),
        ("answers:calibration", [], {"annotator"}),
        ("answers:adjudication_queue", [], {"lead", "admin_user"}),
        ("answers:calibration_status", [], {"lead", "admin_user"}),
        ("answers:import", [], {"admin_user"}),
        ("answers:runs", [], {"admin_user"}),
        ("answers:export", [], {"admin_user"}),
        ("answers:export_download", [], {"admin_user"}),
    ],
)
def test_role_access(request, client, client_for, name, args, allowed):
    url = reverse(name, args=args)
    assert client.get(url).status_code == 302
    for fixture in ("annotator", "lead", "admin_user"):
        user = request.getfixturevalue(fixture)
        expected = 200 if fixture in allowed else 403
        assert client_for(user).get(url).status_code == expected, (fixture, name)


def test_queue_and_adjudication_queue_query_counts_do_not_grow(
    client_for, domain, lead, django_assert_max_num_queries
):
    annotators = qualified_annotators(domain, 3)

    def add_split_items(n):
        for _ in range(n):
            AnswerRecordFactory(question__domain=domain)
            claim_and_label(annotators[0], **GOOD)
            claim_and_label(annotators[1], **{**GOOD, "grounding": "partially_grounded"})
            claim_and_label(annotators[2], **BAD)

    add_split_items(2)
    clients = {
        "answers:queue": client_for(annotators[0]),
        "answers:adjudication_queue": client_for(lead),
    }
    counts = []
    for _ in range(2):
        for name, client in clients.items():
            with django_assert_max_num_queries(15) as ctx:
                assert client.get(reverse(name)).status_code == 200
            counts.append(len(ctx.captured_queries))
        add_split_items(6)
    assert counts[:2] == counts[2:]
