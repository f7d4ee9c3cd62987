"""Benchmark: the agreement recompute with its database side, in a PostgreSQL database of its own.

It creates ``<prefix><items>`` (dropped first), migrates it and bulk-loads ``items`` production
answer records with three labels each from three of 30 annotators (``INSERT … SELECT
generate_series``; 5 domains, 4 task types, GOLD for 2 of 5 questions, else TRIAGE, 12 ISO weeks,
15 % label noise), then times, as the Celery task runs them:

* ``read``: the columnar ``COPY`` read of the answer-label rows (``collect_rows``);
* ``hash``: the per-protocol data version of those rows;
* ``full``: ``recompute_agreement_snapshots(full=True)`` end to end (read, hash, compute, store);
* ``label``: one label changed through the ORM and its dirty-scope mark written (as the label
  services do), then ``recompute_agreement_snapshots(full=False)`` end to end — the incremental
  refresh a label triggers.

Run (PostgreSQL as in the README; figures go to BENCHMARKS.md):
    .venv/bin/python bench/bench_agreement_db.py --items 100000 [--processes 2] [--keep]

``--keep`` reuses an already seeded database of that size. Prints one JSON line: wall and CPU
seconds per step (CPU of this process and its forked children), the 1-minute load average
before each step, the peak RSS of this process and of the largest child.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOMAINS = [
    "security_questionnaire",
    "federal_it",
    "healthcare_ops",
    "supply_chain",
    "financial_services",
]
TASK_TYPES = ["factual_qa", "rag_synthesis", "summarization", "code_generation"]
N_ANNOTATORS = 30


def database_url(base: str, name: str, *, create: bool) -> str:
    admin = base.rsplit("/", 1)[0] + "/postgres"
    if create:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    return base.rsplit("/", 1)[0] + "/" + name


def seed(items: int) -> float:
    """Records, assignments and labels in three INSERT … SELECT statements."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from goldset.models import (
        AnswerRecord,
        Domain,
        Label,
        LabelAssignment,
        Question,
        Run,
        default_project_id,
    )
    from tests.factories import AnswerRecordFactory, QuestionFactory
    from tests.goldset.bulk_support import analyze, seed_answer_records

    started = time.perf_counter()
    domains = [
        Domain.objects.get_or_create(project_id=default_project_id(), slug=s, defaults={"name": s})[
            0
        ]
        for s in DOMAINS
    ]
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"agree-ann{i}") for i in range(N_ANNOTATORS)
    )
    user_array = "ARRAY[" + ",".join(str(u.pk) for u in users) + "]"
    template = AnswerRecordFactory(question=QuestionFactory(domain=domains[0]))
    seed_answer_records(
        template,
        items,
        tag="agree",
        domain_ids=[d.pk for d in domains],
        task_types=TASK_TYPES,
        labels_required="3",
        assigned_count="3",
    )
    AnswerRecord.objects.filter(pk=template.pk).delete()
    # Raw statements without parameters below: a plain % is the modulo operator.
    # Three distinct annotators per record: a, a + step, a + 2·step (mod 30), step in 1..9.
    who = (
        f"({user_array})[1 + (r.id % {N_ANNOTATORS} + sl.slot * (1 + (r.id / {N_ANNOTATORS})"
        f" % 9)) % {N_ANNOTATORS}]"
    )
    when = "timestamptz '2026-08-24 09:00+00' + (r.id % 84) * interval '1 day'"
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {LabelAssignment._meta.db_table} (record_id, annotator_id, slot,"
            " is_calibration, shuffle_seed, shuffle_key, claimed_at, completed_at)"
            f" SELECT r.id, {who}, sl.slot + 1, false, 6601, substr(md5(r.id || ':' || sl.slot),"
            f" 1, 16), {when}, {when} FROM goldset_answerrecord r,"
            " generate_series(0, 2) AS sl(slot) WHERE NOT r.is_calibration ORDER BY r.id, sl.slot"
        )
        # Truth per record, 15 % of labels replaced by a random category.
        noisy = "(CASE WHEN abs(hashtext(a.id || 'n{k}')) % 100 < 15 THEN abs(hashtext(a.id || 'v{k}')) ELSE abs(hashtext(a.record_id || 't{k}')) END)"
        cursor.execute(
            f"INSERT INTO {Label._meta.db_table} (acceptability, grounding, severe_safety,"
            " primary_failure, secondary_failures, rationale, created_at, assignment_id,"
            " record_id, annotator_id, evidence_sufficiency, citation_correctness,"
            " conflict_handling, safety_boundary)"
            " SELECT (ARRAY['acceptable', 'unacceptable'])[1 + "
            + noisy.format(k="a")
            + " % 2], (ARRAY['fully_grounded', 'partially_grounded', 'misgrounded',"
            " 'ungrounded'])[1 + "
            + noisy.format(k="g")
            + " % 4], "
            + noisy.format(k="s")
            + " % 2 = 1, '', '[]'::jsonb, 'bench', a.completed_at, a.id, a.record_id,"
            " a.annotator_id, 'sufficient', 'correct', 'not_applicable', 'respected'"
            f" FROM {LabelAssignment._meta.db_table} a ORDER BY a.id"
        )
    analyze(Question, Run, AnswerRecord, LabelAssignment, Label)
    return round(time.perf_counter() - started, 1)


