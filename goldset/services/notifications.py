"""In-app notifications and their optional e-mail (issue 14).

Services that make an event call :func:`notify` inside their own transaction, so a notification
exists exactly when its event does. Texts are written for the recipient: people by display name,
triples by the start of their question, never a system, run or model (annotators and leads are
blind to those) and never a raw code.

Repeated events of one thread carry a ``key`` (``discussion:<triple>``, ``adjudication``): a
recipient's unread notification of that key absorbs the next event (its count goes up, its text
and time are the latest), so leads get one line for fifty items reaching the queue. A partial
unique index keeps one unread row per (recipient, key) under concurrent events.

Every notification belongs to the project of its subject (a triple's, a record's, a domain's):
its link points into that project (``workbench.project_urls.project_url``, so it works from the
projects home and from an e-mail), its recipients are that project's members with the role
(``ProjectMembership``, never the installation's groups), and it folds only with unread
notifications of the same project.

E-mail is off unless the user turned it on (:class:`~goldset.models.NotificationPreference`).
Newly created notifications for such users are sent by the ``goldset.send_notification_emails``
task, queued through the outbox in the same transaction (never sent inside the request);
``emailed_at`` makes a re-delivered task harmless.
"""

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from goldset.conf import curation_setting
from goldset.exceptions import GoldsetError
from goldset.models import (
    DiscussionMessage,
    Notification,
    NotificationKind,
    NotificationPreference,
    ProjectMembership,
    Review,
    Verdict,
)
from goldset.rules.jobs import NOTIFICATION_EMAIL_OUTBOX_KIND
from goldset.services import outbox
from workbench.project_urls import project_url
from workbench.roles import Role

logger = logging.getLogger(__name__)

ADJUDICATION_KEY = "adjudication"
RETAKE_REQUESTS_KEY = "retake-requests"
TEXT_MAX = 300
QUOTE_CHARS = 60


def display_name(user) -> str:
    """How people are named in notifications: their full name, else their username."""
    return (user.get_full_name() or "").strip() or user.username


def quote(text: str) -> str:
    """The start of a question, quoted, to name a triple without its database id."""
    text = " ".join((text or "").split())
    return f"“{text[:QUOTE_CHARS]}…”" if len(text) > QUOTE_CHARS else f"“{text}”"


def discussion_key(triple_id: int) -> str:
    return f"discussion:{triple_id}"


def notify(
    *, project, recipients, kind: str, text: str, link: str = "", key: str = ""
) -> list[int]:
    """Tell each of ``recipients`` (users or ids; duplicates and None dropped) about one event
    in ``project`` (the project of its subject; ``link`` a path into it, from
    :func:`~workbench.project_urls.project_url`).

    Call inside the event's transaction. With ``key``, a recipient's unread notification of that
    key in the project is updated (count + 1, latest text, link, kind and time) instead of a new row. Returns the
    ids of the notifications created (those are the ones e-mailed). Constant queries for any
    number of recipients."""
    ids = sorted({getattr(r, "pk", r) for r in recipients if r is not None})
    if not ids:
        return []
    if kind not in NotificationKind.values:
        raise GoldsetError(f"Unknown notification kind {kind!r}.")
    text = text[:TEXT_MAX]
    for _ in range(2):
        try:
            with transaction.atomic():
                return _fold_or_create(
                    ids, project_id=project.pk, kind=kind, text=text, link=link, key=key
                )
        except IntegrityError:
            # A concurrent event created the unread row of this key first: fold into it.
            continue
    raise GoldsetError("Could not record the notification; try again.")


