"""Plans of the promotion, runs, export, customers and calibration status pages (issue 17) on a
database ``bench_load.py --seed-only`` seeded.

    DATABASE_URL=postgres://…/gw_pages_1m DEBUG=true ALLOWED_HOSTS=testserver PYTHONPATH=. \\
        .venv/bin/python bench/bench_list_page_plans.py [--decisions]

``--decisions`` first gives every seeded record a label and every seeded triple's revision a
review (``grow_decision_pool``), adds a customer and a few skips, then stops. Without it, each
page is requested once to warm up and once measured (statements, wall ms, 1-minute load
average), and every SELECT it ran on a goldset table is shown with ``EXPLAIN (ANALYZE,
BUFFERS)``'s scan, limit and timing lines.
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PAGES = (
    ("promotion:index", "", "lead"),
    ("promotion:index", "?kind=answer_record", "lead"),
    ("answers:calibration_status", "", "lead"),
    ("answers:runs", "", "admin"),
    ("answers:export", "", "admin"),
    ("curation:customers", "", "admin"),
)
SHOWN = ("Scan", "Limit", "Index Cond", "Execution Time")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--decisions", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
    import django

    django.setup()
    # Django must be set up before models, clients and factories are imported.
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from goldset.models import AnswerRecord, ItemSkip
    from tests.factories import CustomerPermissionFactory
    from tests.goldset.bulk_support import grow_decision_pool
    from workbench.roles import Role

    User = get_user_model()
    if args.decisions:
        started = time.perf_counter()
        grow_decision_pool(
            tag="bench",
            annotator=User.objects.get(username="bench-ann0"),
            reviewer=User.objects.get(username="bench-ann1"),
        )
        CustomerPermissionFactory(customer__slug="acme", customer__name="Acme")
        skipper = User.objects.get(username="bench-ann2")
        for record in AnswerRecord.objects.order_by("pk")[:5]:
            ItemSkip.objects.create(record=record, annotator=skipper, reason="bench")
        print(f"decisions seeded in {time.perf_counter() - started:.1f} s")
        return
    admin, _ = User.objects.get_or_create(username="bench-admin")
    admin.groups.add(Group.objects.get(name=Role.ADMIN.value))
    users = {"admin": admin, "lead": User.objects.get(username="bench-lead")}
    for name, query, role in PAGES:
        url = reverse(name) + query
        client = Client()
        client.force_login(users[role])
        client.get(url)
        with CaptureQueriesContext(connection) as ctx:
            started = time.perf_counter()
            status = client.get(url).status_code
            wall = (time.perf_counter() - started) * 1000
        print(
            f"\n### {url} ({role}): status {status}, {len(ctx.captured_queries)} statements,"
            f" {wall:.1f} ms, load {os.getloadavg()[0]:.2f}"
        )
        for sql in (q["sql"] for q in ctx.captured_queries):
            if not sql.lstrip().upper().startswith("SELECT") or "goldset_" not in sql:
                continue
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
                plan = [row[0].strip() for row in cursor.fetchall()]
            print(f"-- {sql[:160]}")
            for line in plan:
                if any(word in line for word in SHOWN):
                    print(f"   {line[:160]}")


if __name__ == "__main__":
    main()
