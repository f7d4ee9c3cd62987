"""A frozen gold version (v1, six triples over six blocks) and a scoring job on it."""

import pytest

from goldset.models import ScoringJob
from goldset.services.freeze import store_frozen_version
from tests.factories import gold_row_for, make_gold_corpus


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(6)
    frozen = store_frozen_version(
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
