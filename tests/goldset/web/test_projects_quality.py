"""The quality area per project (issue 27): agreement figures, alerts, counters, disagreements,
guidelines, the inbox and notifications of project A never show project B's, and A's settings
change A's alerts only."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from goldset.models import (
    AgreementSnapshot,
    Domain,
    GuidelineTask,
    Label,
    LabelAssignment,
    Notification,
    NotificationKind,
    Run,
    System,
    Tier,
)
from goldset.selectors.agreement import list_agreement_alerts
from goldset.selectors.curation import counter_rows
from goldset.selectors.inbox import get_inbox
from goldset.services.agreement import collect_rows, recompute_agreement_snapshots
from goldset.services.guidelines import save_guideline
from goldset.services.notifications import notify, notify_adjudication_waiting
from tests.factories import AnswerRecordFactory, CalibrationResultFactory, QuestionFactory
from tests.goldset.answers_helpers import GOOD
from tests.goldset.project_support import default_project, other_project
from workbench.project_urls import project_url
from workbench.roles import Role

pytestmark = pytest.mark.django_db

ACCEPTABLE, UNACCEPTABLE = "acceptable", "unacceptable"


def project_domain(project, slug: str) -> Domain:
    return Domain.objects.create(project=project, slug=slug, name=slug.replace("_", " ").title())


def project_record(project, domain, run=None):
    """A GOLD answer record of ``project`` (its run, system and question in the project too)."""
    if run is None:
        system = System.objects.create(project=project, system_id=f"{domain.slug}-system")
        run = Run.objects.create(project=project, run_id=f"{domain.slug}-run", system=system)
    question = QuestionFactory(project=project, domain=domain, task_type="factual_qa")
    return AnswerRecordFactory(project=project, run=run, question=question, domain=domain)


def labeled_records(project, domain, annotators, values) -> list:
    """One record per row of ``values``, labeled by ``annotators`` with those acceptabilities."""
    records, run = [], None
    for i, row in enumerate(values):
        record = project_record(project, domain, run)
        run = record.run
        for slot, (user, value) in enumerate(zip(annotators, row, strict=True), 1):
            assignment = LabelAssignment.objects.create(
                record=record,
                annotator=user,
                slot=slot,
                shuffle_seed=i,
                shuffle_key=f"{i:05d}{slot}",
                completed_at=timezone.now(),
            )
            Label.objects.create(
                assignment=assignment,
                record=record,
                annotator=user,
                **{**GOOD, "acceptability": value},
            )
        records.append(record)
    return records


def kappa_snapshot(project, first, second, value: float) -> AgreementSnapshot:
    return AgreementSnapshot.objects.create(
        project=project,
        protocol="answer_label",
        axis="acceptability",
        metric="cohen_kappa",
        tier=Tier.GOLD,
        subject=f"{first.pk}|{second.pk}",
        value=value,
        n_items=50,
        n_annotators=2,
        data_version="v1",
    )


@pytest.fixture
def people(make_user):
    """Three annotators and a lead in the default project (A); ``lead_b`` leads project B, where
    the same three annotators label too."""
    annotators = [make_user(Role.ANNOTATOR, username=f"pq-ann{i}") for i in (1, 2, 3)]
    lead_a = make_user(Role.LEAD, username="pq-lead-a")
    lead_b = make_user(None, username="pq-lead-b")
    project_b = other_project(
        slug="b",
        members=[(lead_b, Role.LEAD), *((a, Role.ANNOTATOR) for a in annotators)],
    )
    return {
        "annotators": annotators,
        "lead_a": lead_a,
        "lead_b": lead_b,
        "a": default_project(),
        "b": project_b,
    }


# ---------------------------------------------------------------- agreement


def test_agreement_figures_of_a_project_never_include_another_projects_labels(people):
    a, b, annotators = people["a"], people["b"], people["annotators"]
    labeled_records(a, project_domain(a, "pq_claims"), annotators, [[ACCEPTABLE] * 3] * 12)
    split = [[ACCEPTABLE, UNACCEPTABLE, ACCEPTABLE], [UNACCEPTABLE, ACCEPTABLE, UNACCEPTABLE]]
    b_records = labeled_records(b, project_domain(b, "pq_b_claims"), annotators, split * 10)

    ratings, _, facts = collect_rows(project=a)
    assert set(ratings["item"].astype(str)).isdisjoint({f"a{r.pk}" for r in b_records})
    assert set(facts.loc[facts["metric"] == "volume", "value"]) == {12.0}

    recompute_agreement_snapshots(project=a)
    recompute_agreement_snapshots(project=b)
    volume = {
        p.slug: sorted(
            AgreementSnapshot.objects.filter(project=p, metric="volume").values_list(
                "value", flat=True
            )
        )
        for p in (a, b)
    }
    assert volume == {"default": [12.0] * 3, "b": [20.0] * 3}
    alpha = {
        p.slug: AgreementSnapshot.objects.get(
            project=p,
            axis="acceptability",
            metric="krippendorff_alpha",
            tier="",
            task_type="",
            domain="",
            week="",
        )
        for p in (a, b)
    }
    # A's raters always agree (α is 0/0): B's disagreements are not in A's figure.
    assert alpha["default"].value is None and alpha["default"].n_items == 12
    assert alpha["b"].value is not None and alpha["b"].n_items == 20
    # Recomputing B leaves A's figures as they were, and the other way round.
    assert AgreementSnapshot.objects.filter(project=a, domain="pq_b_claims").count() == 0
    assert AgreementSnapshot.objects.filter(project=b, domain="pq_claims").count() == 0


def test_a_lead_of_a_sees_none_of_bs_alerts_counts_disagreements_or_guidelines(people, client_for):
    a, b, annotators = people["a"], people["b"], people["annotators"]
    lead_a, lead_b = people["lead_a"], people["lead_b"]
    domain_b = project_domain(b, "pq_b_secret")
    split = [[ACCEPTABLE, UNACCEPTABLE, ACCEPTABLE]] * 4
    b_records = labeled_records(b, domain_b, annotators, split)
    kappa_snapshot(b, annotators[0], annotators[1], 0.1)
    save_guideline(
        actor=lead_b,
        domain=domain_b,
        task=GuidelineTask.ANSWER_LABELING,
        body="Rubric of project B",
    )
    mine, theirs = client_for(lead_a), client_for(lead_b)

    # alerts
    assert list_agreement_alerts(project=a) == []
    assert [x.kind for x in list_agreement_alerts(project=b)] == ["gold_kappa_low"]
    assert "Gold Cohen κ below" not in mine.get(reverse("quality:alerts")).content.decode()
    assert "Gold Cohen κ below" in theirs.get("/p/b/quality/alerts/").content.decode()
    assert mine.get("/p/b/quality/alerts/").status_code == 404
    assert mine.get("/api/v1/alerts/").json() == []
    assert "gold_kappa_low" in str(theirs.get("/api/v1/projects/b/alerts/").json())

    # counts (the maintained counters and the pages that read them)
    assert counter_rows("labels_day", "record", project=a) == {"labels_day": [], "record": []}
    b_counts = counter_rows("labels_day", "record", project=b)
    assert sum(n for _, n in b_counts["labels_day"]) == 12
    assert b_counts["record"] == [(Tier.GOLD, 4)]
    workload_a = mine.get(reverse("quality:table-download", args=["workload", "csv"]))
    assert "labels_per_day" not in workload_a.content.decode()
    workload_b = theirs.get("/p/b/quality/workload.csv").content.decode()
    assert "labels_per_day" in workload_b and ",12" in workload_b

    # disagreements
    query = {"protocol": "answer_label", "axis": "acceptability"}
    html_a = mine.get(reverse("quality:disagreements"), query).content.decode()
    html_b = theirs.get("/p/b/quality/disagreements/", query).content.decode()
    for record in b_records:
        assert record.public_id not in html_a
        assert record.public_id in html_b

    # guidelines
    assert "pq_b_secret" not in mine.get(reverse("guidelines:list")).content.decode()
    edit = reverse("guidelines:edit", args=["pq_b_secret", GuidelineTask.ANSWER_LABELING])
    assert mine.get(edit).status_code == 404
    assert "Rubric of project B" in theirs.get("/p/b" + edit).content.decode()
    assert mine.get("/p/b" + edit).status_code == 404


def test_kappa_gate_in_a_projects_settings_changes_its_alerts_only(make_user, client_for):
    first, second = make_user(Role.ANNOTATOR), make_user(Role.ANNOTATOR)
    lead = make_user(None, username="pq-two-projects-lead")
    strict = other_project(slug="strict", members=[(lead, Role.LEAD)], KAPPA_GATE=0.8)
    lenient = other_project(slug="lenient", members=[(lead, Role.LEAD)])
    for project in (strict, lenient):
        kappa_snapshot(project, first, second, 0.75)  # between the default 0.70 and 0.8

    [alert] = list_agreement_alerts(project=strict)
    assert alert.kind == "gold_kappa_low" and alert.numbers["target"] == 0.8
    assert list_agreement_alerts(project=lenient) == []
    c = client_for(lead)
    strict_page = c.get("/p/strict/quality/alerts/").content.decode()
    lenient_page = c.get("/p/lenient/quality/alerts/").content.decode()
    assert "Gold Cohen κ below 0.8" in strict_page
    assert "Gold Cohen κ below" not in lenient_page
    # the page prints the value in force in its project
    assert "Cohen κ &lt; 0.80" in strict_page and "Cohen κ &lt; 0.70" in lenient_page


# ---------------------------------------------------------------- inbox and notifications


def _home_queries(c) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert c.get("/").status_code == 200
    return len(ctx.captured_queries)


def test_an_annotator_in_two_projects_sees_both_queues_on_the_projects_home(people, client_for):
    a, b = people["a"], people["b"]
    annotator = people["annotators"][0]
    domain_a, domain_b = project_domain(a, "pq_home_a"), project_domain(b, "pq_home_b")
    for domain in (domain_a, domain_b):
        CalibrationResultFactory(annotator=annotator, domain=domain)
    record_b = project_record(b, domain_b)
    project_record(a, domain_a)
    c = client_for(annotator)

    html = c.get("/").content.decode()
    assert 'id="project-default-inbox-labels"' in html
    assert 'id="project-b-inbox-labels"' in html
    assert f'href="{project_url(a, "answers:queue")}"' in html
    assert f'href="{project_url(b, "answers:queue")}"' in html

    before = _home_queries(c)
    for _ in range(3):  # more work in B: the same queries
        project_record(b, domain_b, record_b.run)
    assert _home_queries(c) == before


def test_notifications_of_b_never_reach_as_inbox(people, client_for):
    a, b = people["a"], people["b"]
    annotator, lead_a, lead_b = people["annotators"][0], people["lead_a"], people["lead_b"]
    (pk,) = notify(
        project=b,
        recipients=[annotator],
        kind=NotificationKind.RETAKE_DECIDED,
        text="News from project B.",
        link=project_url(b, "answers:calibration"),
    )
    notify_adjudication_waiting(project=b)

    assert get_inbox(user=annotator, project=a).unread_total == 0
    assert get_inbox(user=annotator, project=b).unread_total == 1
    assert not Notification.objects.filter(recipient=lead_a).exists()  # A's lead is not B's
    assert Notification.objects.get(recipient=lead_b).link == "/p/b/answers/adjudication/"

    c = client_for(annotator)
    assert "News from project B." not in c.get(reverse("inbox:notifications")).content.decode()
    assert "News from project B." in c.get("/p/b/inbox/").content.decode()
    assert c.get(reverse("inbox:open", args=[pk])).status_code == 404
    assert c.post(reverse("inbox:mark_read", args=[pk])).status_code == 404
    assert c.get(f"/p/b/inbox/{pk}/open/").url == "/p/b/answers/calibration/"

    # The same thread key folds within a project, never across projects.
    notify_adjudication_waiting(project=a)
    notify_adjudication_waiting(project=b)
    assert Notification.objects.get(recipient=lead_b).count == 2
    assert Notification.objects.get(recipient=lead_a).count == 1
