"""Create a project from another's settings, guidelines and routing rules (issue 27): the
service ``create_project(copy_from=…)`` and the create page's *copy from* field copy the
source's settings, its domains (names only), the guideline in force for each domain and task and
the routing rules in force — never its data — in one transaction, audited."""

from decimal import Decimal

import pytest

from goldset.models import (
    AnswerRecord,
    Block,
    Document,
    Domain,
    GoldVersion,
    GuidelineTask,
    GuidelineVersion,
    Project,
    Question,
    RoutingRules,
    Triple,
)
from goldset.services.guidelines import save_guideline
from goldset.services.projects import create_project
from goldset.services.routing import get_active_rules, update_routing_rules
from tests.goldset.web.test_projects_core import login
from tests.goldset.web.test_projects_quality import project_record
from tests.goldset.web.test_projects_versions import corpus_in, freeze_rows
from workbench.models import AuditEvent
from workbench.project_urls import root_url
from workbench.roles import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def source(make_user):
    """Project "source": two settings of its own, two domains with guidelines (the labeling
    guideline of one in its second version), routing rules in their second version, and data —
    a corpus, a frozen version, a question with an answer record."""
    boss = make_user(Role.ADMIN, username="copy-boss")
    project = create_project(name="Source", slug="source", by=boss)
    project.settings = {"KAPPA_GATE": "0.8", "AUDIT_SAMPLE_RATE": "0.2"}
    project.save(update_fields=["settings"])
    blocks = corpus_in(project, 2, prefix="src")  # domain "src_domain", its document and blocks
    claims = Domain.objects.create(project=project, slug="claims", name="Claims")
    domain = Domain.objects.get(project=project, slug="src_domain")
    save_guideline(actor=boss, domain=domain, task=GuidelineTask.ANSWER_LABELING, body="Label v1.")
    save_guideline(
        actor=boss, domain=domain, task=GuidelineTask.ANSWER_LABELING, body="Label **v2**."
    )
    save_guideline(
        actor=boss, domain=claims, task=GuidelineTask.TRIPLE_REVIEW, body="Review claims."
    )
    get_active_rules(project=project)
    update_routing_rules(
        project=project,
        actor=boss,
        gold_task_types=["factual_qa"],
        uncertainty_threshold=Decimal("0.350"),
        adversarial_routes_gold=False,
        gold_domains=["claims"],
        note="stricter",
    )
    freeze_rows(project, blocks, boss, prefix="src")
    project_record(project, claims)
    return project, boss


def assert_policy_copied(new: Project, source: Project) -> None:
    assert new.settings == {"KAPPA_GATE": "0.8", "AUDIT_SAMPLE_RATE": "0.2"}
    assert sorted(Domain.objects.filter(project=new).values_list("slug", "name")) == [
        ("claims", "Claims"),
        ("src_domain", "src"),
    ]
    guidelines = {
        (g.domain.slug, g.task): (g.version, g.body, g.note)
        for g in GuidelineVersion.objects.filter(domain__project=new).select_related("domain")
    }
    assert guidelines == {
        ("src_domain", GuidelineTask.ANSWER_LABELING): (
            1,
            "Label **v2**.",
            "copied from source v2",
        ),
        ("claims", GuidelineTask.TRIPLE_REVIEW): (1, "Review claims.", "copied from source v1"),
    }
    (rules,) = RoutingRules.objects.filter(project=new)
    assert (rules.version, rules.note) == (1, "copied from source v2")
    assert rules.gold_task_types == ["factual_qa"] and rules.gold_domains == ["claims"]
    assert rules.uncertainty_threshold == Decimal("0.350") and not rules.adversarial_routes_gold
    # Policy only: no data of the source came along, and the source kept all of its own.
    for model in (Document, Block, Triple, Question, AnswerRecord, GoldVersion):
        assert not model.objects.filter(project=new).exists(), model.__name__
    for model in (Document, Block, Question, AnswerRecord, GoldVersion):
        assert model.objects.filter(project=source).exists(), model.__name__
    assert GuidelineVersion.objects.filter(domain__project=source).count() == 3


def assert_audited(new: Project, source: Project, actor) -> None:
    created = AuditEvent.objects.get(verb="project.create", object_id=new.slug)
    assert created.actor == actor and created.project_id == new.pk
    assert created.detail["copied_from"] == source.slug
    copied = AuditEvent.objects.get(verb="project.copy_policy", object_id=new.slug)
    assert copied.actor == actor and copied.project_id == new.pk
    counts = {"from": "source", "domains": 2, "guidelines": 2, "routing_rules": 1}
    assert {k: copied.detail[k] for k in counts} == counts


def test_the_service_copies_settings_guidelines_and_routing_rules_not_data(source):
    project, boss = source
    new = create_project(name="Copy", slug="copy", by=boss, copy_from=project)
    assert_policy_copied(new, project)
    assert_audited(new, project, boss)
    assert new.memberships.get().user == boss  # people are not copied either


def test_the_create_pages_copy_field_does_the_same(source):
    project, boss = source
    response = login(boss).post(
        root_url("projects:create"),
        {"name": "Paged copy", "slug": "paged-copy", "description": "", "copy_from": project.pk},
    )
    assert response.status_code == 302 and response["Location"] == "/p/paged-copy/"
    new = Project.objects.get(slug="paged-copy")
    assert_policy_copied(new, project)
    assert_audited(new, project, boss)


def test_without_copy_from_a_project_starts_from_the_installation_defaults(source):
    _, boss = source
    response = login(boss).post(
        root_url("projects:create"), {"name": "Fresh", "slug": "fresh", "copy_from": ""}
    )
    assert response.status_code == 302
    fresh = Project.objects.get(slug="fresh")
    assert fresh.settings == {}
    assert not Domain.objects.filter(project=fresh).exists()
    assert not RoutingRules.objects.filter(project=fresh).exists()
    assert not AuditEvent.objects.filter(verb="project.copy_policy").exists()


def test_an_unknown_source_is_refused_with_422_and_creates_nothing(source):
    project, boss = source
    response = login(boss).post(
        root_url("projects:create"),
        {"name": "Sneaky", "slug": "sneaky", "copy_from": project.pk + 1000},
    )
    assert response.status_code == 422
    assert "copy_from" in response.context["form"].errors
    assert not Project.objects.filter(slug="sneaky").exists()
