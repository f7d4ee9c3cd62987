"""Import of pairwise judgments (issue 30): judgments made elsewhere, one JSON object per line,
into a pairwise task, validated like every import (``goldset.imports``: the whole file first,
every problem with its line and field, then all or nothing in one transaction).

A line::

    {"pair": "<pair public id>", "reviewer": "<username>", "preference": "a",
     "strength": "clearly", "rationale": "…", "left": "a"}

``preference`` is relative to the pair's records A and B (as the pairwise gold exports it);
``left`` (optional) is which record the reviewer saw on the left (default: the side the task's
seed draws for them). The same rules as a judgment on the page hold, from their one home:
the reviewer is an annotator of the project who passed its calibration pairs
(``is_pair_qualified``), judges a pair once, a pair takes at most its reviewers
(``reviewers_required``) and only while it collects judgments; strength and rationale as
``check_pair_decision``. A pair whose last judgment arrives is decided as on the page
(``decide_pair_outcome``: a split goes to adjudication)."""

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.utils import timezone

from goldset.imports.batches import run_import
from goldset.imports.fields import At, column_length
from goldset.imports.reader import as_source, iter_json_lines
from goldset.models import (
    PairAssignment,
    PairJudgment,
    PairQualification,
    PairStatus,
    PairwisePair,
    PairwiseTask,
    Preference,
    ProjectMembership,
    Side,
)
from goldset.selectors.pairwise import left_for
from goldset.services.pairwise import PairwiseRejected, _settle_pair, check_pair_decision
from workbench.roles import Role
from workbench.services.audit import record_event


@dataclass(frozen=True)
class PairwiseImportSummary:
    task: int
    judgments: int
    pairs_decided: int
    sha256: str

    def as_dict(self) -> dict:
        return {
            "task": self.task,
            "judgments": self.judgments,
            "pairs_decided": self.pairs_decided,
            "sha256": self.sha256,
        }


