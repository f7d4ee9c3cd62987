"""Scoring jobs with measures chosen by name (issue 12 item 10): validated by the library's
parser, stored on the job, computed, part of the job's identity and of its reproducibility
command, and compared over the measures both jobs have."""

import io
import json
import shlex
import subprocess
import sys
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from goldset.exceptions import GoldsetError
from goldset.models import ImportJob, ImportKind, ImportStatus, JobStatus, ScoringJob
from goldset.rules.measures import MAX_MEASURES, BadMeasures, check_measures
from goldset.selectors.exports import compare_jobs
from goldset.services.freeze import store_frozen_version
from goldset.services.import_jobs import submit_import
from goldset.services.job_downloads import bundle_zip
from goldset.services.scoring_jobs import create_scoring_job, reproduce_command
from tests.factories import default_project, gold_row_for, make_gold_corpus

pytestmark = pytest.mark.django_db

CATALOGUE = ["map", "rprec", "bpref", "ndcg@20"]


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(12)
    rows = [gold_row_for(bv, triple_id=f"Q-{i:03d}") for i, bv in enumerate(versions)]
    frozen = store_frozen_version(rows=rows, actor=admin_user)
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


def trec_run(version, *, shift=1, depth=4, skip=()):
    """Each query retrieves ``depth`` blocks; its expected block is at rank ``1 + i % shift``
    (ties on purpose: two documents share a score)."""
    blocks, lines = version.blocks, []
    for i, block in enumerate(blocks):
        qid = f"Q-{i:03d}"
        if qid in skip:
            continue
        others = [b for b in blocks if b != block]
        ranked = others[i % 3 : i % 3 + depth - 1]
        ranked.insert(i % shift, block)
        scores = [5.0, 5.0, 3.0, 2.0, 1.0][:depth]
        lines += [f"{qid} Q0 {d} {r + 1} {scores[r]} sys" for r, d in enumerate(ranked)]
    return ("\n".join(lines) + "\n").encode()


def create(version, data, admin_user, *, filename="run.trec", **kw):
    return create_scoring_job(
        version=version, name="bm25", data=data, filename=filename, actor=admin_user, **kw
    )


def test_check_measures_gives_labels_defaults_and_names_the_bad_one():
    assert check_measures("map, P_5,precision@5 ,rbp(0.9)", k=10) == [
        "map",
        "precision@5",
        "rbp(0.9)",
    ]
    assert check_measures(None, k=7) == [
        "recall@7",
        "precision@7",
        "hit@7",
        "mrr@7",
        "mrr",
        "ndcg@7",
    ]
    with pytest.raises(BadMeasures, match="unknown measure 'mapp'"):
        check_measures("map,mapp", k=10)
    with pytest.raises(BadMeasures, match="rprec has no cut-off"):
        check_measures(["rprec@5"], k=10)
    with pytest.raises(BadMeasures, match=f"at most {MAX_MEASURES}"):
        check_measures([f"precision@{n}" for n in range(1, MAX_MEASURES + 2)], k=10)