def _fold_or_create(ids, *, project_id, kind, text, link, key) -> list[int]:
    now = timezone.now()
    folded: set[int] = set()
    if key:
        unread = Notification.objects.filter(
            project_id=project_id, recipient_id__in=ids, key=key, read_at__isnull=True
        )
        folded = set(unread.values_list("recipient_id", flat=True))
        if folded:
            unread.update(count=F("count") + 1, text=text, link=link, kind=kind, created_at=now)
    fresh = [
        Notification(
            project_id=project_id,
            recipient_id=i,
            kind=kind,
            text=text,
            link=link,
            key=key,
            created_at=now,
        )
        for i in ids
        if i not in folded
    ]
    if not fresh:
        return []
    created = Notification.objects.bulk_create(fresh)
    created_ids = [n.pk for n in created if n.pk is not None]
    if len(created_ids) != len(created):  # backends that do not return ids on bulk insert
        created_ids = list(
            Notification.objects.filter(
                project_id=project_id,
                recipient_id__in=[n.recipient_id for n in fresh],
                created_at=now,
                kind=kind,
            ).values_list("pk", flat=True)
        )
    _queue_emails(created_ids, recipient_ids=[n.recipient_id for n in fresh])
    return created_ids


def _queue_emails(notification_ids: list[int], *, recipient_ids: list[int]) -> None:
    wants = NotificationPreference.objects.filter(user_id__in=recipient_ids, email=True).exists()
    if wants and notification_ids:
        outbox.enqueue(kind=NOTIFICATION_EMAIL_OUTBOX_KIND, payload={"ids": notification_ids})


LEAD_ROLES = (Role.LEAD.value, Role.ADMIN.value)


def lead_ids(*, project) -> list[int]:
    """Everyone holding the lead role in the project (active accounts)."""
    return list(
        ProjectMembership.objects.filter(
            project=project, role=Role.LEAD.value, user__is_active=True
        ).values_list("user_id", flat=True)
    )


def notify_adjudication_waiting(*, project, items: int = 1) -> None:
    """Items reached the project's adjudication queue (no majority, severe safety, audit
    sample): one folded notification per lead of the project, whatever the number of items."""
    notify(
        project=project,
        recipients=lead_ids(project=project),
        kind=NotificationKind.ADJUDICATION_WAITING,
        text=(
            "New items wait in the adjudication queue."
            if items == 1
            else f"{items} new items wait in the adjudication queue."
        ),
        link=project_url(project, "answers:adjudication_queue"),
        key=ADJUDICATION_KEY,
    )


# ---------------------------------------------------------------- reading and preferences


@transaction.atomic
def mark_read(*, user, project, notification_id: int) -> Notification:
    """Mark one of the user's notifications in the project read (idempotent); another user's,
    or one of another project, is not found."""
    notification = Notification.objects.filter(
        project=project, recipient=user, pk=notification_id
    ).first()
    if notification is None:
        raise Notification.DoesNotExist("No such notification.")
    if notification.read_at is None:
        notification.read_at = timezone.now()
        notification.save(update_fields=["read_at"])
    return notification


def mark_discussion_read(*, user, triple) -> int:
    """The user has the triple's discussion in front of them: its notifications are read."""
    return Notification.objects.filter(
        project_id=triple.project_id,
        recipient=user,
        key=discussion_key(triple.pk),
        read_at__isnull=True,
    ).update(read_at=timezone.now())


@transaction.atomic
def mark_all_read(*, user, project) -> int:
    """Mark every unread notification of the user in the project read; returns how many were
    unread."""
    return Notification.objects.filter(
        project=project, recipient=user, read_at__isnull=True
    ).update(read_at=timezone.now())


@transaction.atomic
def set_email_preference(*, user, email: bool) -> NotificationPreference:
    preference, _ = NotificationPreference.objects.update_or_create(
        user=user, defaults={"email": bool(email)}
    )
    return preference


# ---------------------------------------------------------------- e-mail (the task's service)


def send_notification_emails(*, ids: list[int]) -> int:
    """E-mail each of the notifications ``ids`` not e-mailed yet whose recipient still wants
    e-mail and has an address. Each is locked and stamped ``emailed_at`` in its own transaction
    right after it is sent, so a re-delivered task sends nothing twice (a crash between the two
    can repeat one e-mail, never lose one). Returns how many were sent."""
    sent = 0
    base = settings.WORKBENCH_BASE_URL.rstrip("/")
    for pk in ids:
        with transaction.atomic():
            n = (
                Notification.objects.select_for_update(of=("self",))
                .select_related("recipient__notification_preference")
                .filter(pk=pk, emailed_at__isnull=True)
                .first()
            )
            if n is None or not n.recipient.email or not _wants_email(n.recipient):
                continue
            body = n.text
            if n.link:
                body += f"\n\n{base}{n.link}"
            body += "\n\nYou get these e-mails because you turned them on in your notification settings."
            send_mail(
                subject=f"Goldset Workbench: {n.get_kind_display()}",
                message=body,
                from_email=None,
                recipient_list=[n.recipient.email],
            )
            n.emailed_at = timezone.now()
            n.save(update_fields=["emailed_at"])
            sent += 1
    return sent


