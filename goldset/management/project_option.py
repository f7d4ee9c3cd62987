"""``--project <slug>`` for management commands: the project a command works in (the default
project when not given), resolved once and passed to the services like a request's project."""

from django.core.management.base import CommandError

from goldset.models import DEFAULT_PROJECT_SLUG, Project


def add_project_argument(parser) -> None:
    parser.add_argument(
        "--project",
        dest="project_slug",
        default=DEFAULT_PROJECT_SLUG,
        help=f"slug of the project to work in (default: {DEFAULT_PROJECT_SLUG!r})",
    )


def project_from_options(slug: str | None, *, returncode: int = 1) -> Project:
    """The project named by ``--project`` (CommandError when there is none)."""
    slug = slug or DEFAULT_PROJECT_SLUG
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        if slug == DEFAULT_PROJECT_SLUG:
            # The default project is made on first use, as for rows created without one.
            return Project.objects.get_or_create(
                slug=DEFAULT_PROJECT_SLUG, defaults={"name": "Default project"}
            )[0]
        raise CommandError(f"no project {slug!r}", returncode=returncode)
    return project
