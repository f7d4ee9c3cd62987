"""Pairwise gold (issue 30): the project's decided pairs at freeze time, one canonical JSON line
each, as a file of every gold version frozen since (``ExportFormat.PAIRWISE_GOLD``, listed with
its sha256 in the manifest like the other files). Preferences are relative to the pair's
records A and B. The file stores systems, record ids and usernames; who downloads it gets the
fields the access table gives their role (``workbench.access.VERSION_FILE_FIELDS``: leads get
no system or record id, people as the version's pseudonyms)."""

from collections.abc import Iterator

from goldset.models import PairAdjudication, PairJudgment, PairStatus, PairwisePair
from goldset.services.exports import canonical_json

DECIDED = (PairStatus.FINAL, PairStatus.ADJUDICATED)


def pairwise_gold_rows(*, project) -> Iterator[dict]:
    """The decided pairs of ``project`` in task and draw order, with their judgments (in slot
    order) and adjudication. Three queries however many pairs."""
    pairs = list(
        PairwisePair.objects.filter(project=project, status__in=DECIDED)
        .select_related("task", "question", "record_a__run__system", "record_b__run__system")
        .order_by("task_id", "position")
    )
    judgments: dict[int, list[dict]] = {}
    for j in (
        PairJudgment.objects.filter(pair__in=pairs)
        .select_related("reviewer")
        .order_by("pair_id", "assignment__slot", "id")
    ):
        judgments.setdefault(j.pair_id, []).append(
            {
                "reviewer": j.reviewer.username,
                "preference": j.preference,
                "strength": j.strength,
                "left": j.left,
            }
        )
    adjudications = {
        a.pair_id: {
            "lead": a.lead.username,
            "preference": a.preference,
            "strength": a.strength,
            "rationale": a.rationale,
        }
        for a in PairAdjudication.objects.filter(pair__in=pairs).select_related("lead")
    }
    for pair in pairs:
        yield {
            "task": pair.task.name,
            "pair": pair.public_id,
            "question_id": pair.question.question_id,
            "record_a": pair.record_a.public_id,
            "record_b": pair.record_b.public_id,
            "system_a": pair.record_a.run.system.system_id,
            "system_b": pair.record_b.run.system.system_id,
            "status": pair.status,
            "preference": pair.final_preference,
            "source": pair.final_source,
            "judgments": judgments.get(pair.pk, []),
            "adjudication": adjudications.get(pair.pk),
        }


def render_pairwise_gold(version) -> Iterator[bytes]:
    """The version's pairwise gold file (its project's decided pairs at freeze time)."""
    for row in pairwise_gold_rows(project=version.project):
        yield (canonical_json(row) + "\n").encode("utf-8")
