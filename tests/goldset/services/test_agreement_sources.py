"""Agreement over the real protocols' rows (the demo's reviews and labels), against the
reference libraries called directly on the same rows."""

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from django.test import TestCase

from goldset.models import AgreementSnapshot, Label, Review
from goldset.services.agreement import AXES, recompute_agreement_snapshots
from goldset.tasks import recompute_agreement_task
from tests.conftest import shared_test_data
from tests.goldset.project_support import default_project

pytestmark = pytest.mark.django_db


def seed(tmp_path):
    with TestCase.captureOnCommitCallbacks(execute=False):
        call_command("seed_demo", password="agreement-demo-1", credentials_file=tmp_path / "c.txt")


@pytest.fixture
def demo(tmp_path):
    seed(tmp_path)


# Seeded once for the class's tests (each in a savepoint, rolled back after it): they only
# compute and compare figures, and seeding costs more than that.
@pytest.fixture(scope="class")
def seeded_once(django_db_setup, django_db_blocker, tmp_path_factory):
    with shared_test_data(django_db_blocker):
        with django_db_blocker.unblock():
            seed(tmp_path_factory.mktemp("agreement-demo"))
        yield


def matrix(rows, categories):
    items = sorted({i for i, _, _ in rows})
    people = sorted({p for _, p, _ in rows})
    out = np.full((len(people), len(items)), np.nan)
    for item, person, value in rows:
        out[people.index(person), items.index(item)] = categories.index(value)
    return out


def stored(protocol, axis):
    return AgreementSnapshot.objects.get(
        project=default_project(),
        protocol=protocol,
        axis=axis,
        metric="krippendorff_alpha",
        tier="",
        task_type="",
        domain="",
        week="",
        subject="",
    )


@pytest.mark.usefixtures("seeded_once")
class TestOnTheSeededDemo:
    def test_review_verdict_alpha_equals_krippendorff_on_the_review_rows(self):
        recompute_agreement_snapshots(project=default_project())
        # the default project's rows (the demo's second project has reviews and labels too)
        reviews = Review.objects.filter(revision__triple__project=default_project())
        rows = list(reviews.values_list("revision_id", "reviewer_id", "verdict"))
        expected = krippendorff.alpha(
            reliability_data=matrix(rows, list(AXES["verdict"].categories)),
            level_of_measurement="nominal",
            value_domain=[0, 1],
        )
        assert stored("triple_review", "verdict").value == pytest.approx(expected, abs=1e-12)

    def test_label_grounding_alpha_equals_krippendorff_without_calibration_labels(self):
        recompute_agreement_snapshots(project=default_project())
        labels = Label.objects.filter(record__project=default_project())
        production = labels.filter(record__is_calibration=False, assignment__is_calibration=False)
        rows = list(production.values_list("record_id", "annotator_id", "grounding"))
        assert labels.count() > len(rows)  # the demo has calibration labels, and they are left out
        expected = krippendorff.alpha(
            reliability_data=matrix(rows, list(AXES["grounding"].categories)),
            level_of_measurement="ordinal",
            value_domain=[0, 1, 2, 3],
        )
        figure = stored("answer_label", "grounding")
        assert figure.value == pytest.approx(expected, abs=1e-12)
        assert figure.n_items == len(
            {r for r, p, _ in rows if sum(1 for x, _, _ in rows if x == r) >= 2}
        )

    def test_per_annotator_facts_are_stored(self):
        recompute_agreement_snapshots(project=default_project())
        volumes = {
            s.subject: s.value
            for s in AgreementSnapshot.objects.filter(
                project=default_project(), protocol="answer_label", metric="volume"
            )
        }
        counted = Label.objects.filter(
            record__project=default_project(),
            record__is_calibration=False,
            assignment__is_calibration=False,
        ).values_list("annotator_id", flat=True)
        assert volumes == {str(a): float(list(counted).count(a)) for a in set(counted)}
        assert AgreementSnapshot.objects.filter(
            protocol="triple_review", metric="flag_rate"
        ).exists()
        assert AgreementSnapshot.objects.filter(
            protocol="answer_label", metric="rationale_coverage"
        ).exists()

    def test_the_task_recomputes_and_a_second_run_changes_nothing(self):
        first = recompute_agreement_task.delay().get()
        ids = set(AgreementSnapshot.objects.values_list("id", flat=True))
        second = recompute_agreement_task.delay().get()
        assert (
            first == second and set(AgreementSnapshot.objects.values_list("id", flat=True)) == ids
        )


def test_a_label_schedules_one_debounced_recompute(settings, django_capture_on_commit_callbacks):
    from goldset.models import OutboxMessage
    from goldset.selectors.agreement import get_agreement_stale_since as agreement_stale_since
    from goldset.services.agreement import schedule_agreement_recompute

    assert agreement_stale_since(project=default_project()) is None
    with django_capture_on_commit_callbacks(execute=False):
        assert schedule_agreement_recompute(project_id=default_project().pk) is True
        assert (
            schedule_agreement_recompute(project_id=default_project().pk) is False
        )  # inside the debounce window
        assert (
            schedule_agreement_recompute(project_id=default_project().pk, now=True) is True
        )  # a lead's button skips it
    requests = OutboxMessage.objects.filter(kind="agreement.recompute").order_by("id")
    project = default_project().pk
    assert [m.dedupe_key for m in requests] == [f"agreement-recompute:{project}", ""]
    assert [m.payload["project_id"] for m in requests] == [project, project]
    assert agreement_stale_since(project=default_project()) == requests[0].created_at


def test_a_recompute_request_is_done_once_the_task_ran_and_the_figures_are_fresh(
    demo, django_capture_on_commit_callbacks
):
    from goldset.models import OutboxMessage
    from goldset.selectors.agreement import get_agreement_stale_since as agreement_stale_since
    from goldset.services.agreement import schedule_agreement_recompute

    with django_capture_on_commit_callbacks(execute=False):
        schedule_agreement_recompute(project_id=default_project().pk)
    assert agreement_stale_since(project=default_project()) is not None
    with django_capture_on_commit_callbacks(execute=True):
        schedule_agreement_recompute(project_id=default_project().pk, now=True)
    # The lead's recompute ran in-process (embedded mode) and covered the earlier request (the
    # demo's second project has its own request, left to its own recompute).
    assert not OutboxMessage.objects.filter(
        kind="agreement.recompute", done_at__isnull=True, payload__project_id=default_project().pk
    ).exists()
    assert agreement_stale_since(project=default_project()) is None
    assert AgreementSnapshot.objects.exists()
