"""One motion per item over HTTP: a submit, a skip or an undo answers with the next item."""

import pytest
from django.urls import reverse

from goldset.models import ItemSkip, Label, LabelAssignment
from goldset.services.labeling import claim_next_item
from tests.factories import AnswerRecordFactory, DomainFactory
from tests.goldset.answers_helpers import (
    GOOD,
    build_conflict_item,
    default_project,
    qualified_annotators,
)

pytestmark = pytest.mark.django_db

HX_ITEM = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "label-item"}


def form_data(**fields):
    data = {**GOOD, **fields}
    data["severe_safety"] = "yes" if data["severe_safety"] else "no"
    return {k: v for k, v in data.items() if v not in ("", [], None)}


@pytest.fixture
def domain():
    return DomainFactory(slug="supply_chain")


def _records(domain, n):
    return [AnswerRecordFactory(question__domain=domain) for _ in range(n)]


def test_htmx_submit_answers_with_the_next_item_and_pushes_its_url(client_for, domain):
    _records(domain, 3)
    (annotator,) = qualified_annotators(domain, 1)
    first = claim_next_item(annotator=annotator, project=default_project()).assignment
    response = client_for(annotator).post(
        reverse("answers:item", args=[first.record.public_id]), form_data(), **HX_ITEM
    )
    following = LabelAssignment.objects.get(annotator=annotator, completed_at__isnull=True)
    html = response.content.decode()
    assert response.status_code == 200
    assert response["HX-Push-Url"] == reverse("answers:item", args=[following.record.public_id])
    assert html.lstrip().startswith('<div id="label-item"')
    assert following.record.public_id in html and following.record.answer in html
    assert "Label saved." in html and 'id="undo-last"' in html
    assert Label.objects.get().record_id == first.record_id


def test_without_htmx_a_submit_redirects_to_the_next_item_then_to_the_queue(client_for, domain):
    _records(domain, 2)
    (annotator,) = qualified_annotators(domain, 1)
    client = client_for(annotator)
    first = claim_next_item(annotator=annotator, project=default_project()).assignment
    response = client.post(reverse("answers:item", args=[first.record.public_id]), form_data())
    second = LabelAssignment.objects.get(annotator=annotator, completed_at__isnull=True)
    assert response["Location"] == reverse("answers:item", args=[second.record.public_id])
    last = client.post(response["Location"], form_data())
    assert last["Location"] == reverse("answers:queue")


def test_all_clear_button_submits_the_preset_in_one_request(client_for, domain):
    _records(domain, 1)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    page = client_for(annotator).get(reverse("answers:item", args=[assignment.record.public_id]))
    assert 'id="all-clear"' in page.content.decode()
    assert "data-needs-rationale" not in page.content.decode()
    client_for(annotator).post(
        reverse("answers:item", args=[assignment.record.public_id]),
        {"preset": "all_clear"},
        **HX_ITEM,
    )
    label = Label.objects.get()
    assert (label.acceptability, label.grounding, label.severe_safety) == (
        "acceptable",
        "fully_grounded",
        False,
    )
    assert (label.evidence_sufficiency, label.citation_correctness) == ("sufficient", "correct")


def test_all_clear_never_skips_a_required_rationale(client_for, domain):
    record, (one, *_) = build_conflict_item(domain)
    claim_next_item(annotator=one, project=default_project())
    url = reverse("answers:item", args=[record.public_id])
    client = client_for(one)
    assert "data-needs-rationale" in client.get(url).content.decode()
    refused = client.post(url, {"preset": "all_clear"}, **HX_ITEM)
    assert refused.status_code == 200
    assert "rule: acceptable despite a conflict flag" in refused.content.decode()
    assert not Label.objects.exists()
    client.post(url, {"preset": "all_clear", "rationale": "The memo governs."}, **HX_ITEM)
    assert Label.objects.get().rationale == "The memo governs."


def test_undo_over_htmx_reopens_the_item(client_for, domain):
    _records(domain, 2)
    (annotator,) = qualified_annotators(domain, 1)
    client = client_for(annotator)
    first = claim_next_item(annotator=annotator, project=default_project()).assignment
    client.post(reverse("answers:item", args=[first.record.public_id]), form_data(), **HX_ITEM)
    response = client.post(reverse("answers:undo"), **HX_ITEM)
    assert response.status_code == 200
    assert response["HX-Push-Url"] == reverse("answers:item", args=[first.record.public_id])
    assert 'id="label-form"' in response.content.decode()
    assert not Label.objects.exists()
    again = client.post(reverse("answers:undo"), **HX_ITEM)
    assert again["HX-Redirect"] == reverse("answers:queue")


