"""What waits for a user (issue 14): the inbox on Home, the notification list and the badge.

Every count is bounded (``COUNT_CAP``; the page shows "100+") or read from a maintained counter,
so the inbox costs the same number of queries whatever the size of the data."""

from dataclasses import dataclass, field

from django.db.models import Count, Exists, F, OuterRef
from django.http import Http404
from django.urls import reverse

from goldset.conf import curation_setting
from goldset.models import (
    AnswerRecord,
    CalibrationResult,
    CalibrationRetake,
    ItemSkip,
    LabelAssignment,
    Notification,
    NotificationKind,
    NotificationPreference,
    RecordStatus,
    RetakeStatus,
    ReviewAssignment,
    Triple,
    TripleState,
)
from goldset.rules.labeling import OPEN_FOR_LEAD
from goldset.selectors.answers import adjudicable_records, domain_loads, qualified_domain_ids
from goldset.selectors.curation import (
    claimable_revisions,
    count_claimable_revisions,
    open_assignments,
)
from goldset.selectors.keyset import keyset_page
from workbench.roles import Role, roles_of

COUNT_CAP = 100
RECENT_UNREAD = 5


@dataclass(frozen=True)
class InboxEntry:
    key: str  # unique on the page: one line per thing that waits, whatever roles hold it
    label: str
    count: int
    url: str
    hint: str = ""
    at_least: bool = False  # the true number may be higher (shown "100+")

    @property
    def shown(self) -> str:
        return f"{self.count}+" if self.at_least else str(self.count)


@dataclass(frozen=True)
class FailedCalibration:
    result: CalibrationResult
    retake: CalibrationRetake | None  # the newest request, if any

    @property
    def may_request(self) -> bool:
        return self.retake is None or self.retake.status != RetakeStatus.PENDING


@dataclass
class Inbox:
    entries: list[InboxEntry] = field(default_factory=list)
    unread: list[Notification] = field(default_factory=list)
    unread_total: int = 0
    failed_calibrations: list[FailedCalibration] = field(default_factory=list)

    def add(self, entry: InboxEntry) -> None:
        if entry.count and all(e.key != entry.key for e in self.entries):
            self.entries.append(entry)


def _bounded(qs, cap: int = COUNT_CAP) -> tuple[int, bool]:
    n = qs[:cap].count()
    return n, n >= cap


def get_inbox(*, user, project) -> Inbox:
    """The user's inbox: per held role, counts and links for what waits for them, their newest
    unread notifications and (annotators) failed calibrations with their retake state. A fixed
    number of queries per role."""
    roles = roles_of(user)
    inbox = Inbox()
    unread = Notification.objects.filter(recipient=user, read_at__isnull=True)
    by_kind = dict(
        unread.order_by().values("kind").annotate(n=Count("id")).values_list("kind", "n")
    )
    inbox.unread_total = sum(by_kind.values())
    if inbox.unread_total:
        inbox.unread = list(unread.order_by("-created_at", "-id")[:RECENT_UNREAD])
    notifications = reverse("inbox:notifications")
    inbox.add(
        InboxEntry(
            "replies",
            "Discussions with unread replies",
            by_kind.get(NotificationKind.DISCUSSION_REPLY, 0),
            f"{notifications}?unread=1&kind={NotificationKind.DISCUSSION_REPLY}",
            "triples you wrote, flagged or wrote in",
        )
    )
    if Role.ANNOTATOR in roles:
        _annotator_entries(inbox, user, project=project)
    if roles & {Role.LEAD, Role.ADMIN}:
        _lead_entries(inbox, user, project=project)
    return inbox


