"""Plans and timings of the lead dashboards' bounded reads (issue 17) on a seeded database.

Run against a database ``bench_load.py`` seeded (it keeps ``<prefix><size>``):
    DATABASE_URL=postgres://…/gw_curation_100000 DEBUG=true PYTHONPATH=. \\
        .venv/bin/python bench/bench_dashboard_plans.py [--runs 5]

For each read it prints ``EXPLAIN (ANALYZE, BUFFERS)`` of one run and the median wall time of
``--runs`` runs (fetching every row): the "needs re-review" preview and first list page, the
same preview with the rule as it was before issue 17 (the per-row newest-version subquery, from
the equality test), and the time-on-item figures (stored rows and counters) beside the old
per-request aggregation over every timed decision.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--timed-labels",
        type=int,
        default=0,
        help="first add this many labels with an active time (cloned from one real label)",
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
    import django

    django.setup()
    # Django must be set up before models and selectors are imported.
    from django.db import connection

    from goldset.models import DecisionKind, Label, Triple
    from goldset.selectors.curation import TRIPLE_JOINS, list_needs_rereview, page_needs_rereview
    from goldset.selectors.time_on_item import get_time_on_item_summary
    from tests.goldset import time_on_item_reference as old_time
    from tests.goldset.selectors.test_needs_rereview_flag import old_needs_rereview as old_rule

    def old_needs_rereview():
        return old_rule().select_related(*TRIPLE_JOINS)

    def explain(title, queryset):
        sql, params = queryset.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        print(f"### {title}\n\n```\n{plan}\n```\n")

    def timed(title, call):
        times = []
        for _ in range(args.runs):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        print(f"- {title}: median {statistics.median(times) * 1000:.1f} ms of {args.runs} runs\n")

    if args.timed_labels:
        seed_timed_labels(args.timed_labels)
    with open("/proc/loadavg") as f:
        print(f"load average: {f.read().split()[0]}\n")
    print(
        f"triples: {Triple.objects.count()}, superseded pins: "
        f"{Triple.objects.filter(pin_superseded=True).count()}, "
        f"timed labels: {Label.objects.filter(active_ms__isnull=False).count()}\n"
    )
    explain("needs re-review preview (new)", list_needs_rereview()[:10])
    explain("needs re-review preview (old rule)", old_needs_rereview()[:10])
    timed("preview, new", lambda: list(list_needs_rereview()[:10]))
    timed("preview, old rule", lambda: list(old_needs_rereview()[:10]))
    timed(
        "re-review list first page (keyset, 25)", lambda: page_needs_rereview(cursor=None, size=25)
    )
    first = page_needs_rereview(cursor=None, size=25)
    if first.next_cursor:
        timed(
            "re-review list second page (keyset, 25)",
            lambda: page_needs_rereview(cursor=first.next_cursor, size=25),
        )
    explain(
        "time on item, old per-request aggregation (labels)",
        Label.objects.filter(active_ms__isnull=False).values("annotator_id").order_by()
        .annotate(median=old_time._PercentileCont("active_ms", percentile=0.5)),
    )  # fmt: skip
    from goldset.services.time_on_item import refresh_time_on_item_figures

    started = time.perf_counter()
    refreshed = refresh_time_on_item_figures()
    print(
        f"- worker: first refresh of {refreshed} people's figures "
        f"{(time.perf_counter() - started) * 1000:.0f} ms\n"
    )
    one = Label.objects.filter(active_ms__isnull=False).order_by("id").last()
    if one is not None:
        Label.objects.filter(pk=one.pk).update(active_ms=one.active_ms + 1)
        started = time.perf_counter()
        refreshed = refresh_time_on_item_figures()
        print(
            f"- worker: refresh after one changed label ({refreshed} row) "
            f"{(time.perf_counter() - started) * 1000:.0f} ms\n"
        )
    timed("time on item, new (stored figures + counters)", get_time_on_item_summary)
    timed("time on item, old (aggregating every decision)", old_time.get_time_on_item_summary)
    print(f"({len(DecisionKind)} kinds of decision)")


def seed_timed_labels(n: int) -> None:
    """``n`` labels with varied active times on the seeded records (one real label through the
    services, then cloned with its assignment by ``INSERT … SELECT``; the bench users take
    turns). Timed to show what the trigger-kept counters cost a bulk insert."""
    from django.contrib.auth import get_user_model

    from goldset.models import Label, LabelAssignment
    from goldset.rules.time_on_item import ItemTiming
    from goldset.services.labeling import claim_next_item, submit_label
    from tests.goldset.answers_helpers import GOOD, default_project
    from tests.goldset.bulk_support import clone_rows

    users = list(
        get_user_model()
        .objects.filter(username__startswith="bench-ann")
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    annotator = get_user_model().objects.get(pk=users[0])
    claimed = claim_next_item(project=default_project(), annotator=annotator).assignment
    label = submit_label(assignment=claimed, **GOOD, timing=ItemTiming(active_ms=5000))
    first_new = LabelAssignment.objects.order_by("-pk").values_list("pk", flat=True)[0]
    started = time.perf_counter()
    array = "ARRAY[" + ",".join(map(str, users)) + "]"
    clone_rows(
        LabelAssignment,
        template_pk=claimed.pk,
        source=(
            f"(SELECT id, ({array})[1 + id %% {len(users)}] AS who FROM goldset_answerrecord"
            " WHERE NOT is_calibration AND NOT EXISTS (SELECT 1 FROM goldset_labelassignment a"
            f" WHERE a.record_id = goldset_answerrecord.id) ORDER BY id LIMIT {n}) AS s"
        ),
        overrides={"record_id": "s.id", "annotator_id": "s.who", "slot": "1"},
    )
    clone_rows(
        Label,
        template_pk=label.pk,
        source=(
            "(SELECT id, record_id, annotator_id FROM goldset_labelassignment"
            f" WHERE id > {first_new}) AS s"
        ),
        overrides={
            "assignment_id": "s.id",
            "record_id": "s.record_id",
            "annotator_id": "s.annotator_id",
            "active_ms": "1000 + (s.id * 7919) %% 60000",
        },
    )
    print(f"seeded {n} timed labels in {time.perf_counter() - started:.1f} s\n")


if __name__ == "__main__":
    main()
