"""The seeded demo with canaries, shared by the blinding crawls of the pages
(tests/workbench/web/test_blinding_crawl.py) and of the API
(tests/goldset/api/test_api_blinding_crawl.py): both projects of the demo, with canary system,
run, model, config, prompt-hash, latency and cost values planted in each project's systems,
runs and answer records, the people who crawl each project, and how a body is searched for
canaries and names."""

import re
from contextlib import contextmanager
from decimal import Decimal

from django.core.management import call_command
from django.test import TestCase

from goldset.demo.policy import POLICY_SLUG
from goldset.models import AnswerRecord, Project, Run, System
from goldset.models.projects import DEFAULT_PROJECT_SLUG
from goldset.rules.blinding import SYSTEM_FIELDS
from tests.conftest import shared_test_data

CANARY_LATENCY = 987_654_3
CANARY_COST = Decimal("0.918273")
# Each project of the demo with the annotators who crawl it, its lead and an admin (the
# control), and every annotator whose name may not appear ("author" is left out of the names
# searched for: a common word of the pages, as in the crawl before projects).
PROJECTS = {
    DEFAULT_PROJECT_SLUG: {"annotators": ("ann1", "author"), "lead": "lead", "admin": "admin"},
    POLICY_SLUG: {"annotators": ("ann1", "pann1"), "lead": "lead", "admin": "padmin"},
}
ANNOTATOR_NAMES = [*(f"ann{n}" for n in range(1, 7)), "pann1"]


@contextmanager
def canary_demo_data(django_db_blocker, tmp_path, *, add=None):
    """For a module-scoped fixture: the demo seeded with canaries once, for the module's tests
    (each runs in a savepoint, rolled back after it: the seeding costs more than a crawl, and the
    tests only read). ``add(project)``, when given, adds data to each project of the demo before
    the canaries are planted (so what it creates carries them too). Yields the canaries, the
    strings no annotator or lead may reach."""
    with shared_test_data(django_db_blocker):
        with django_db_blocker.unblock():
            canaries = plant_canaries(tmp_path, add=add)
        yield canaries


def plant_canaries(tmp_path, *, add=None) -> set[str]:
    """Seed the demo (and ``add`` to each project), then plant canaries in every system field of
    each project's systems, runs and answer records (the list in goldset.rules.blinding); return
    them."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        call_command("seed_demo", password="crawl-demo-pass-1", credentials_file=tmp_path / "c.txt")
        if add is not None:
            for slug in PROJECTS:
                add(Project.objects.get(slug=slug))
    original = set(System.objects.values_list("system_id", flat=True)) | set(
        Run.objects.values_list("run_id", flat=True)
    )
    for slug in PROJECTS:
        project = Project.objects.get(slug=slug)
        # each project's own systems, runs and answer records carry the canaries
        systems = System.objects.filter(project=project)
        runs = Run.objects.filter(project=project)
        records = AnswerRecord.objects.filter(project=project)
        assert systems.exists() and runs.exists() and records.exists(), slug
        for system in systems:
            system.system_id = f"CANARYSYS{system.pk}Q"
            system.config = {"retriever": "CANARYCONFIG", "k": 7}
            system.save(update_fields=["system_id", "config"])
        for run in runs:
            run.run_id = f"CANARYRUN{run.pk}Q"
            run.save(update_fields=["run_id"])
        records.update(
            model={"generator": "CANARYMODEL-gen", "temperature": 0},
            extra={"prompt_hash": "CANARYHASH0f0f"},
            latency_ms=CANARY_LATENCY,
            cost_usd=CANARY_COST,
        )
    assert not System.objects.exclude(system_id__startswith="CANARYSYS").exists()
    # every system field of these models (the list in goldset.rules.blinding) carries a canary
    planted = {
        System: {"system_id", "config"},
        Run: {"run_id"},
        AnswerRecord: {"model", "extra", "latency_ms", "cost_usd"},
    }
    for model, fields in planted.items():
        declared = {
            f.name
            for f in model._meta.concrete_fields
            if f.name in SYSTEM_FIELDS and not f.is_relation
        }
        assert declared == fields, model
    canaries = {"CANARYSYS", "CANARYRUN", "CANARYCONFIG", "CANARYMODEL", "CANARYHASH"}
    canaries |= {str(CANARY_LATENCY), str(CANARY_COST)}
    # identifiers frozen into the demo's gold versions before the canaries were planted
    canaries |= {name for name in original if len(name) >= 6}
    return canaries


def hits(text: str, needles) -> list[str]:
    """The canaries in ``text``; a numeric canary counts only as a whole number, never as digits
    inside another (a figure such as 0.509876543 of an agreement CI is not the planted latency)."""
    return sorted(n for n in needles if re.search(whole(n), text))


def whole(needle: str) -> str:
    pattern = re.escape(needle)
    return rf"(?<![\d.]){pattern}(?![\d])" if needle[:1].isdigit() else pattern


def names(usernames) -> re.Pattern:
    """Any of ``usernames`` as a whole word."""
    return re.compile(r"\b(" + "|".join(re.escape(u) for u in usernames) + r")\b")
