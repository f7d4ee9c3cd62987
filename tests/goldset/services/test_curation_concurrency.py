"""Race-free "next item" on PostgreSQL: many reviewers (and the same reviewer in several tabs)
asking at the same instant."""

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.db.models import Count

from goldset.models import ReviewAssignment, TripleRevision
from goldset.services.reviews import claim_next_assignment
from tests.factories import default_project
from tests.goldset.curation_support import write_triple
from workbench.roles import Role

REVIEWERS = 8
TABS = 3  # concurrent requests per reviewer


@pytest.mark.postgres
def test_concurrent_next_item_never_over_assigns_nor_repeats_a_revision(
    transactional_db, postgres, make_user, settings
):
    settings.CURATION_MAX_OPEN_ASSIGNMENTS = TABS
    author = make_user(Role.ANNOTATOR, username="author")
    reviewers = [make_user(Role.ANNOTATOR, username=f"rev{i}") for i in range(REVIEWERS)]
    for i in range(5):
        write_triple(author, gold=True, question=f"Gold question {i}?")
    for i in range(4):
        write_triple(author, gold=False, question=f"Triage question {i}?")
    slots = 5 * 2 + 4 * 1
    requests = [r for r in reviewers for _ in range(TABS)]
    barrier = threading.Barrier(len(requests))

    def next_item(reviewer):
        try:
            barrier.wait()
            assignment = claim_next_assignment(project=default_project(), reviewer=reviewer)
            return reviewer.pk, assignment.revision_id if assignment else None
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        results = list(pool.map(next_item, requests))

    assert len(results) == len(requests) >= 20
    per_revision = TripleRevision.objects.annotate(n=Count("assignments"))
    for revision in per_revision:
        assert revision.n <= revision.reviewers_needed
        assert revision.assigned_count == revision.n
    pairs = list(ReviewAssignment.objects.values_list("revision_id", "reviewer_id"))
    assert not [p for p, n in Counter(pairs).items() if n > 1]
    assert len(pairs) == slots  # every slot filled, none twice
    assert max(Counter(r for _, r in pairs).values()) <= TABS
    assert set(pairs) >= {(rev, who) for who, rev in results if rev is not None}
    assert not ReviewAssignment.objects.filter(reviewer=author).exists()
