"""The embedded default on a real SQLite file, run in its own process by
``tests/workbench/test_embedded_sqlite.py`` (the test settings use another database): the
installation's own settings (``workbench.settings``, no DATABASE_URL, no REDIS_URL), a migrated
file database in ``WORKBENCH_VAR_DIR``, and the web pages through Django's test client.

1. *Overlapping submits*: two annotators label the same answer records from two threads, each
   submit released at the same moment by a barrier, while the background runner recomputes
   agreement after each; every error is collected.
2. *Order*: the runner is kept busy by a task that waits on a gate; a third annotator submits
   a label; what the database says at the moment the response is back is recorded (the
   recompute request not started, the dirty marks still there); then the gate opens and the
   runner finishes.

Prints one JSON object with what it saw; the test asserts on it.
"""

import json
import os
import sys
import threading
import traceback

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from goldset.models import (  # noqa: E402
    AgreementDirtyScope,
    AgreementSnapshot,
    Label,
    OutboxMessage,
)
from goldset.rules.jobs import AGREEMENT_OUTBOX_KIND  # noqa: E402
from tests.factories import (  # noqa: E402
    AnswerRecordFactory,
    CalibrationResultFactory,
    DomainFactory,
    QuestionFactory,
    UserFactory,
)
from tests.goldset.answers_helpers import GOOD  # noqa: E402
from workbench import dispatch, request_context  # noqa: E402
from workbench.celery import app  # noqa: E402
from workbench.embedded import runner  # noqa: E402
from workbench.roles import Role  # noqa: E402

HOLD = "tests.embedded_scenario.hold"
held, gate = threading.Event(), threading.Event()


@app.task(name=HOLD)
def hold():
    held.set()
    gate.wait()


def form_data() -> dict:
    data = {**GOOD, "severe_safety": "no"}
    return {k: v for k, v in data.items() if v not in ("", [], None)}


def annotator(username, domain):
    user = UserFactory(username=username, role=Role.ANNOTATOR)
    CalibrationResultFactory(annotator=user, domain=domain)
    client = Client()
    client.force_login(user)
    return client


def label_everything(client, barrier, statuses, errors):
    """Claim, then submit label after label (each submit answers with the next item) until
    the queue is empty; every submit waits for the other thread's at the barrier."""
    try:
        response = client.post(reverse("answers:claim"))
        while response.status_code == 302 and "/answers/items/" in response["Location"]:
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                pass  # the other thread is done: go on alone
            response = client.post(response["Location"], form_data())
            statuses.append(response.status_code)
    except Exception:
        errors.append(traceback.format_exc())
    finally:
        barrier.abort()


def pragmas() -> dict:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        journal = cursor.fetchone()[0]
        cursor.execute("PRAGMA busy_timeout")
        busy_ms = cursor.fetchone()[0]
    return {"journal_mode": journal, "busy_timeout_ms": busy_ms}


def main() -> dict:
    seen = {
        "database": str(settings.DATABASES["default"]["NAME"]),
        "vendor": connection.vendor,
        "eager": bool(app.conf.task_always_eager),
        "background": bool(settings.EMBEDDED_BACKGROUND_TASKS),
        **pragmas(),
    }
    domain = DomainFactory(slug="supply_chain")
    records = [AnswerRecordFactory(question=QuestionFactory(domain=domain)) for _ in range(12)]
    alice, bob = annotator("alice", domain), annotator("bob", domain)

    # 1. two threads submitting at the same moments
    barrier = threading.Barrier(2)
    statuses, errors = [], []
    threads = [
        threading.Thread(target=label_everything, args=(c, barrier, statuses, errors))
        for c in (alice, bob)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    runner().wait_idle(hurry=True)
    seen["overlap"] = {
        "statuses": statuses,
        "errors": errors,
        "labels": Label.objects.count(),
        "records": len(records),
        "runner_completed": runner().completed,
        "open_messages": OutboxMessage.objects.filter(done_at__isnull=True).count(),
        "snapshots": AgreementSnapshot.objects.count(),
    }

    # 2. the response comes back before the recompute runs
    carol = annotator("carol", domain)
    # The runner is kept busy (as a request would queue it; a task published outside a request
    # runs in the caller, so without the runner it would wait right here: then skip it).
    with request_context.bound(request_context.RequestContext(request_id="scenario")):
        if dispatch.in_background():
            dispatch.publish(HOLD)
            held.wait()
    labels_before = Label.objects.count()
    claimed = carol.post(reverse("answers:claim"))
    submitted = carol.post(claimed["Location"], form_data())
    request = OutboxMessage.objects.filter(kind=AGREEMENT_OUTBOX_KIND).order_by("-id").first()
    at_response = {
        "status": submitted.status_code,
        "label_stored": Label.objects.count() == labels_before + 1,
        "request_exists": request is not None,
        "request_started": bool(request and request.started_at),
        "request_done": bool(request and request.done_at),
        "dirty_marks": AgreementDirtyScope.objects.count(),
        "runner_pending": runner().pending(),
    }
    gate.set()
    runner().wait_idle()
    request.refresh_from_db()
    seen["order"] = {
        "at_response": at_response,
        "after_runner": {
            "request_done": request.done_at is not None,
            "dirty_marks": AgreementDirtyScope.objects.count(),
        },
    }
    return seen


if __name__ == "__main__":
    result = main()
    sys.stdout.write("RESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()
