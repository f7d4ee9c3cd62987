"""The demo's two projects (issue 27): the policy assistant has its own settings, corpus,
triples (two reviewed into a frozen version), answers (labeled by its two annotators after their
calibration, one adjudicated, one waiting for the lead), and members overlapping the default project's (the lead and ann1 in both,
padmin and pann1 only there); ``seed_demo`` prints each user's roles per project, and a second
run changes nothing."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import TestCase

from goldset.conf import tunable
from goldset.demo.policy import POLICY_SETTINGS, POLICY_SLUG
from goldset.models import (
    AnswerRecord,
    Block,
    CalibrationResult,
    Document,
    Domain,
    GoldVersion,
    Label,
    Project,
    ProjectMembership,
    ProjectSettingChange,
    Triple,
)
from goldset.models.projects import DEFAULT_PROJECT_SLUG

pytestmark = pytest.mark.django_db


def _seed(tmp_path, **options):
    out = StringIO()
    with TestCase.captureOnCommitCallbacks(execute=False):
        call_command(
            "seed_demo", credentials_file=tmp_path / "credentials.txt", stdout=out, **options
        )
    return out.getvalue()


def test_the_demo_has_two_projects_with_their_own_settings_data_and_members(tmp_path):
    output = _seed(tmp_path, password="policy-demo-pass-1")
    default = Project.objects.get(slug=DEFAULT_PROJECT_SLUG)
    policy = Project.objects.get(slug=POLICY_SLUG)

    # settings: overridden in the policy project only, with their audit trail
    assert policy.settings == POLICY_SETTINGS
    assert tunable("KAPPA_GATE", project=policy) == 0.8
    assert tunable("AUDIT_SAMPLE_RATE", project=policy) == 0.2
    assert tunable("KAPPA_GATE", project=default) == tunable("KAPPA_GATE")
    assert tunable("KAPPA_GATE", project=default) != 0.8
    assert set(
        ProjectSettingChange.objects.filter(project=policy).values_list("name", flat=True)
    ) == set(POLICY_SETTINGS)

    # its own data, all of it linked inside the project
    assert set(Domain.objects.filter(project=policy).values_list("slug", flat=True)) == {
        "hr_policy",
        "it_security",
    }
    assert Document.objects.filter(project=policy).count() == 2
    assert not Block.objects.filter(project=policy).exclude(document__project=policy).exists()
    triples = Triple.objects.filter(project=policy)
    assert triples.count() == 3
    assert not triples.exclude(domain__project=policy).exists()
    assert not triples.exclude(
        current_revision__expected_block_version__block__project=policy
    ).exists()
    assert dict(triples.values_list("external_id", "state")) == {
        "gt-00001": "gold",
        "gt-00002": "gold",
        "gt-00003": "pending_review",
    }
    (version,) = GoldVersion.objects.filter(project=policy)
    assert version.row_count == 2 and version.sealed
    records = AnswerRecord.objects.filter(project=policy)
    assert records.count() == 3 + 4  # production answers and HR policy's calibration set
    assert not records.exclude(run__project=policy).exclude(question__project=policy).exists()
    # ann1 and pann1 qualified in HR policy by its calibration, then disagreed on its answers
    assert set(
        CalibrationResult.objects.filter(domain__project=policy, passed=True).values_list(
            "annotator__username", "domain__slug"
        )
    ) == {("ann1", "hr_policy"), ("pann1", "hr_policy")}
    production = records.filter(is_calibration=False)
    assert dict(production.values_list("question__question_id", "status")) == {
        "pq-001": "adjudicated",
        "pq-002": "labeling",
        "pq-003": "needs_adjudication",
    }
    assert set(
        Label.objects.filter(record__in=production).values_list(
            "record__question__question_id", "annotator__username"
        )
    ) == {(q, u) for q in ("pq-001", "pq-003") for u in ("ann1", "pann1")}
    assert AnswerRecord.objects.filter(project=default).count() > records.count()

    # overlapping members: lead and ann1 in both, padmin and pann1 only in the policy project
    def roles(project):
        return dict(
            ProjectMembership.objects.filter(project=project).values_list("user__username", "role")
        )

    assert roles(policy) == {
        "padmin": "admin",
        "pann1": "annotator",
        "lead": "adjudication_lead",
        "ann1": "annotator",
    }
    in_default = roles(default)
    assert in_default["lead"] == "adjudication_lead" and in_default["ann1"] == "annotator"
    assert "padmin" not in in_default and "pann1" not in in_default
    assert "ann2" not in roles(policy) and "admin" not in roles(policy)
    padmin = get_user_model().objects.get(username="padmin")
    assert not padmin.is_staff and not padmin.groups.exists()

    # the printed user list: every user, their password, their roles per project
    lines = {line.split()[0]: line for line in output.splitlines() if "policy-demo-pass-1" in line}
    assert set(lines) == {
        "admin",
        "lead",
        "author",
        *(f"ann{i}" for i in range(1, 7)),
        "padmin",
        "pann1",
    }
    assert "default: Adjudication lead" in lines["lead"]
    assert f"{POLICY_SLUG}: Adjudication lead" in lines["lead"]
    assert f"{POLICY_SLUG}: Annotator" in lines["ann1"] and "default: Annotator" in lines["ann1"]
    assert f"{POLICY_SLUG}: Admin" in lines["padmin"] and "default" not in lines["padmin"]
    assert POLICY_SLUG not in lines["ann2"]
    assert all(len(line) < 100 for line in lines.values())  # `make run` stays readable


def test_a_second_run_keeps_the_policy_project_as_it_is(tmp_path):
    _seed(tmp_path, password="policy-demo-pass-1")
    policy = Project.objects.get(slug=POLICY_SLUG)
    counts = (
        Triple.objects.filter(project=policy).count(),
        AnswerRecord.objects.filter(project=policy).count(),
        ProjectMembership.objects.filter(project=policy).count(),
        GoldVersion.objects.filter(project=policy).count(),
        Label.objects.filter(record__project=policy).count(),
    )
    again = _seed(tmp_path)
    assert "policy-demo-pass-1" in again  # from the credentials file
    assert counts == (
        Triple.objects.filter(project=policy).count(),
        AnswerRecord.objects.filter(project=policy).count(),
        ProjectMembership.objects.filter(project=policy).count(),
        GoldVersion.objects.filter(project=policy).count(),
        Label.objects.filter(record__project=policy).count(),
    )
    assert get_user_model().objects.get(username="pann1").check_password("policy-demo-pass-1")
