"""Benchmark: freeze the curated gold set at realistic size (issue 26).

Usage (PostgreSQL; the database is migrated and seeded the first time, tag ``bf``):

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gs_freeze \
        python bench/bench_freeze.py [--triples 100000] [--records 63000] [--reference]

Seed (INSERT … SELECT, minutes): ``--triples`` gold triples, each confirmed by two reviewers
(two assignments and two reviews per revision), and ``--records`` answer records, each with its
own question, three labels (three annotators) and a final outcome; every tenth record
adjudicated by a lead. Then ``freeze_gold_version`` (every gold triple, superseded pins
included) runs in a fresh process — rows, every file, the adjudication export, the agreement
summary and the manifest — and is rolled back, so the next run freezes the same data. Prints
wall seconds, the process' CPU seconds and peak RSS (``ru_maxrss``), and the 1-minute load
average before the run. ``--reference`` runs the same freeze with the object-built rows and
adjudication export of before issue 26 (``tests/goldset/freeze_reference.py``) for comparison.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TAG = "bf"


def setup_django():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
    os.environ.setdefault("SECRET_KEY", "bench-secret")
    os.environ.setdefault("DB_STATEMENT_TIMEOUT_MS", "0")
    # Imported only once the settings module is chosen (above).
    import django

    django.setup()


def seed(n_triples: int, n_records: int) -> None:
    # Imported after setup_django() has configured Django, which app modules need.
    from django.core.management import call_command
    from django.db import connection, transaction

    from goldset.models import AnswerRecord, Triple
    from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
    from tests.goldset.bulk_support import analyze, grow_answer_pool, grow_revision_pool
    from tests.goldset.curation_support import review, write_triple
    from workbench.roles import Role

    call_command("migrate", verbosity=0)
    if Triple.objects.filter(external_id__startswith=f"{TAG}-").exists():
        return
    started = time.perf_counter()
    with transaction.atomic():
        author = UserFactory(role=Role.ANNOTATOR, username="bf-author")
        reviewers = [UserFactory(role=Role.ANNOTATOR, username=f"bf-rev{i}") for i in (1, 2)]
        triple = write_triple(author)
        for reviewer in reviewers:
            review(reviewer, triple)
        triple.refresh_from_db()
        assert triple.state == "gold", triple.state
        grow_revision_pool(triple, n_triples, tag=TAG)
        revisions = (
            f"SELECT current_revision_id FROM goldset_triple WHERE external_id LIKE '{TAG}-%%'"
        )
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE goldset_triple SET state = 'gold', resolution = 'consensus',"
                f" gold_at = now() WHERE external_id LIKE '{TAG}-%%'"
            )
            for slot, reviewer in enumerate(reviewers, start=1):
                cursor.execute(
                    "INSERT INTO goldset_reviewassignment (revision_id, reviewer_id, slot,"
                    " spot_check, assigned_at, completed_at) SELECT s.id, %s, %s, false, now(),"
                    f" now() FROM ({revisions}) AS s(id)",
                    [reviewer.pk, slot],
                )
                cursor.execute(
                    "INSERT INTO goldset_review (assignment_id, revision_id, reviewer_id,"
                    " verdict, question_unrealistic, wrong_source_block, answer_not_entailed,"
                    " entailment_direction, disagreement_category, comment, spot_check,"
                    " submitted_at) SELECT a.id, a.revision_id, a.reviewer_id, 'confirm', false,"
                    " false, false, '', '', '', false, a.completed_at FROM"
                    " goldset_reviewassignment a WHERE a.reviewer_id = %s AND a.revision_id IN"
                    f" ({revisions})",
                    [reviewer.pk],
                )
            cursor.execute(
                f"UPDATE goldset_triplerevision SET assigned_count = 2 WHERE id IN ({revisions})"
            )

        domain = DomainFactory(slug="bf-domain")
        annotators = [UserFactory(role=Role.ANNOTATOR, username=f"bf-ann{i}") for i in (1, 2, 3)]
        lead = UserFactory(role=Role.LEAD, username="bf-lead")
        template = AnswerRecordFactory(question__domain=domain)
        grow_answer_pool(template, n_records, tag=TAG)
        records = (
            "SELECT r.id FROM goldset_answerrecord r JOIN goldset_question q"
            f" ON q.id = r.question_id WHERE q.question_id LIKE '{TAG}-%%'"
        )
        with connection.cursor() as cursor:
            for slot, annotator in enumerate(annotators, start=1):
                cursor.execute(
                    "INSERT INTO goldset_labelassignment (record_id, annotator_id, slot,"
                    " is_calibration, shuffle_seed, shuffle_key, claimed_at, completed_at)"
                    " SELECT s.id, %s, %s, false, 6601, substr(md5(s.id || ':' || %s), 1, 16),"
                    f" now(), now() FROM ({records}) AS s",
                    [annotator.pk, slot, slot],
                )
                cursor.execute(
                    "INSERT INTO goldset_label (acceptability, grounding, severe_safety,"
                    " primary_failure, secondary_failures, rationale, created_at, assignment_id,"
                    " record_id, annotator_id, evidence_sufficiency, citation_correctness,"
                    " conflict_handling, safety_boundary, server_ms, active_ms)"
                    " SELECT CASE WHEN a.record_id %% 7 = %s THEN 'unacceptable' ELSE"
                    " 'acceptable' END, 'fully_grounded', false, '', '[]'::jsonb,"
                    " 'Cited clause matches.', a.completed_at, a.id, a.record_id, a.annotator_id,"
                    " 'sufficient', 'correct', 'not_applicable', 'respected', 9000, 8000"
                    " FROM goldset_labelassignment a WHERE a.annotator_id = %s"
                    f" AND a.record_id IN ({records})",
                    [slot, annotator.pk],
                )
            cursor.execute(
                "UPDATE goldset_answerrecord SET assigned_count = 3, status = 'final',"
                " final_source = 'majority', final_acceptability = 'acceptable',"
                f" final_grounding = 'fully_grounded', finalized_at = now() WHERE id IN ({records})"
            )
            cursor.execute(
                "INSERT INTO goldset_adjudication (acceptability, grounding, severe_safety,"
                " primary_failure, secondary_failures, rationale, created_at, record_id, lead_id,"
                " reason, changed_outcome) SELECT 'unacceptable', 'partially_grounded', false,"
                " 'citation_coverage_gap', '[]'::jsonb, 'The cited clause misses the exception.',"
                f" now(), s.id, %s, 'no_majority', true FROM ({records}) AS s WHERE s.id %% 10 = 0",
                [lead.pk],
            )
            cursor.execute(
                "UPDATE goldset_answerrecord SET status = 'adjudicated', final_source ="
                " 'adjudication' WHERE id IN (SELECT record_id FROM goldset_adjudication)"
            )
    from goldset.models import Label, LabelAssignment, Review, ReviewAssignment, TripleRevision

    analyze(Triple, TripleRevision, ReviewAssignment, Review, AnswerRecord, LabelAssignment, Label)
    print(f"seeded in {time.perf_counter() - started:.1f} s", file=sys.stderr)


class Rollback(Exception):
    pass


def phase_freeze(reference: bool) -> dict:
    # Imported after setup_django() has configured Django, which app modules need.
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from goldset.models import Project, default_project_id
    from goldset.services import freeze, probe_exports
    from goldset.services.freeze import FreezeFilters, freeze_gold_version

    project = Project.objects.get(pk=default_project_id())  # the seed's rows are all here

    if reference:
        # The object-built code of before issue 26, on the same data (a benchmark's comparison,
        # not a test: tests/goldset/test_freeze_streaming.py holds the two equal).
        from tests.goldset import freeze_reference

        def selected_rows(filters, *, project):
            triples = freeze.selected_triples(filters, project=project).iterator(
                chunk_size=freeze.ROW_BATCH
            )
            return (freeze_reference.gold_row(t) for t in triples)

        freeze.selected_rows = selected_rows

        def iter_adjudication_export(*, project, **kwargs):
            return freeze_reference.iter_adjudication_export(**kwargs)  # one project here

        probe_exports.iter_adjudication_export = iter_adjudication_export

    actor = get_user_model().objects.filter(username="bf-lead").first()
    result = {}
    start = time.perf_counter()
    cpu = time.process_time()
    try:
        with transaction.atomic():
            version = freeze_gold_version(
                project=project, filters=FreezeFilters(include_superseded=True), actor=actor
            )
            result = {
                "triples": version.row_count,
                "files": {
                    f.format + ("-r" if f.redacted else ""): f"{f.size} {f.sha256[:12]}"
                    for f in version.files.all()
                },
            }
            raise Rollback
    except Rollback:
        pass
    result.update(
        wall_s=round(time.perf_counter() - start, 2),
        cpu_s=round(time.process_time() - cpu, 2),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--triples", type=int, default=100_000)
    parser.add_argument("--records", type=int, default=63_000)
    parser.add_argument("--reference", action="store_true")
    parser.add_argument("--phase", choices=["freeze", "reference"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    setup_django()
    if args.phase:
        print(json.dumps(phase_freeze(args.phase == "reference")))
        return
    seed(args.triples, args.records)
    for phase in ["freeze"] + (["reference"] if args.reference else []):
        load = os.getloadavg()[0]
        out = subprocess.run(
            [sys.executable, __file__, "--phase", phase], capture_output=True, text=True, check=True
        )
        print(json.dumps({"phase": phase, "load_1m": round(load, 2), **json.loads(out.stdout)}))


if __name__ == "__main__":
    main()
