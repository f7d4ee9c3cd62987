"""Where an item stands in its person's queue today, the "5 of 16" of the label, review and
adjudication pages: the decisions the person made since local midnight plus this one, of that
plus what waits after it. What waits is counted up to a cap (the page then says "16+"), so the
counter costs a few indexed reads whatever the size of the pools."""

from dataclasses import dataclass
from datetime import datetime, time

from django.db.models import Count, Q
from django.utils import timezone

from goldset.models import Adjudication, AnswerRecord, LabelAssignment, ReviewAssignment
from goldset.rules.labeling import OPEN_FOR_LEAD
from goldset.selectors.curation import count_claimable_revisions, open_assignments

WAITING_CAP = 100


@dataclass(frozen=True)
class QueuePosition:
    number: int  # this item's place: decided today + 1
    total: int  # number + what waits after this item
    more: bool  # more wait than were counted: total is a lower bound
    what: str  # what is counted, as the page says it

    @classmethod
    def of(cls, *, done: int, waiting: int, more: bool, what: str) -> "QueuePosition":
        return cls(number=done + 1, total=done + 1 + waiting, more=more, what=what)


def start_of_today() -> datetime:
    return timezone.make_aware(datetime.combine(timezone.localdate(), time.min))


def count_labels_today(*, project, annotator) -> int:
    """Production items of ``project`` the annotator finished since local midnight."""
    return LabelAssignment.objects.filter(
        annotator=annotator,
        is_calibration=False,
        completed_at__gte=start_of_today(),
        record__project=project,
    ).count()


def get_calibration_position(*, assignment) -> QueuePosition | None:
    """A calibration item's place in its set: items finished of the set the annotator took."""
    if assignment.completed_at is not None:
        return None
    taken = LabelAssignment.objects.filter(
        annotator_id=assignment.annotator_id,
        is_calibration=True,
        record__question__domain_id=assignment.record.question.domain_id,
    )
    done = taken.filter(completed_at__isnull=False).count()
    return QueuePosition.of(
        done=done, waiting=taken.count() - done - 1, more=False, what="calibration items"
    )


def get_review_position(*, assignment) -> QueuePosition | None:
    """An open review's place: the reviewer's reviews finished today, this one, then their other
    open claims and the revisions they could still claim (counted up to the waiting cap)."""
    if assignment.completed_at is not None:
        return None
    reviewer, project = assignment.reviewer, assignment.revision.triple.project
    held = (
        open_assignments(project=project, reviewer=reviewer).exclude(pk=assignment.pk).values("pk")
    )
    today = start_of_today()
    # Only today's and the open claims are read (two ranges of the (reviewer, completed_at)
    # index), never the reviewer's whole history.
    recent = Q(completed_at__gte=today) | Q(completed_at__isnull=True)
    counts = ReviewAssignment.objects.filter(recent, reviewer=reviewer).aggregate(
        done=Count("pk", filter=Q(completed_at__gte=today)),
        held=Count("pk", filter=Q(pk__in=held)),
    )
    done, held = counts["done"], counts["held"]
    claimable, more = count_claimable_revisions(project=project, reviewer=reviewer, cap=WAITING_CAP)
    return QueuePosition.of(done=done, waiting=held + claimable, more=more, what="reviews today")


def get_adjudication_position(*, project, lead, record) -> QueuePosition | None:
    """An open item's place for the lead in ``project``: their adjudications there today, this
    one, then the other open items of the project's adjudication queue (counted up to the
    waiting cap)."""
    if record.status not in OPEN_FOR_LEAD:
        return None
    done = Adjudication.objects.filter(
        lead=lead, created_at__gte=start_of_today(), record__project=project
    ).count()
    others = list(
        AnswerRecord.objects.filter(project=project, status__in=OPEN_FOR_LEAD, is_calibration=False)
        .exclude(pk=record.pk)
        .values_list("pk", flat=True)[: WAITING_CAP + 1]
    )
    return QueuePosition.of(
        done=done,
        waiting=min(len(others), WAITING_CAP),
        more=len(others) > WAITING_CAP,
        what="adjudications today",
    )
