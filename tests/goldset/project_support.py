"""Projects in tests of the quality area: the default project (where existing tests' data
lives) and a second project with its own members."""

from goldset.models import Project
from goldset.models.projects import default_project_id
from goldset.services.projects import grant_role


def default_project() -> Project:
    return Project.objects.get(pk=default_project_id())


def other_project(*, slug: str = "other", members=(), **settings) -> Project:
    """A second project (``settings``: its overrides), ``members`` as (user, role) pairs."""
    project = Project.objects.create(name=slug.title(), slug=slug, settings=settings)
    for user, role in members:
        grant_role(project=project, user=user, role=role)
    return project