def test_skip_over_htmx_answers_with_the_next_item_and_needs_a_reason(client_for, domain):
    _records(domain, 2)
    (annotator,) = qualified_annotators(domain, 1)
    client = client_for(annotator)
    first = claim_next_item(annotator=annotator, project=default_project()).assignment
    url = reverse("answers:skip", args=[first.record.public_id])
    refused = client.post(url, {"reason": ""}, **HX_ITEM)
    assert refused.status_code == 422 and "reason is required" in refused.content.decode()
    response = client.post(url, {"reason": "outside my expertise"}, **HX_ITEM)
    following = LabelAssignment.objects.get(annotator=annotator)
    assert following.record_id != first.record_id
    assert response["HX-Push-Url"] == reverse("answers:item", args=[following.record.public_id])
    assert ItemSkip.objects.get().reason == "outside my expertise"


def test_skip_and_undo_access(request, client, client_for, domain):
    _records(domain, 1)
    owner, other = qualified_annotators(domain, 2)
    assignment = claim_next_item(annotator=owner, project=default_project()).assignment
    skip_url = reverse("answers:skip", args=[assignment.record.public_id])
    undo_url = reverse("answers:undo")
    for url in (skip_url, undo_url):
        assert client.post(url, {"reason": "x"}).status_code == 302  # anonymous → login
        for role in ("lead", "admin_user"):
            user = request.getfixturevalue(role)
            assert client_for(user).post(url, {"reason": "x"}).status_code == 403
    assert client_for(other).post(skip_url, {"reason": "x"}).status_code == 404
    assert client_for(owner).get(skip_url).status_code == 405
    assert LabelAssignment.objects.filter(pk=assignment.pk).exists()


def test_next_item_response_query_count_does_not_grow(
    client_for, domain, django_assert_max_num_queries
):
    (annotator,) = qualified_annotators(domain, 1)
    client = client_for(annotator)
    counts = []
    for size in (2, 3, 30):  # the first round warms per-process caches (content types, session)
        _records(domain, size)
        current = claim_next_item(annotator=annotator, project=default_project()).assignment
        url = reverse("answers:item", args=[current.record.public_id])
        with django_assert_max_num_queries(60) as ctx:
            assert client.post(url, form_data(), **HX_ITEM).status_code == 200
        counts.append(len(ctx.captured_queries))
        LabelAssignment.objects.filter(annotator=annotator, completed_at__isnull=True).delete()
    assert counts[1] == counts[2], counts


def test_the_lead_sees_skips_counted_per_annotator(client_for, domain, lead):
    _records(domain, 2)
    (annotator,) = qualified_annotators(domain, 1)
    assignment = claim_next_item(annotator=annotator, project=default_project()).assignment
    client_for(annotator).post(
        reverse("answers:skip", args=[assignment.record.public_id]), {"reason": "unsure"}
    )
    html = client_for(lead).get(reverse("answers:calibration_status")).content.decode()
    row = html[html.index(f"<tr><td>{annotator.username}</td>") :].split("</tr>")[0]
    assert '<td class="num">1</td>' in row


def _model_rows(context) -> list:
    from django.db.models import Model

    from goldset.models import AnswerRecord, Run

    found = []
    contexts = context if isinstance(context, list) else [context]
    values = [v for ctx in contexts for v in ctx.flatten().values()]
    for value in values:
        if isinstance(value, (AnswerRecord, LabelAssignment, Label, Run)):
            found.append(value)
        elif isinstance(value, Model) and hasattr(value, "run_id"):
            found.append(value)
    return found


def test_the_label_page_context_holds_only_blind_read_models(client_for, domain):
    """Blinding is in the data: the annotator's page context has no record, assignment, label or
    run row from which the system or run could be reached, before and after labeling."""
    _records(domain, 2)
    (annotator,) = qualified_annotators(domain, 1)
    first = claim_next_item(annotator=annotator, project=default_project()).assignment
    client = client_for(annotator)
    url = reverse("answers:item", args=[first.record.public_id])
    page = client.get(url)
    assert page.status_code == 200 and _model_rows(page.context) == []
    assert not hasattr(page.context["assignment"].record, "run")
    client.post(url, form_data())
    labelled = client.get(url)
    assert labelled.context["label"].acceptability and _model_rows(labelled.context) == []
    assert not hasattr(labelled.context["label"], "assignment")
