import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from goldset.models import JobStatus, ScoringJob
from goldset.services import exports
from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus
from tests.goldset.curation_support import review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def test_export_gold_writes_the_verified_file(admin_user, tmp_path):
    versions = make_gold_corpus(3)
    version = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"T{i}") for i, bv in enumerate(versions)],
        actor=admin_user,
    )
    out = tmp_path / "gold.jsonl"
    call_command(
        "export_gold", "--version", "1", "--format", "gold_jsonl", "-o", str(out), stderr=StringIO()
    )
    assert exports.sha256_bytes(out.read_bytes()) == version.rows_sha256
    with pytest.raises(CommandError, match="no frozen gold version v9"):
        call_command("export_gold", "--version", "9", "--format", "gold_jsonl")


def test_freeze_gold_and_score_run_commands(
    make_user, tmp_path, django_capture_on_commit_callbacks
):
    author, r1, r2 = (make_user(Role.ANNOTATOR, username=u) for u in ("author", "rv1", "rv2"))
    triple = write_triple(author)
    review(r1, triple)
    review(r2, triple)
    out = StringIO()
    call_command("freeze_gold", "--public-only", stdout=out)
    assert json.loads(out.getvalue())["triples"] == 1
    block = triple.current_revision.expected_block_version.block.block_id
    run = tmp_path / "run.trec"
    run.write_text(f"{triple.external_id} Q0 {block} 1 1.0 s\n")
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("score_run", str(run), "--version", "1", stdout=out)
    assert ScoringJob.objects.get().status == JobStatus.SUCCEEDED
    again = StringIO()
    call_command("score_run", str(run), "--version", "1", stdout=again)
    reused = json.loads(again.getvalue())
    assert reused["job"] == ScoringJob.objects.get().pk and "already uploaded" in reused["message"]
    recovered = StringIO()
    call_command("score_run", "--recover", stdout=recovered)
    summary = json.loads(recovered.getvalue())
    assert summary["scoring"] == {"requeued": [], "failed": [], "redispatched": []}
    # The reviews' agreement recompute request was still pending here: the pass published it.
    assert summary["outbox"]["published"] == 1 and summary["outbox"]["failed"] == 0
    run.write_text("nope Q0 x 1 1.0 s\n")
    with pytest.raises(CommandError, match="rejected, no job created"):
        call_command("score_run", str(run), "--version", "1")


def test_score_run_takes_measures_and_refuses_a_bad_one_with_exit_2(
    make_user, tmp_path, django_capture_on_commit_callbacks
):
    author, r1, r2 = (make_user(Role.ANNOTATOR, username=u) for u in ("author", "rv1", "rv2"))
    triple = write_triple(author)
    review(r1, triple)
    review(r2, triple)
    call_command("freeze_gold", stdout=StringIO())
    block = triple.current_revision.expected_block_version.block.block_id
    run = tmp_path / "run.trec"
    run.write_text(f"{triple.external_id} Q0 {block} 1 1.0 s\n")
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("score_run", str(run), "--version", "1", "--metrics", "map,P_5", stdout=out)
    job = ScoringJob.objects.get()
    assert job.status == JobStatus.SUCCEEDED and job.metrics == ["map", "precision@5"]
    assert json.loads(out.getvalue())["job"] == job.pk
    assert job.summary["aggregate"] == {"map": 1.0, "precision@5": 0.2}
    with pytest.raises(CommandError, match="--metrics: unknown measure 'mapp'") as refused:
        call_command("score_run", str(run), "--version", "1", "--metrics", "mapp")
    assert refused.value.returncode == 2 and ScoringJob.objects.count() == 1
