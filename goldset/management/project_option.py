"""The ``--project <slug>`` option of the management commands of the answer-labeling area
(DESIGN.md §15): the project the command reads from or writes to, the default project when not
given."""

from django.core.management.base import CommandError

from goldset.models import DEFAULT_PROJECT_SLUG, Project, default_project_id


def add_project_argument(parser) -> None:
    parser.add_argument(
        "--project",
        default=DEFAULT_PROJECT_SLUG,
        help=f"The project's slug (default: {DEFAULT_PROJECT_SLUG!r}).",
    )


def project_from(slug: str | None, *, returncode: int = 2) -> Project:
    """The project named ``slug`` (the default project for None); otherwise CommandError naming
    it, exit 2 (bad input, as every command's)."""
    if not slug or slug == DEFAULT_PROJECT_SLUG:
        return Project.objects.get(pk=default_project_id())
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise CommandError(f"No project {slug!r}.", returncode=returncode)
    return project
