"""Reads of the guidelines in the task (issue 14): the version in force, the list, the history.
Guidelines belong to a domain, domains to a project: every read is one project's."""

from dataclasses import dataclass

from django.db.models import Max
from django.http import Http404

from goldset.models import Domain, GuidelineTask, GuidelineVersion

# Which guideline each work page shows (and each decision records).
ANSWER_LABELING = GuidelineTask.ANSWER_LABELING
TRIPLE_REVIEW = GuidelineTask.TRIPLE_REVIEW
ADJUDICATION = GuidelineTask.ADJUDICATION


def get_guideline_in_force(
    *, task: str, domain_id: int | None = None, domain_slug: str = "", project=None
) -> GuidelineVersion | None:
    """The newest version of the (domain, task) guideline, or None (one indexed query). The
    domain by id, or by slug (slugs are per project: ``project`` then names it) for blind read
    models that carry only the slug."""
    rows = GuidelineVersion.objects.filter(task=task)
    if domain_id:
        rows = rows.filter(domain_id=domain_id)
    elif project is not None:
        rows = rows.filter(domain__project=project, domain__slug=domain_slug)
    else:
        return None
    return rows.order_by("-version").first()


@dataclass(frozen=True)
class GuidelineRow:
    domain: Domain
    task: str
    task_label: str
    version: int | None  # the version in force, None when none was written


def list_guidelines(*, project) -> list[GuidelineRow]:
    """Every (domain, task) pair of the project with the version in force (two queries)."""
    latest = {
        (row["domain_id"], row["task"]): row["v"]
        for row in GuidelineVersion.objects.filter(domain__project=project)
        .values("domain_id", "task")
        .annotate(v=Max("version"))
    }
    return [
        GuidelineRow(domain, task.value, task.label, latest.get((domain.pk, task.value)))
        for domain in Domain.objects.filter(project=project).order_by("slug")
        for task in GuidelineTask
    ]


def get_guideline_page(
    *, project, domain_slug: str, task: str
) -> tuple[Domain, list[GuidelineVersion]]:
    """The project's domain and every version of its ``task`` guideline, newest first; 404 for
    an unknown task or a domain not in the project."""
    if task not in GuidelineTask.values:
        raise Http404("No such task.")
    domain = Domain.objects.filter(project=project, slug=domain_slug).first()
    if domain is None:
        raise Http404("No such domain.")
    versions = list(
        GuidelineVersion.objects.filter(domain=domain, task=task)
        .select_related("created_by")
        .order_by("-version")
    )
    return domain, versions
