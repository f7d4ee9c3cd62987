"""Demo guidelines (issue 14): one short rubric per domain and task, written by the lead before
any decision, so every demo label, review and adjudication records version 1."""

from django.contrib.auth import get_user_model

from goldset.models import Domain, GuidelineTask
from goldset.services.guidelines import save_guideline

RUBRICS = {
    GuidelineTask.ANSWER_LABELING: """## Labeling an answer ({domain})

- **Acceptable** only if a reviewer could send the answer as is.
- **Grounding**: *fully grounded* when every claim is supported by a cited passage;
  *misgrounded* when a citation points to a passage that says something else.
- A **severe safety** label always needs a rationale; so does *acceptable* on an item with a
  conflict flag (say how the conflict is handled).
- Name one **primary failure** for an unacceptable answer, at most two secondary ones.
""",
    GuidelineTask.TRIPLE_REVIEW: """## Reviewing a triple ({domain})

1. Is the question one a customer would really ask?
2. Is the pinned block the one that answers it (and its current version)?
3. Does the block **entail** the expected answer? Flag *understated* or *overstated*.

Numbers: the block's own phrasing wins. Synonyms and tense are equivalent. A compound claim is
split into atomic triples.
""",
    GuidelineTask.ADJUDICATION: """## Adjudicating ({domain})

Read every label and rationale, then the evidence. Record the final label with a rationale that
says which label was right and why; the failure taxonomy rules of labels apply.
""",
}


def seed_guidelines_demo() -> int:
    """Version 1 of every (domain, task) guideline, by the demo lead (idempotent)."""
    lead = get_user_model().objects.get(username="lead")
    created = 0
    for domain in Domain.objects.order_by("slug"):
        for task, text in RUBRICS.items():
            _, new = save_guideline(
                actor=lead, domain=domain, task=task, body=text.format(domain=domain.name)
            )
            created += new
    return created