def _wants_email(user) -> bool:
    try:
        return user.notification_preference.email
    except NotificationPreference.DoesNotExist:
        return False


# ---------------------------------------------------------------- discussions and revisions


def _triple_link(triple) -> str:
    return project_url(triple.project, "curation:triple", triple.pk) + "#discussion"


def notify_discussion_opened(*, triple, revision, flagged_by: list[int], actor) -> None:
    """A review flag opened the triple's discussion: the author and the flagging reviewers get
    a link to it (the reviewers' only way back to a triple they flagged)."""
    about = quote(revision.question)
    key = discussion_key(triple.pk)
    link = _triple_link(triple)
    notify(
        project=triple.project,
        recipients=[triple.author_id],
        kind=NotificationKind.DISCUSSION_OPENED,
        text=f"A reviewer flagged your triple {about}: discuss it, then revise, split or drop it.",
        link=link,
        key=key,
    )
    notify(
        project=triple.project,
        recipients=[pk for pk in flagged_by if pk != triple.author_id],
        kind=NotificationKind.DISCUSSION_OPENED,
        text=f"The discussion of {about}, which you flagged, is open.",
        link=link,
        key=key,
    )


def notify_discussion_reply(*, triple, message) -> None:
    """A message in a triple's discussion: everyone taking part hears of it but its writer —
    the author, reviewers who flagged any revision, and whoever (leads included) wrote in it.
    Annotators never learn another annotator's name (DESIGN.md §6): to them the writer is
    "the author" or "a reviewer who flagged it"; leads read display names."""
    flaggers = Review.objects.filter(revision__triple=triple, verdict=Verdict.FLAG).values_list(
        "reviewer_id", flat=True
    )
    writers = DiscussionMessage.objects.filter(triple=triple).values_list("author_id", flat=True)
    parties = {triple.author_id, *flaggers, *writers} - {message.author_id}
    if not parties:
        return
    leads = set(
        ProjectMembership.objects.filter(
            project_id=triple.project_id,
            user_id__in=parties | {message.author_id},
            role__in=LEAD_ROLES,
        ).values_list("user_id", flat=True)
    )
    writer = message.author
    if writer.pk in leads:
        blind = f"{display_name(writer)} (lead)"
    elif writer.pk == triple.author_id:
        blind = "The author"
    else:
        blind = "A reviewer who flagged it"
    about = quote(message.revision.question)
    for recipients, name in ((parties & leads, display_name(writer)), (parties - leads, blind)):
        notify(
            project=triple.project,
            recipients=recipients,
            kind=NotificationKind.DISCUSSION_REPLY,
            text=f"{name} replied in the discussion of {about}.",
            link=_triple_link(triple),
            key=discussion_key(triple.pk),
        )


def notify_revised(*, triple, previous, revision, actor) -> None:
    """The author revised a flagged triple: the reviewers who flagged the previous revision are
    told. With fresh reviewers on revision (the default) others review it; otherwise it waits
    for their re-review in the review queue."""
    flaggers = set(
        previous.reviews.filter(verdict=Verdict.FLAG).values_list("reviewer_id", flat=True)
    ) - {actor.pk}
    about = quote(revision.question)
    if curation_setting("FRESH_REVIEWERS_ON_REVISION", project=triple.project):
        text, link = (
            f"{about}, which you flagged, was revised; other reviewers will review it.",
            _triple_link(triple),
        )
    else:
        text, link = (
            f"A revision of {about}, which you flagged, waits for your re-review.",
            project_url(triple.project, "curation:queue"),
        )
    notify(
        project=triple.project,
        recipients=flaggers,
        kind=NotificationKind.REVISION,
        text=text,
        link=link,
        key=f"revision:{triple.pk}",
    )
