"""Issue 12 item 3: the agreement a gold version records is the agreement of every review
behind its triples before resolution (with bootstrap CIs, seed 8821) and the answer-label α —
computed by scoring.agreement, checked here against it on the same tables."""

import pytest

from goldset.models import Tier
from goldset.services.freeze import FreezeFilters, agreement_summary, freeze_gold_version
from goldset.services.resolution import revise_triple
from scoring.agreement import krippendorff_alpha, percent_agreement
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    DomainFactory,
    default_project,
)
from tests.goldset.answers_helpers import BAD, GOOD, claim_and_label, qualified_annotators
from tests.goldset.curation_support import review, write_triple
from tests.goldset.promotion_support import answer_record
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(make_user):
    return {
        "admin": make_user(Role.ADMIN, username="boss"),
        "author": make_user(Role.ANNOTATOR, username="author"),
        **{f"r{i}": make_user(Role.ANNOTATOR, username=f"rev{i}") for i in range(1, 7)},
    }


def version_in(domain_slug):
    doc = DocumentFactory(domain=DomainFactory(slug=domain_slug))
    return BlockVersionFactory(block=BlockFactory(document=doc))


@pytest.fixture
def history(team, settings):
    """Two gold supply-chain triples — one confirmed at once, one flagged, revised and then
    confirmed — and a federal triple the supply-chain freeze leaves out."""
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 300
    settings.CURATION_FRESH_REVIEWERS_ON_REVISION = False
    plain = write_triple(team["author"], version=version_in("supply_chain"))
    review(team["r1"], plain, "confirm")
    review(team["r2"], plain, "confirm")
    revised = write_triple(team["author"], version=version_in("supply_chain"), question="Q2?")
    review(team["r3"], revised, "confirm")
    review(team["r4"], revised, "flag", ["answer_not_entailed"])
    revise_triple(
        triple=revised,
        actor=team["author"],
        question="Q2, precisely?",
        block_version=revised.current_revision.expected_block_version,
        expected_answer="Precisely this.",
    )
    revised.refresh_from_db()
    review(team["r5"], revised, "confirm")
    review(team["r6"], revised, "confirm")
    other = write_triple(team["author"], version=version_in("federal_it"), question="Q3?")
    review(team["r1"], other, "flag", ["question_unrealistic"])
    review(team["r2"], other, "flag", ["question_unrealistic"])
    return plain, revised, other


def test_triple_reviews_cover_every_revision_before_resolution(team, history):
    summary = agreement_summary(FreezeFilters(domain="supply_chain"), project=default_project())
    reviews = summary["triple_reviews"]
    assert (reviews["ratings"], reviews["items"]) == (6, 3)  # 3 revisions, 2 reviews each
    assert reviews["values"] == {"confirm": 5, "flag": 1}
    table = [["confirm", "confirm"], ["confirm", "flag"], ["confirm", "confirm"]]
    expected_alpha = krippendorff_alpha(table, level="nominal", ci=True, n_resamples=300, seed=8821)
    expected_pa = percent_agreement(table, ci=True, n_resamples=300, seed=8821)
    alpha, pa = reviews["krippendorff_alpha"], reviews["percent_agreement"]
    assert alpha["value"] == pytest.approx(expected_alpha.value)
    assert alpha["ci"] == pytest.approx(list(expected_alpha.ci))
    assert pa["value"] == pytest.approx(2 / 3) == pytest.approx(expected_pa.value)
    assert pa["ci"] == pytest.approx(list(expected_pa.ci))
    assert summary["bootstrap"] == {"seed": 8821, "resamples": 300, "level": 0.95}


def test_all_confirmations_say_alpha_is_undefined_instead_of_a_number(team, settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 100
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    reviews = agreement_summary(FreezeFilters(), project=default_project())["triple_reviews"]
    assert reviews["krippendorff_alpha"]["value"] is None
    assert "0/0" in reviews["krippendorff_alpha"]["reason"]
    assert reviews["percent_agreement"]["value"] == 1.0


def test_answer_label_alpha_is_recorded_per_axis(team, settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 100
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    grounding = []
    for i, labels in enumerate([(GOOD, GOOD, BAD), (BAD, BAD, BAD), (GOOD, BAD, GOOD)]):
        record = answer_record(tier=Tier.GOLD, domain_slug=f"d{i}")
        annotators = qualified_annotators(record.question.domain, 3, prefix=f"a{i}-")
        for who, fields in zip(annotators, labels, strict=True):
            claim_and_label(who, **fields)
        grounding.append([f["grounding"] for f in labels])
    version = freeze_gold_version(
        project=default_project(), filters=FreezeFilters(), actor=team["admin"]
    )
    axes = version.manifest["agreement"]["answer_labels"]["axes"]
    assert set(axes) == {"acceptability", "grounding", "severe_safety"}
    expected = krippendorff_alpha(
        grounding,
        level="ordinal",
        categories=["ungrounded", "misgrounded", "partially_grounded", "fully_grounded"],
    )
    assert axes["grounding"]["krippendorff_alpha"]["value"] == pytest.approx(expected.value)
    assert axes["grounding"]["krippendorff_alpha"]["level"] == "ordinal"
    assert axes["acceptability"]["items"] == 3 and axes["acceptability"]["ratings"] == 9
    assert axes["acceptability"]["krippendorff_alpha"]["ci"] is not None


def test_without_answer_labels_the_axes_are_empty(team, settings):
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 100
    triple = write_triple(team["author"])
    review(team["r1"], triple, "confirm")
    review(team["r2"], triple, "confirm")
    assert (
        agreement_summary(FreezeFilters(), project=default_project())["answer_labels"]["axes"] == {}
    )
