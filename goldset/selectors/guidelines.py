"""Reads of the guidelines in the task (issue 14): the version in force, the list, the history."""

from dataclasses import dataclass

from django.db.models import Max
from django.http import Http404

from goldset.models import Domain, GuidelineTask, GuidelineVersion

# Which guideline each work page shows (and each decision records).
ANSWER_LABELING = GuidelineTask.ANSWER_LABELING
TRIPLE_REVIEW = GuidelineTask.TRIPLE_REVIEW
ADJUDICATION = GuidelineTask.ADJUDICATION


def get_guideline_in_force(
    *, task: str, domain_id: int | None = None, domain_slug: str = ""
) -> GuidelineVersion | None:
    """The newest version of the (domain, task) guideline, or None (one indexed query). The
    domain by id, or by slug for blind read models that carry only the slug."""
    rows = GuidelineVersion.objects.filter(task=task)
    rows = rows.filter(domain_id=domain_id) if domain_id else rows.filter(domain__slug=domain_slug)
    return rows.order_by("-version").first()


@dataclass(frozen=True)
class GuidelineRow:
    domain: Domain
    task: str
    task_label: str
    version: int | None  # the version in force, None when none was written


def list_guidelines() -> list[GuidelineRow]:
    """Every (domain, task) pair with the version in force (two queries)."""
    latest = {
        (row["domain_id"], row["task"]): row["v"]
        for row in GuidelineVersion.objects.values("domain_id", "task").annotate(v=Max("version"))
    }
    return [
        GuidelineRow(domain, task.value, task.label, latest.get((domain.pk, task.value)))
        for domain in Domain.objects.order_by("slug")
        for task in GuidelineTask
    ]


def get_guideline_page(*, domain_slug: str, task: str) -> tuple[Domain, list[GuidelineVersion]]:
    """The domain and every version of its ``task`` guideline, newest first; 404 for an
    unknown domain or task."""
    if task not in GuidelineTask.values:
        raise Http404("No such task.")
    domain = Domain.objects.filter(slug=domain_slug).first()
    if domain is None:
        raise Http404("No such domain.")
    versions = list(
        GuidelineVersion.objects.filter(domain=domain, task=task)
        .select_related("created_by")
        .order_by("-version")
    )
    return domain, versions
