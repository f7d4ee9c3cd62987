"""Helpers for curation tests: build triples and drive reviews through the real services."""

from goldset.models import BlockVersion, Source, TaskType
from goldset.services.reviews import claim_next_assignment, submit_review
from goldset.services.triples import create_triple
from tests.factories import BlockVersionFactory, default_project


def block_version(**fields) -> BlockVersion:
    return BlockVersionFactory(**fields)


def write_triple(author, *, gold: bool = True, version: BlockVersion | None = None, **fields):
    """A triple routed GOLD (factual_qa) or TRIAGE (summarization, no other rule firing)."""
    version = version or block_version()
    defaults = {
        "question": "What encryption-at-rest mechanism protects customer documents?",
        "expected_answer": "AES-256 at the storage layer.",
        "task_type": TaskType.FACTUAL_QA if gold else TaskType.SUMMARIZATION,
        "source": Source.PUBLIC_RFP,
    }
    defaults.update(fields)
    return create_triple(
        project=default_project(), author=author, block_version=version, **defaults
    )


def claim(reviewer, triple):
    """Claim the next review for ``reviewer`` and check it is ``triple``'s current revision."""
    assignment = claim_next_assignment(project=default_project(), reviewer=reviewer)
    triple.refresh_from_db()
    assert assignment is not None, f"{reviewer} got nothing to review"
    assert assignment.revision_id == triple.current_revision_id
    return assignment


def review(reviewer, triple, verdict="confirm", flags=(), **fields):
    """Claim ``triple`` for ``reviewer`` and submit a verdict; returns the review."""
    assignment = claim(reviewer, triple)
    result = submit_review(
        reviewer=reviewer, revision=assignment.revision, verdict=verdict, flags=flags, **fields
    )
    triple.refresh_from_db()
    return result