class PairJudgmentImporter:
    """The judgments file as a :class:`goldset.imports.batches.BatchImporter`: each batch reads
    its pairs and reviewers in one query each; across batches the (pair, reviewer) lines seen
    and the judgments each pair takes from the file are kept."""

    def __init__(self, *, task: PairwiseTask, actor):
        self.task, self.actor = task, actor

    def begin(self, *, writing: bool) -> None:
        self.writing = writing
        self.seen: dict[tuple[int, int], int] = {}
        self.taken: dict[int, int] = {}  # pair pk → judgments this file adds
        self.written = 0
        self.touched: set[int] = set()

    def records(self, source, problems, progress):
        return iter_json_lines(source, problems, what="pairwise judgment", progress=progress)

    def _lookups(self, rows):
        pair_ids = {o.get("pair") for _, o in rows if isinstance(o.get("pair"), str)}
        pairs = PairwisePair.objects.filter(task=self.task, public_id__in=pair_ids).select_related(
            "task", "question", "record_a", "record_b"
        )
        if self.writing:
            pairs = pairs.select_for_update(of=("self",))
        names = {o.get("reviewer") for _, o in rows if isinstance(o.get("reviewer"), str)}
        people = {
            u.username: u
            for u in get_user_model().objects.filter(
                username__in=names,
                pk__in=ProjectMembership.objects.filter(
                    project_id=self.task.project_id, role=Role.ANNOTATOR
                ).values("user_id"),
            )
        }
        qualified = set(
            PairQualification.objects.filter(
                project_id=self.task.project_id, passed=True, reviewer__in=people.values()
            ).values_list("reviewer_id", flat=True)
        )
        by_id = {p.public_id: p for p in pairs}
        judged = set(
            PairAssignment.objects.filter(pair__in=by_id.values()).values_list(
                "pair_id", "reviewer_id"
            )
        )
        return by_id, people, qualified, judged

    def check(self, rows, problems) -> list[tuple]:
        pairs, people, qualified, judged = self._lookups(rows)
        plan = []
        for lineno, obj in rows:
            at = At(problems, lineno)
            before = problems.total
            public_id = at.identifier(
                obj, "pair", max_length=column_length(PairwisePair, "public_id")
            )
            pair = pairs.get(public_id)
            if public_id and pair is None:
                at.add("pair", f"unknown pair {public_id!r} in task {self.task.name!r}")
            elif pair is not None and pair.status != PairStatus.JUDGING:
                at.add("pair", f"pair {public_id!r} no longer takes judgments ({pair.status})")
            username = at.identifier(obj, "reviewer", max_length=150)
            person = people.get(username)
            if username and person is None:
                at.add("reviewer", f"{username!r} is not an annotator of this project")
            elif person is not None and person.pk not in qualified:
                at.add("reviewer", f"{username!r} has not passed the pairwise calibration")
            preference = at.choice(obj, "preference", Preference.values)
            left = obj.get("left")
            if left is not None and left not in Side.values:
                at.add("left", f"got {left!r}", "a or b (the record seen on the left)")
            strength = obj.get("strength") or ""
            rationale = obj.get("rationale") or ""
            for key, value in (("strength", strength), ("rationale", rationale)):
                if not isinstance(value, str):
                    at.add(key, f"got {type(value).__name__}", "a string")
            if pair is not None and person is not None:
                key = (pair.pk, person.pk)
                if key in judged:
                    at.add("reviewer", f"{username!r} already holds or judged pair {public_id!r}")
                elif key in self.seen:
                    at.add(
                        "reviewer",
                        f"{username!r} judges pair {public_id!r} on line {self.seen[key]} already",
                    )
                else:
                    self.seen[key] = lineno
                    self.taken[pair.pk] = self.taken.get(pair.pk, 0) + 1
                    if pair.assigned_count + self.taken[pair.pk] > pair.reviewers_required:
                        at.add(
                            "pair",
                            f"pair {public_id!r} takes {pair.reviewers_required} judgments; "
                            "this file gives it more",
                        )
            if problems.total == before and pair is not None and preference:
                try:
                    strength, rationale = check_pair_decision(
                        pair=pair, preference=preference, strength=strength, rationale=rationale
                    )
                except PairwiseRejected as exc:
                    at.add(exc.field or "preference", str(exc))
            if problems.total == before:
                plan.append((pair, person, preference, strength, rationale, left))
        return plan

    def write(self, plan) -> None:
        now = timezone.now()
        for pair, person, preference, strength, rationale, left in plan:
            pair.refresh_from_db(fields=["assigned_count"])
            slot = pair.assigned_count + 1
            side = left or left_for(pair, person.pk)
            assignment = PairAssignment.objects.create(
                pair=pair, reviewer=person, slot=slot, left=side, completed_at=now
            )
            PairwisePair.objects.filter(pk=pair.pk).update(assigned_count=slot)
            PairJudgment.objects.create(
                assignment=assignment,
                pair=pair,
                reviewer=person,
                preference=preference,
                strength=strength,
                rationale=rationale,
                left=side,
            )
            self.touched.add(pair.pk)
            self.written += 1

    def finish(self, *, source) -> PairwiseImportSummary:
        decided = 0
        for pair in PairwisePair.objects.select_for_update().filter(pk__in=self.touched):
            _settle_pair(pair)
            decided += pair.status != PairStatus.JUDGING
        record_event(
            actor=self.actor,
            verb="pair_judgments_imported",
            obj=self.task,
            detail={"judgments": self.written, "sha256": source.sha256, "decided": decided},
        )
        return PairwiseImportSummary(self.task.pk, self.written, decided, source.sha256)


def import_pair_judgments(
    *, task: PairwiseTask, source, actor=None, source_name: str = "", progress=None, on_written=None
) -> PairwiseImportSummary:
    """Import judgments into ``task`` (the module's format and rules). Raises ImportRejected
    naming line and field, nothing stored, when any line breaks a rule. ``source``: bytes,
    text, a path or a stored upload."""
    source = as_source(source, name=source_name)
    importer = PairJudgmentImporter(task=task, actor=actor)
    return run_import(importer=importer, source=source, progress=progress, on_written=on_written)
