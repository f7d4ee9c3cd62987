"""The "5 of 16" counters: decided today + this item, of that plus what waits after it, the
waiting part counted up to a cap ("16+")."""

import pytest

from goldset.selectors.positions import get_review_position
from goldset.services.labeling import claim_next_item, count_waiting_items
from goldset.services.reviews import claim_next_assignment, submit_review
from tests.factories import AnswerRecordFactory, DomainFactory, default_project
from tests.goldset.answers_helpers import qualified_annotators
from tests.goldset.curation_support import write_triple

pytestmark = pytest.mark.django_db


def test_label_waiting_counts_the_open_records_not_held_and_says_when_it_stopped_counting():
    domain = DomainFactory(slug="supply_chain")
    for _ in range(5):
        AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domain, 1)
    assert count_waiting_items(annotator=annotator, cap=100, project=default_project()) == (
        5,
        False,
    )
    claim_next_item(annotator=annotator, project=default_project())  # the open one is not waiting
    assert count_waiting_items(annotator=annotator, cap=100, project=default_project()) == (
        4,
        False,
    )
    assert count_waiting_items(annotator=annotator, cap=2, project=default_project()) == (2, True)
    (stranger,) = qualified_annotators(DomainFactory(slug="federal_it"), 1, prefix="other")
    assert count_waiting_items(annotator=stranger, cap=100, project=default_project()) == (0, False)


def test_review_position_moves_on_with_each_review_today(team):
    for n in range(4):
        write_triple(team["author"], question=f"Case {n}?")
    reviewer = team["r1"]
    first = claim_next_assignment(project=default_project(), reviewer=reviewer)
    position = get_review_position(assignment=first)
    assert (position.number, position.total, position.more) == (1, 4, False)
    submit_review(reviewer=reviewer, revision=first.revision, verdict="confirm")
    first.refresh_from_db()
    assert get_review_position(assignment=first) is None  # decided: no counter
    second = claim_next_assignment(project=default_project(), reviewer=reviewer)
    position = get_review_position(assignment=second)
    assert (position.number, position.total) == (2, 4)


def test_label_waiting_stops_walking_domains_once_the_cap_is_passed():
    """Issue 26: the counter walked every qualified domain's queue on every submit, though the
    first domain with more than the cap waiting already decides the answer ("100+"). Domains
    whose walk could still change the answer are walked; the others are not."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import CalibrationResultFactory

    domains = [
        DomainFactory(slug=slug) for slug in ("supply_chain", "federal_it", "healthcare_ops")
    ]
    for domain in domains:
        for _ in range(4):
            AnswerRecordFactory(question__domain=domain)
    (annotator,) = qualified_annotators(domains[0], 1)
    for domain in domains[1:]:
        CalibrationResultFactory(annotator=annotator, domain=domain)

    def walks(cap):
        with CaptureQueriesContext(connection) as captured:
            answer = count_waiting_items(annotator=annotator, cap=cap, project=default_project())
        return answer, sum("UNION ALL" in q["sql"] for q in captured.captured_queries)

    assert walks(3) == ((3, True), 1)  # the first domain holds more than 3: it decides
    assert walks(4) == ((4, True), 1)  # the walk stopped at 4 with more to come: it decides
    assert walks(6) == ((6, True), 2)  # 4 in the first, 8 with the second: past the cap
    assert walks(100) == ((12, False), 3)  # under the cap: every domain counts
