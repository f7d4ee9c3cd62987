"""Guidelines in the task (issue 14): leads and admins write the rubric of a (domain, task) pair
in Markdown; each edit is a new, immutable version (never an update in place).

The Markdown is rendered on the server with markdown-it-py (raw HTML disabled, so ``<script>`` in
a guideline is shown as text) and the result is sanitised with nh3 (allow-listed tags and
attributes, safe URL schemes, ``rel="noopener noreferrer"`` on links) before it is stored.
"""

import nh3
from django.db import transaction
from markdown_it import MarkdownIt

from goldset.exceptions import GoldsetError
from goldset.models import Domain, GuidelineTask, GuidelineVersion
from goldset.selectors.guidelines import get_guideline_in_force
from goldset.services.text_limits import check_text_length
from workbench.services.audit import record_event

_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def render_guideline(body: str) -> str:
    """Sanitised HTML of a Markdown guideline."""
    return nh3.clean(_MARKDOWN.render(body or ""))


@transaction.atomic
def save_guideline(
    *, actor, domain: Domain, task: str, body: str, note: str = ""
) -> tuple[GuidelineVersion, bool]:
    """Store ``body`` as the next version of the (domain, task) guideline.

    Locks the domain row, so concurrent edits get consecutive numbers. Returns (version, created):
    the same text as the version in force creates nothing (a double submit is one version).
    Raises GoldsetError for an unknown task, an empty or over-long text. Audited."""
    if task not in GuidelineTask.values:
        raise GoldsetError(f"Unknown task {task!r}.")
    body = (body or "").strip()
    if not body:
        raise GoldsetError("body: write the guideline (Markdown).")
    check_text_length("body", body)
    Domain.objects.select_for_update().filter(pk=domain.pk).first()
    current = get_guideline_in_force(domain_id=domain.pk, task=task)
    if current is not None and current.body == body:
        return current, False
    version = GuidelineVersion.objects.create(
        domain=domain,
        task=task,
        version=(current.version + 1) if current else 1,
        body=body,
        html=render_guideline(body),
        note=(note or "").strip()[:200],
        created_by=actor,
    )
    record_event(
        actor=actor,
        verb="guideline_saved",
        obj=version,
        detail={"domain": domain.slug, "task": task, "version": version.version},
    )
    return version, True