def cpu_seconds() -> float:
    me, children = os.times(), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.user + me.system + children.ru_utime + children.ru_stime


def timed(fn):
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), cpu_seconds()
    out = fn()
    return out, {
        "wall_s": round(time.perf_counter() - wall, 2),
        "cpu_s": round(cpu_seconds() - cpu, 2),
        "load": round(load, 2),
    }


def change_one_label() -> None:
    """What a relabel does to the agreement rows: one label's grounding changes and its scope
    is marked dirty (goldset.services.labeling writes the same mark)."""
    from goldset.models import Label
    from goldset.services.agreement import mark_dirty

    label = Label.objects.select_related("record__question").order_by("pk")[
        Label.objects.count() // 2
    ]
    label.grounding = "ungrounded" if label.grounding != "ungrounded" else "fully_grounded"
    label.save(update_fields=["grounding"])
    mark_dirty(
        project_id=label.record.project_id,
        protocol="answer_label",
        tier=label.record.tier,
        task_type=label.record.question.task_type,
        domain_id=label.record.question.domain_id,
        at=label.created_at,
        annotator_id=label.annotator_id,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--prefix", default="gw_agreefast_bench")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    url = database_url(args.database_url, f"{args.prefix}{args.items}", create=not args.keep)
    os.environ.update(
        {
            "DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "workbench.settings_test",
            "DB_STATEMENT_TIMEOUT_MS": "0",
            "AGREEMENT_BOOTSTRAP_RESAMPLES": str(args.resamples),
            "AGREEMENT_PROCESSES": str(args.processes),
        }
    )
    result = {"items": args.items, "processes": args.processes, "resamples": args.resamples}
    if not args.keep:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, check=True
        )
    import django

    django.setup()
    from django.conf import settings

    from goldset.models import AgreementSnapshot, Label, Project
    from goldset.models.projects import default_project_id
    from goldset.services import agreement

    project = Project.objects.get(pk=default_project_id())  # the seeded rows' project

    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = args.resamples
    settings.AGREEMENT_PROCESSES = args.processes
    if not args.keep:
        result["seed_s"] = seed(args.items)
    result["labels"] = Label.objects.count()
    AgreementSnapshot.objects.all().delete()
    rows, result["read"] = timed(lambda: agreement.collect_rows(project=project))
    result["rating_rows"] = len(rows[0])
    _, result["hash"] = timed(lambda: agreement._protocol_versions(*rows))
    rows = None  # not held during the recompute
    (_, result["snapshots"]), result["full"] = timed(
        lambda: agreement.recompute_agreement_snapshots(project=project, full=True)
    )
    change_one_label()
    _, result["label"] = timed(
        lambda: agreement.recompute_agreement_snapshots(project=project, full=False)
    )
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    result["peak_rss_child_mb"] = round(
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
