"""A frozen gold version (v1, six triples over six blocks) and a scoring job on it."""

import pytest

from goldset.models import ImportJob, ScoringJob
from goldset.services.evaluators import create_evaluator
from goldset.services.freeze import store_frozen_version
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from tests.goldset.curation_support import write_triple


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(6)
    frozen = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(versions)],
        actor=admin_user,
    )
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


@pytest.fixture
def job(version):
    return ScoringJob.objects.create(
        version=version, name="x", kind="retrieval", run_format="trec", run_filename="r",
        run_sha256="0" * 64, run_size=1,
    )  # fmt: skip


@pytest.fixture
def api_objects(admin_user, annotator, version, job):
    """One object of each kind the endpoint tables name, keyed by the names in their args."""
    document = DocumentFactory()
    block = BlockVersionFactory(block=BlockFactory(document=document)).block
    imported = ImportJob.objects.create(
        kind="run", dedupe_key="k", filename="f", sha256="0" * 64, size=1, created_by=admin_user,
        status="failed",
    )  # fmt: skip
    done = [
        ScoringJob.objects.create(
            version=version,
            name=f"done{i}",
            kind="retrieval",
            run_format="trec",
            run_filename="r",
            run_sha256=f"{i}" * 64,
            run_size=1,
            status="succeeded",
        )  # fmt: skip
        for i in (1, 2)
    ]
    evaluator = create_evaluator(
        project=default_project(), name="judge", version="1", kind="llm_judge"
    )
    return {
        "DOC": document.document_id,
        "BLOCK": block.block_id,
        "TRIPLE": write_triple(annotator).external_id,
        "IMPORT": imported.pk,
        "JOB": job.pk,
        "EVALUATOR": evaluator.pk,
        "?": {
            "api:version_diff": "?a=1&b=1",
            "api:job_compare": f"?jobs={done[0].pk}&jobs={done[1].pk}",
        },
    }
