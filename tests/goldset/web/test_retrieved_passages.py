"""What a trace retrieved, on the pages that judge its answer (issue 28): the label page, the
label-claim API and the adjudication page list the passages retrieved by rank — those matched to
the corpus (their block version) beside those not in the corpus (their text, marked "not in the
corpus") — and the retriever's scores only for admins (a score's scale characterises the
retriever); nothing names the system. The trace comes through the receiver."""

import re

import pytest
from django.urls import reverse

from goldset.models import AnswerRecord, RecordStatus, RetrievedPassage, UnmatchedPassage
from goldset.models.routing import Tier
from goldset.services.evaluators import answer_entry, gold_tier_records
from goldset.services.labeling import claim_next_item
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    CalibrationResultFactory,
    DocumentFactory,
    DomainFactory,
    default_project,
)
from tests.goldset.otlp_support import pipeline_spans, post, protobuf_body, write_token
from tests.goldset.rules.traces_support import CHAT_MODEL, CORPUS, RERANK_MODEL, SERVICE

pytestmark = pytest.mark.django_db


@pytest.fixture
def traced(client, admin_user, annotator, django_capture_on_commit_callbacks):
    """One OpenInference trace received and mapped: its reranker kept two documents, AC-2 (in
    the corpus) and one that is not; the annotator has claimed its record."""
    domain = DomainFactory(slug="controls", name="Security controls")
    document = DocumentFactory(domain=domain, document_id="doc-AC-2", title="Access control")
    BlockVersionFactory(block=BlockFactory(block_id="AC-2", document=document), text=CORPUS["AC-2"])
    CalibrationResultFactory(annotator=annotator, domain=domain)
    spans, run = pipeline_spans("openinference")
    with django_capture_on_commit_callbacks(execute=True):
        response = post(
            client, default_project(), protobuf_body(spans), token=write_token(admin_user)
        )
    assert response.status_code == 200
    record = AnswerRecord.objects.get()
    assert claim_next_item(project=default_project(), annotator=annotator).assignment is not None
    return record, run


def section(html: str, element_id: str) -> str:
    match = re.search(rf'<section class="card" id="{element_id}">(.*?)</section>', html, re.S)
    assert match, element_id
    return match.group(1)


SECRETS = (SERVICE["service.name"], CHAT_MODEL, RERANK_MODEL)


def test_the_label_page_shows_passages_in_and_out_of_the_corpus_by_rank(
    client_for, traced, annotator
):
    record, run = traced
    html = (
        client_for(annotator).get(reverse("answers:item", args=[record.public_id])).content.decode()
    )
    retrieved = section(html, "item-retrieved")
    ranked = [doc_id for doc_id, _ in run.reranked]
    outside = next(doc_id for doc_id in ranked if doc_id != "AC-2")
    # both, in the reranker's order
    assert [int(rank) for rank in re.findall(r'data-rank="(\d+)"', retrieved)] == [1, 2]
    assert "AC-2@v1" in retrieved and "Access control" in retrieved
    assert CORPUS[outside] in retrieved and outside in retrieved
    assert retrieved.count("not in the corpus") == 1
    # the annotator sees ranks, not the retriever's scores, and nothing names the system
    assert "score" not in retrieved
    assert not [repr(score) for _, score in run.reranked if repr(score) in html]
    assert not [secret for secret in SECRETS if secret in html]


def test_the_label_claim_api_hands_the_annotator_both_kinds_without_scores(
    client_for, traced, annotator
):
    record, run = traced
    response = client_for(annotator).post(reverse("api:label_claim"))  # their open claim
    assert response.status_code == 200, response.content
    item = response.json()["item"]
    assert item["record"] == record.public_id
    retrieved = {p["passage_ref"]: p for p in item["retrieved"]}
    outside = next(doc_id for doc_id, _ in run.reranked if doc_id != "AC-2")
    assert retrieved["AC-2"]["in_corpus"] and retrieved["AC-2"]["block_id"] == "AC-2"
    assert retrieved[outside] == {
        "rank": [d for d, _ in run.reranked].index(outside) + 1,
        "passage_ref": outside,
        "in_corpus": False,
        "document_id": None,
        "block_id": None,
        "version": None,
        "newest_version": None,
        "text": CORPUS[outside],
        "score": None,
    }
    assert retrieved["AC-2"]["score"] is None
    assert not [secret for secret in SECRETS if secret in response.content.decode()]


def test_admins_see_the_retrievers_scores_on_the_adjudication_page_leads_do_not(
    client_for, traced, lead, admin_user
):
    record, run = traced
    AnswerRecord.objects.filter(pk=record.pk).update(status=RecordStatus.NEEDS_ADJUDICATION)
    scores = dict(run.reranked)
    stored = {p.passage_ref: p.score for p in RetrievedPassage.objects.filter(record=record)}
    stored |= {p.passage_ref: p.score for p in UnmatchedPassage.objects.filter(record=record)}
    assert stored == scores  # both kinds keep the score the trace sent
    url = reverse("answers:adjudicate", args=[record.public_id])
    as_admin = section(client_for(admin_user).get(url).content.decode(), "item-retrieved")
    as_lead = section(client_for(lead).get(url).content.decode(), "item-retrieved")
    for doc_id, score in scores.items():
        assert f"score {score}" in as_admin
        assert doc_id in as_lead
    assert "score" not in as_lead and "not in the corpus" in as_lead


def test_the_answer_handed_to_scoring_carries_scores_and_unmatched_passages(traced):
    """The seed 004 A.5 answer built from a record (evaluator scoring, release reports and PCS
    calibrations read it): matched passages with their score, the others beside them."""
    record, run = traced
    AnswerRecord.objects.filter(pk=record.pk).update(
        tier=Tier.GOLD, status=RecordStatus.FINAL, final_acceptability="acceptable"
    )
    [settled] = gold_tier_records(project=default_project())
    entry = answer_entry(settled)
    ranks = {doc_id: rank for rank, (doc_id, _) in enumerate(run.reranked, start=1)}
    scores = dict(run.reranked)
    outside = next(doc_id for doc_id in ranks if doc_id != "AC-2")
    assert entry["retrieved_passages"] == [
        {"passage_id": "AC-2", "rank": ranks["AC-2"], "score": scores["AC-2"]}
    ]
    assert entry["unmatched_passages"] == [
        {
            "passage_id": outside,
            "rank": ranks[outside],
            "text": CORPUS[outside],
            "score": scores[outside],
        }
    ]
