"""Benchmark: a label submit in the embedded default (SQLite file, no Redis), with the agreement
recompute inside the request (``EMBEDDED_BACKGROUND_TASKS=false``, the old behaviour) and in
the background runner (the default since issue 25).

Each mode runs in its own process with the installation's settings (``workbench.settings``)
on a copy of one migrated SQLite file: ``--records`` answer records are labelled by three
annotators (one transaction, one recompute), then a fourth annotator submits ``--submits``
labels through the label page (Django's test client: claim, then POST each item, each answer
being the next item). Recomputes are due at once (``AGREEMENT_DEBOUNCE_SECONDS=0``: every submit
asks for one, the worst case). Per mode: each submit's wall time (median, p90, max), the time
until the background runner is idle after the last submit, and the 1-minute load average
before the mode.

Run:  /work/main/.venv/bin/python bench/bench_embedded_submit.py [--records 300] [--submits 20]
Prints one JSON object per mode and a summary; figures go to BENCHMARKS.md.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def environment(var_dir: Path, *, background: bool) -> dict:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        SECRET_KEY="bench-embedded-secret-key",
        WORKBENCH_VAR_DIR=str(var_dir),
        DJANGO_SETTINGS_MODULE="workbench.settings",
        ALLOWED_HOSTS="testserver",
        SECURE_SSL_REDIRECT="false",
        AGREEMENT_DEBOUNCE_SECONDS="0",
        EMBEDDED_BACKGROUND_TASKS="true" if background else "false",
        LOG_LEVEL="WARNING",
        PYTHONPATH=str(ROOT),
    )
    return env


def child(records: int, submits: int) -> dict:
    """One mode, in this process (the parent set the environment)."""
    import django

    django.setup()
    from django.conf import settings
    from django.db import transaction
    from django.test import Client
    from django.urls import reverse

    from goldset.services.labeling import claim_next_item, submit_label
    from tests.factories import (
        AnswerRecordFactory,
        CalibrationResultFactory,
        DomainFactory,
        QuestionFactory,
        UserFactory,
    )
    from tests.goldset.answers_helpers import BAD, GOOD
    from workbench.embedded import runner
    from workbench.roles import Role

    domain = DomainFactory(slug="supply_chain")

    def qualified(name):
        user = UserFactory(username=name, role=Role.ANNOTATOR)
        CalibrationResultFactory(annotator=user, domain=domain)
        return user

    started = time.perf_counter()
    with transaction.atomic():  # one recompute request for the whole seed, at commit
        for _ in range(records + submits):
            AnswerRecordFactory(question=QuestionFactory(domain=domain))
        for i, name in enumerate(("s1", "s2", "s3")):
            user = qualified(name)
            for n in range(records):
                result = claim_next_item(project=domain.project, annotator=user)
                noisy = (n + i) % 7 == 0
                submit_label(assignment=result.assignment, **(BAD if noisy else GOOD))
    seed_seconds = time.perf_counter() - started

    client = Client()
    client.force_login(qualified("measured"))
    data = {k: v for k, v in {**GOOD, "severe_safety": "no"}.items() if v not in ("", [], None)}
    load_before = os.getloadavg()[0]
    response = client.post(reverse("answers:claim"))
    times = []
    for _ in range(submits):
        location = response["Location"]
        if "/answers/items/" not in location:
            break
        t0 = time.perf_counter()
        response = client.post(location, data)
        times.append(time.perf_counter() - t0)
        assert response.status_code == 302, response.status_code
    t0 = time.perf_counter()
    runner().wait_idle()
    drain_seconds = time.perf_counter() - t0
    times.sort()
    return {
        "background": bool(settings.EMBEDDED_BACKGROUND_TASKS),
        "records": records,
        "seed_seconds": round(seed_seconds, 1),
        "submits": len(times),
        "submit_median_ms": round(1000 * statistics.median(times), 1),
        "submit_p90_ms": round(1000 * times[int(0.9 * (len(times) - 1))], 1),
        "submit_max_ms": round(1000 * times[-1], 1),
        "runner_drain_after_last_submit_s": round(drain_seconds, 2),
        "load_1min_before": round(load_before, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--submits", type=int, default=20)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sys.stdout.write("RESULT " + json.dumps(child(args.records, args.submits)) + "\n")
        return
    with tempfile.TemporaryDirectory(prefix="bench-embedded-") as tmp:
        template = Path(tmp) / "template"
        template.mkdir()
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0"],
            cwd=ROOT,
            env=environment(template, background=False),
            check=True,
        )
        results = []
        for background in (False, True):
            var_dir = Path(tmp) / ("background" if background else "in-request")
            var_dir.mkdir()
            shutil.copy(template / "db.sqlite3", var_dir / "db.sqlite3")
            done = subprocess.run(
                [sys.executable, __file__, "--child", "--records", str(args.records),
                 "--submits", str(args.submits)],
                cwd=ROOT, env=environment(var_dir, background=background),
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            [line] = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
            results.append(json.loads(line.removeprefix("RESULT ")))
            print(json.dumps(results[-1]))
        before, after = results
        print(
            json.dumps(
                {
                    "submit_median_ratio": round(
                        before["submit_median_ms"] / after["submit_median_ms"], 1
                    )
                }
            )
        )


if __name__ == "__main__":
    main()
