"""Projects in tests of the quality area: the default project (where existing tests' data
lives) and a second project with its own members."""

from goldset.models import Project
from goldset.services.projects import grant_role
from tests.factories import default_project

__all__ = ["default_project", "other_project"]


def other_project(*, slug: str = "other", members=(), **settings) -> Project:
    """A second project (``settings``: its overrides), ``members`` as (user, role) pairs."""
    project = Project.objects.create(name=slug.title(), slug=slug, settings=settings)
    for user, role in members:
        grant_role(project=project, user=user, role=role)
    return project
