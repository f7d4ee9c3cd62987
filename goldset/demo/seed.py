"""The demo project: domains, corpus and users for every role, then each area's demo data, all
written through the real services. Deterministic content."""

import secrets
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from goldset.demo.answers import seed_answers_demo
from goldset.demo.corpus import DOMAINS, as_jsonl, builtin_manifest, nist_manifest
from goldset.demo.curation import seed_curation_demo
from goldset.demo.evaluators import seed_evaluators_demo
from goldset.demo.exports import seed_exports_demo
from goldset.demo.guidelines import seed_guidelines_demo
from goldset.demo.policy import POLICY_USERS, seed_policy_project
from goldset.demo.promotion import seed_promotion_demo
from goldset.models import Domain, Project, ProjectMembership, default_project_id
from goldset.services.corpus import import_corpus
from workbench.roles import Role
from workbench.services.accounts import create_user_with_role

DEMO_USERS: list[tuple[str, Role]] = [
    ("admin", Role.ADMIN),
    ("lead", Role.LEAD),
    ("author", Role.ANNOTATOR),
    *[(f"ann{i}", Role.ANNOTATOR) for i in range(1, 7)],
]


@dataclass
class DemoResult:
    credentials: dict[str, str]  # username -> password, only for users set in this run
    existing_users: list[str]
    corpus: list[dict]


@transaction.atomic
def seed_demo(*, password: str | None = None, nist_path: Path | None = None) -> DemoResult:
    """Create the demo. Idempotent: existing users keep their password unless one is given."""
    project = Project.objects.get(pk=default_project_id())
    for slug, name in DOMAINS.items():
        Domain.objects.get_or_create(project=project, slug=slug, defaults={"name": name})
    corpus = [
        import_corpus(
            project=project,
            source=as_jsonl(builtin_manifest()),
            actor=None,
            source_name="demo-builtin",
        ).as_dict()
    ]
    if nist_path is not None:
        corpus.append(
            import_corpus(
                project=project,
                source=as_jsonl(nist_manifest(nist_path)),
                actor=None,
                source_name="nist-800-53",
            ).as_dict()
        )

    User = get_user_model()
    existing = set(
        User.objects.filter(username__in=[u for u, _ in DEMO_USERS]).values_list(
            "username", flat=True
        )
    )
    credentials = {}
    for username, role in DEMO_USERS:
        if username in existing and password is None:
            continue
        secret = password or secrets.token_urlsafe(9)
        create_user_with_role(username=username, password=secret, role=role)
        credentials[username] = secret
    seed_guidelines_demo()
    seed_curation_demo()
    seed_answers_demo()
    seed_promotion_demo()
    seed_exports_demo()
    seed_evaluators_demo()
    # The second project last: the default project's demo (its frozen versions included) is
    # the same as before projects.
    policy_existing = set(
        User.objects.filter(username__in=[u for u, _ in POLICY_USERS]).values_list(
            "username", flat=True
        )
    )
    credentials |= seed_policy_project(
        password_for=lambda username: (
            password
            if password is not None
            else None
            if username in policy_existing
            else secrets.token_urlsafe(9)
        )
    )
    existing |= policy_existing
    return DemoResult(credentials=credentials, existing_users=sorted(existing), corpus=corpus)


def roles_by_project() -> dict[str, list[tuple[str, str]]]:
    """{username: [(project slug, role label), ...]} for every demo user, projects by name."""
    names = [u for u, _ in DEMO_USERS] + [u for u, _ in POLICY_USERS]
    roles: dict[str, list[tuple[str, str]]] = {u: [] for u in names}
    memberships = ProjectMembership.objects.filter(user__username__in=names).select_related(
        "project", "user"
    )
    for m in memberships.order_by("project__created_at", "project__slug"):
        roles[m.user.username].append((m.project.slug, Role(m.role).label))
    return roles
