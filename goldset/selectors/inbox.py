"""What waits for a user (issue 14): the inbox on Home, the notification list and the badge.

Every count is bounded (``COUNT_CAP``; the page shows "100+") or read from a maintained counter,
so the inbox costs the same number of queries whatever the size of the data. Everything is one
project's (``project``): its queues, its notifications, links into it
(:func:`~workbench.project_urls.project_url`, so they work from the projects home too)."""

from dataclasses import dataclass, field

from django.db.models import Count, Exists, F, OuterRef
from django.http import Http404

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
    ProjectMembership,
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
from workbench.project_urls import project_url
from workbench.roles import Role, project_roles

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


def roles_in(*, user, project) -> frozenset[str]:
    """The roles ``user`` holds in ``project`` (one query)."""
    role = (
        ProjectMembership.objects.filter(project=project, user_id=user.pk)
        .values_list("role", flat=True)
        .first()
    )
    return project_roles(user, role)


def get_inbox(*, user, project, roles: frozenset[str] | None = None) -> Inbox:
    """The user's inbox in ``project``: per role held there (``roles``, read from the
    membership when not given), counts and links for what waits for them in the project, their
    newest unread notifications of the project and (annotators) failed calibrations in its
    domains with their retake state. A fixed number of queries per role and project."""
    roles = roles_in(user=user, project=project) if roles is None else roles
    inbox = Inbox()
    unread = Notification.objects.filter(project=project, recipient=user, read_at__isnull=True)
    by_kind = dict(
        unread.order_by().values("kind").annotate(n=Count("id")).values_list("kind", "n")
    )
    inbox.unread_total = sum(by_kind.values())
    if inbox.unread_total:
        inbox.unread = list(unread.order_by("-created_at", "-id")[:RECENT_UNREAD])
    notifications = project_url(project, "inbox:notifications")
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
                project=project,
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
                project_url(project, "answers:queue"),
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
            project_url(project, "curation:queue"),
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
                project_url(project, "curation:queue"),
                "triples you reviewed, revised since",
                at_least=at_least,
            )
        )
    count, at_least = _bounded(
        Triple.objects.filter(project=project, author=user, state=TripleState.IN_DISCUSSION)
    )
    inbox.add(
        InboxEntry(
            "my-discussions",
            "Your triples in discussion",
            count,
            project_url(project, "curation:triples") + f"?state={TripleState.IN_DISCUSSION}",
            "flagged by a reviewer: revise, split or drop",
            at_least=at_least,
        )
    )
    failed = list(
        CalibrationResult.objects.filter(annotator=user, passed=False, domain__project=project)
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
            project_url(project, "answers:adjudication_queue"),
            "no majority, severe safety or audit sample",
            at_least=at_least,
        )
    )
    count, at_least = _bounded(
        CalibrationRetake.objects.filter(domain__project=project, status=RetakeStatus.PENDING)
    )
    inbox.add(
        InboxEntry(
            "retakes",
            "Calibration retake requests",
            count,
            project_url(project, "inbox:retakes"),
            "annotators who failed a calibration ask to retake it",
            at_least=at_least,
        )
    )
    count, at_least = _bounded(
        Triple.objects.filter(project=project, state=TripleState.NEEDS_REREVIEW)
    )
    inbox.add(
        InboxEntry(
            "needs-rereview",
            "Triples needing re-review",
            count,
            project_url(project, "curation:rereview"),
            "pinned to a superseded block version",
            at_least=at_least,
        )
    )


# ---------------------------------------------------------------- notifications


def count_unread(*, user, project) -> int:
    """The badge: unread notifications in the project, counted on the ``notification_unread``
    partial index (capped: the badge shows "99+")."""
    unread = Notification.objects.filter(project=project, recipient=user, read_at__isnull=True)
    return unread[:COUNT_CAP].count()


def list_notifications(
    *, user, project, cursor: str | None, size: int, unread_only: bool = False, kind: str = ""
):
    """One keyset page of the user's notifications in the project, newest first (only unread
    ones, only one kind: an unknown kind is ignored)."""
    rows = Notification.objects.filter(project=project, recipient=user)
    if unread_only:
        rows = rows.filter(read_at__isnull=True)
    if kind in NotificationKind.values:
        rows = rows.filter(kind=kind)
    return keyset_page(rows, fields=("created_at", "id"), cursor=cursor, size=size, descending=True)


def get_notification_for(*, user, project, pk: int) -> Notification:
    """One of the user's notifications in the project; 404 for anyone else's or another
    project's."""
    notification = Notification.objects.filter(project=project, recipient=user, pk=pk).first()
    if notification is None:
        raise Http404("No such notification.")
    return notification


def wants_email(*, user) -> bool:
    return NotificationPreference.objects.filter(user=user, email=True).exists()


# ---------------------------------------------------------------- calibration retakes


def list_retakes(*, project, pending: bool, cursor: str | None, size: int):
    """One keyset page of the project's retake requests with the people and the domain:
    pending ones oldest first (the longest waiting on top), answered ones newest first."""
    rows = CalibrationRetake.objects.filter(domain__project=project).select_related(
        "annotator", "domain", "decided_by"
    )
    if pending:
        rows = rows.filter(status=RetakeStatus.PENDING)
    else:
        rows = rows.exclude(status=RetakeStatus.PENDING)
    return keyset_page(
        rows, fields=("requested_at", "id"), cursor=cursor, size=size, descending=not pending
    )


def get_retake(*, project, pk: int) -> CalibrationRetake:
    retake = (
        CalibrationRetake.objects.select_related("annotator", "domain")
        .filter(domain__project=project, pk=pk)
        .first()
    )
    if retake is None:
        raise Http404("No such retake request.")
    return retake


def get_failed_result(*, annotator, project, domain_slug: str) -> CalibrationResult:
    result = (
        CalibrationResult.objects.select_related("domain")
        .filter(
            annotator=annotator, domain__project=project, domain__slug=domain_slug, passed=False
        )
        .first()
    )
    if result is None:
        raise Http404("No failed calibration in that domain.")
    return result
