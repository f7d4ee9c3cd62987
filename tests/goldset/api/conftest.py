"""A frozen gold version (v1, six triples over six blocks) and a scoring job on it."""

import pytest

from goldset.models import ImportJob, PairAssignment, PairwisePair, ScoringJob
from goldset.services.evaluators import create_evaluator
from goldset.services.freeze import store_frozen_version
from goldset.services.version_tags import set_version_tag
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from tests.goldset.curation_support import write_triple
from tests.goldset.pairwise_support import build_runs, make_task


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
    return ScoringJob.objects.create(project_id=version.project_id,
        version=version, name="x", kind="retrieval", run_format="trec", run_filename="r",
        run_sha256="0" * 64, run_size=1,
    )  # fmt: skip


@pytest.fixture
def api_objects(admin_user, annotator, version, job):
    """One object of each kind the endpoint tables name, keyed by the names in their args."""
    document = DocumentFactory()
    block = BlockVersionFactory(block=BlockFactory(document=document)).block
    imported = ImportJob.objects.create(
        project_id=version.project_id, kind="run", dedupe_key="k", filename="f", sha256="0" * 64, size=1, created_by=admin_user,
        status="failed",
    )  # fmt: skip
    done = [
        ScoringJob.objects.create(
            project_id=version.project_id,
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
    # pairwise: a task whose first pair the (unqualified) annotator holds
    runs, _, _ = build_runs(n_systems=2, n_questions=1)
    pairwise_task = make_task(runs, actor=admin_user, name="API pairwise")
    pair = pairwise_task.pairs.get()
    PairAssignment.objects.create(pair=pair, reviewer=annotator, slot=1, left="a")
    PairwisePair.objects.filter(pk=pair.pk).update(assigned_count=1)
    return {
        "PAIRWISE_TASK": pairwise_task.pk,
        "PAIR": pair.public_id,
        "DOC": document.document_id,
        "BLOCK": block.block_id,
        "TRIPLE": write_triple(annotator).external_id,
        "IMPORT": imported.pk,
        "JOB": job.pk,
        "EVALUATOR": evaluator.pk,
        "TAG": set_version_tag(
            project=default_project(), actor=admin_user, name="ci", version=version
        ).tag.name,
        "?": {
            "api:version_diff": "?a=1&b=1",
            "api:job_compare": f"?jobs={done[0].pk}&jobs={done[1].pk}",
        },
    }