def _annotator_entries(inbox: Inbox, user, *, project) -> None:
    domain_ids = qualified_domain_ids(user, project=project)
    if domain_ids:
        open_label = LabelAssignment.objects.filter(
            annotator=user, is_calibration=False, completed_at__isnull=True, record__project=project
        ).exists()
        loads = domain_loads(user, domain_ids, project=project)
        share = sum(max(0, load.cap - load.mine) for load in loads.values())
        mine = LabelAssignment.objects.filter(annotator=user, record_id=OuterRef("pk"))
        skipped = ItemSkip.objects.filter(annotator=user, record_id=OuterRef("pk"))
        claimable, at_least = _bounded(
            AnswerRecord.objects.filter(
                domain_id__in=domain_ids,
                status=RecordStatus.LABELING,
                is_calibration=False,
                assigned_count__lt=F("labels_required"),
            )
            .exclude(Exists(mine))
            .exclude(Exists(skipped))
        )
        inbox.add(
            InboxEntry(
                "labels",
                "Labels to do",
                int(open_label) + min(claimable, share),
                reverse("answers:queue"),
                "answers in your blinded queue (your fair share)",
                at_least=at_least and share > claimable,
            )
        )
    held = open_assignments(project=project, reviewer=user).count()
    waiting, at_least = count_claimable_revisions(project=project, reviewer=user)
    inbox.add(
        InboxEntry(
            "reviews",
            "Reviews to do",
            held + waiting,
            reverse("curation:queue"),
            "triples to confirm or flag",
            at_least=at_least,
        )
    )
    if not curation_setting("FRESH_REVIEWERS_ON_REVISION", project=project):
        reviewed = ReviewAssignment.objects.filter(
            reviewer=user, revision__triple_id=OuterRef("triple_id")
        )
        count, at_least = _bounded(
            claimable_revisions(project=project, reviewer=user)
            .filter(number__gt=1)
            .filter(Exists(reviewed))
        )
        inbox.add(
            InboxEntry(
                "rereviews",
                "Revisions waiting for your re-review",
                count,
                reverse("curation:queue"),
                "triples you reviewed, revised since",
                at_least=at_least,
            )
        )
    count, at_least = _bounded(Triple.objects.filter(author=user, state=TripleState.IN_DISCUSSION))
    inbox.add(
        InboxEntry(
            "my-discussions",
            "Your triples in discussion",
            count,
            reverse("curation:triples") + f"?state={TripleState.IN_DISCUSSION}",
            "flagged by a reviewer: revise, split or drop",
            at_least=at_least,
        )
    )
    failed = list(
        CalibrationResult.objects.filter(annotator=user, passed=False)
        .select_related("domain")
        .order_by("domain__slug")
    )
    if failed:
        newest: dict[int, CalibrationRetake] = {}
        for retake in CalibrationRetake.objects.filter(
            annotator=user, domain_id__in=[r.domain_id for r in failed]
        ).order_by("requested_at", "id"):
            newest[retake.domain_id] = retake
        inbox.failed_calibrations = [
            FailedCalibration(result=r, retake=newest.get(r.domain_id)) for r in failed
        ]


def _lead_entries(inbox: Inbox, user, *, project) -> None:
    count, at_least = _bounded(  # the items of the lead's own queue (never one they labeled)
        adjudicable_records(user=user, project=project, statuses=OPEN_FOR_LEAD).filter(
            is_calibration=False
        )
    )
    inbox.add(
        InboxEntry(
            "adjudication",
            "Items awaiting adjudication",
            count,
            reverse("answers:adjudication_queue"),
            "no majority, severe safety or audit sample",
            at_least=at_least,
        )
    )
    count, at_least = _bounded(CalibrationRetake.objects.filter(status=RetakeStatus.PENDING))
    inbox.add(
        InboxEntry(
            "retakes",
            "Calibration retake requests",
            count,
            reverse("inbox:retakes"),
            "annotators who failed a calibration ask to retake it",
            at_least=at_least,
        )
    )
    count, at_least = _bounded(Triple.objects.filter(state=TripleState.NEEDS_REREVIEW))
    inbox.add(
        InboxEntry(
            "needs-rereview",
            "Triples needing re-review",
            count,
            reverse("curation:rereview"),
            "pinned to a superseded block version",
            at_least=at_least,
        )
    )


# ---------------------------------------------------------------- notifications


def count_unread(*, user) -> int:
    """The badge: unread notifications, counted on the ``notification_unread`` partial index
    (capped: the badge shows "99+")."""
    return Notification.objects.filter(recipient=user, read_at__isnull=True)[:COUNT_CAP].count()


def list_notifications(
    *, user, cursor: str | None, size: int, unread_only: bool = False, kind: str = ""
):
    """One keyset page of the user's notifications, newest first (only unread ones, only one
    kind: an unknown kind is ignored)."""
    rows = Notification.objects.filter(recipient=user)
    if unread_only:
        rows = rows.filter(read_at__isnull=True)
    if kind in NotificationKind.values:
        rows = rows.filter(kind=kind)
    return keyset_page(rows, fields=("created_at", "id"), cursor=cursor, size=size, descending=True)


def get_notification_for(*, user, pk: int) -> Notification:
    notification = Notification.objects.filter(recipient=user, pk=pk).first()
    if notification is None:
        raise Http404("No such notification.")
    return notification


def wants_email(*, user) -> bool:
    return NotificationPreference.objects.filter(user=user, email=True).exists()


# ---------------------------------------------------------------- calibration retakes


def list_retakes(*, pending: bool, cursor: str | None, size: int):
    """One keyset page of retake requests with the people and the domain: pending ones oldest
    first (the longest waiting on top), answered ones newest first."""
    rows = CalibrationRetake.objects.select_related("annotator", "domain", "decided_by")
    if pending:
        rows = rows.filter(status=RetakeStatus.PENDING)
    else:
        rows = rows.exclude(status=RetakeStatus.PENDING)
    return keyset_page(
        rows, fields=("requested_at", "id"), cursor=cursor, size=size, descending=not pending
    )


def get_retake(*, pk: int) -> CalibrationRetake:
    retake = CalibrationRetake.objects.select_related("annotator", "domain").filter(pk=pk).first()
    if retake is None:
        raise Http404("No such retake request.")
    return retake


def get_failed_result(*, annotator, domain_slug: str) -> CalibrationResult:
    result = (
        CalibrationResult.objects.select_related("domain")
        .filter(annotator=annotator, domain__slug=domain_slug, passed=False)
        .first()
    )
    if result is None:
        raise Http404("No failed calibration in that domain.")
    return result