def test_a_job_with_catalogue_measures_equals_its_reproducibility_command(
    version, admin_user, tmp_path, django_capture_on_commit_callbacks
):
    data = trec_run(version, shift=3, skip={"Q-005"})
    with django_capture_on_commit_callbacks(execute=True):
        job = create(version, data, admin_user, metrics=CATALOGUE, resamples=1000)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.metrics == CATALOGUE and job.summary["metrics"] == CATALOGUE
    # nDCG@10 is not computed, so the worst queries are ranked by the first measure chosen.
    assert job.summary["primary_metric"] == "map"
    command = reproduce_command(job)
    assert "--metrics map,rprec,bpref,ndcg@20" in command
    with zipfile.ZipFile(io.BytesIO(b"".join(bundle_zip(job)))) as bundle:
        bundle.extractall(tmp_path)
        document = json.loads(bundle.read("results.json"))
        assert "Measures: map, rprec, bpref, ndcg@20" in bundle.read("README.txt").decode()
    args = shlex.split(command)
    assert args[:3] == ["python", "-m", "scoring"]
    cli = subprocess.run(
        [sys.executable, *args[1:]], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    expected = json.loads(cli.stdout)
    assert set(expected["aggregate"]) == set(CATALOGUE)
    overall = {a["metric"]: a for a in document["aggregates"] if a["stratum"] == "all"}
    assert {m: a["value"] for m, a in overall.items()} == expected["aggregate"]
    assert {m: a["ci"] for m, a in overall.items()} == expected["ci"]
    assert {q: r["metrics"] for q, r in document["per_query"].items()} == expected["per_query"]
    assert document["metrics"] == CATALOGUE
    # The figures are not all the same number: the measures really differ per query.
    assert len({round(v, 6) for v in expected["aggregate"].values()}) > 1


def test_the_same_run_with_other_measures_is_another_job(
    version, admin_user, django_capture_on_commit_callbacks
):
    data = trec_run(version)
    with django_capture_on_commit_callbacks(execute=False):
        defaults = create(version, data, admin_user)
        catalogue = create(version, data, admin_user, metrics=CATALOGUE)
        reordered = create(version, data, admin_user, metrics="ndcg@20,bpref,Rprec,map")
        explicit_defaults = create(version, data, admin_user, metrics="ndcg@10,recall@10")
    assert defaults.metrics == ["recall@10", "precision@10", "hit@10", "mrr@10", "mrr", "ndcg@10"]
    assert catalogue.pk != defaults.pk and not catalogue.reused
    assert reordered.pk == catalogue.pk and reordered.reused
    assert explicit_defaults.pk not in (defaults.pk, catalogue.pk)
    assert ScoringJob.objects.count() == 3


def test_a_bad_measure_is_refused_before_anything_is_stored(version, admin_user):
    with pytest.raises(BadMeasures, match="unknown measure 'ndgc@10'"):
        create(version, trec_run(version), admin_user, metrics="map,ndgc@10")
    assert not ScoringJob.objects.exists()


def test_an_upload_passes_its_measures_through_the_import_job(
    version, admin_user, django_capture_on_commit_callbacks
):
    def submit(metrics):
        return submit_import(
            project=default_project(),
            kind=ImportKind.RUN,
            upload=SimpleUploadedFile("run.trec", trec_run(version)),
            actor=admin_user,
            options={"version": version.number, "name": "bm25", "k": 10, "metrics": metrics},
        )

    with django_capture_on_commit_callbacks(execute=True):
        first = submit("map,P_5")
    imported = ImportJob.objects.get(pk=first.job.pk)
    assert imported.status == ImportStatus.SUCCEEDED and imported.options["metrics"] == [
        "map",
        "precision@5",
    ]
    job = ScoringJob.objects.get(pk=imported.summary["scoring_job"])
    assert job.metrics == ["map", "precision@5"] and job.status == JobStatus.SUCCEEDED
    assert set(job.summary["aggregate"]) == {"map", "precision@5"}
    with django_capture_on_commit_callbacks(execute=True):
        second = submit("map,precision@5")  # the same measures spelled the same way
        other = submit("rprec")
    assert second.job.pk == first.job.pk and not second.created
    assert other.created and ImportJob.objects.get(pk=other.job.pk).summary["scoring_job"] != job.pk
    with pytest.raises(GoldsetError, match="unknown measure 'nope'"):
        submit("nope")
    assert ImportJob.objects.count() == 2


def test_compare_uses_the_measures_both_jobs_have_and_names_the_wilcoxon_method(
    version, admin_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        a = create(version, trec_run(version, shift=1), admin_user, metrics="map,hit@3,ndcg@20")
        b = create(
            version,
            trec_run(version, shift=3),
            admin_user,
            filename="dense.trec",
            metrics="ndcg@20,rprec,map,hit@3",
        )
    comparison = compare_jobs(jobs=[a, b])
    assert comparison.metrics == ["map", "hit@3", "ndcg@20"]
    tests = {p.metric: p for p in comparison.pairs}
    assert set(tests) == {"map", "hit@3", "ndcg@20"}
    assert tests["map"].test == "Wilcoxon signed-rank" and tests["map"].method == "exact"
    assert tests["hit@3"].test == "McNemar"
    assert tests["map"].a == a and tests["map"].b == b and tests["map"].n == 12
    assert tests["map"].mean_a > tests["map"].mean_b  # run a ranks every expected block first
    asymptotic = compare_jobs(jobs=[a, b], wilcoxon_method="asymptotic")
    assert {p.metric: p.method for p in asymptotic.pairs}["map"] == "asymptotic"
    assert asymptotic.wilcoxon_method == "asymptotic"
