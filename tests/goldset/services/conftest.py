"""Fixtures shared by the service tests of the agreement recompute."""

import pytest

from tests.factories import AnswerRecordFactory, DomainFactory
from tests.goldset.answers_helpers import claim_and_label, qualified_annotators


@pytest.fixture
def labeled(settings):
    """Three qualified annotators who each labeled two items (a small, quick recompute: 40
    resamples, one process, no debounce); with a transactional database the labels' commits
    have run the recompute in-process."""
    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 40
    settings.AGREEMENT_PROCESSES = 1
    settings.AGREEMENT_DEBOUNCE_SECONDS = 0
    domain = DomainFactory(slug="agreement-trio")
    annotators = qualified_annotators(domain, 3, prefix="trio")
    for _ in range(2):
        AnswerRecordFactory(question__domain=domain)
    for annotator in annotators:
        claim_and_label(annotator)
    return annotators
