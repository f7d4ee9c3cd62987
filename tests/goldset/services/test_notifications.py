"""Issue 14: notifications are written by the services, in the event's transaction, for the
people the event concerns; repeated events fold into one unread line; texts stay blind; e-mail is
opt-in and leaves through the outbox, never inside the request."""

import pytest
from django.core import mail

from goldset.models import (
    AnswerRecord,
    Notification,
    NotificationKind,
    OutboxMessage,
    RecordStatus,
)
from goldset.rules.jobs import NOTIFICATION_EMAIL_OUTBOX_KIND
from goldset.services.notifications import (
    mark_all_read,
    mark_read,
    notify,
    send_notification_emails,
    set_email_preference,
)
from goldset.services.resolution import post_message, revise_triple
from tests.factories import AnswerRecordFactory, DomainFactory, UserFactory
from tests.goldset.answers_helpers import (
    BAD,
    GOOD,
    SECRETS,
    claim_and_label,
    qualified_annotators,
)
from tests.goldset.inbox_support import flagged_triple
from tests.goldset.project_support import default_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def _texts(user, kind=None):
    qs = Notification.objects.filter(recipient=user)
    if kind:
        qs = qs.filter(kind=kind)
    return list(qs.values_list("text", flat=True))


def test_a_flag_gives_the_author_and_the_flagging_reviewer_a_link_to_the_discussion(team):
    triple = flagged_triple(team["author"], [team["r1"], team["r2"]])
    link = f"/p/default/curation/triples/{triple.pk}/#discussion"  # into its project
    for who in (team["author"], team["r2"]):
        (n,) = Notification.objects.filter(recipient=who)
        assert (n.kind, n.link) == (NotificationKind.DISCUSSION_OPENED, link)
    assert not Notification.objects.filter(recipient=team["r1"]).exists()  # confirmed: not a party


def test_a_reply_reaches_every_party_but_its_writer_and_replies_fold_per_discussion(team):
    triple = flagged_triple(team["author"], [team["r1"], team["r2"]])
    Notification.objects.all().delete()
    post_message(triple=triple, author=team["lead"], body="Which part is not entailed?")
    post_message(triple=triple, author=team["author"], body="The key length.")
    post_message(triple=triple, author=team["author"], body="Also the storage layer.")
    # the flagging reviewer: one unread line for three replies, the latest text
    (n,) = Notification.objects.filter(recipient=team["r2"])
    assert n.kind == NotificationKind.DISCUSSION_REPLY and n.count == 3
    assert n.text.startswith("The author replied in the discussion of “What encryption")
    # the lead took part, so the author's replies reach them; their own message did not
    (n,) = Notification.objects.filter(recipient=team["lead"])
    assert n.count == 2 and n.text.startswith("author replied")  # leads read display names
    post_message(triple=triple, author=team["r2"], body="The key length, yes.")
    (n,) = Notification.objects.filter(recipient=team["author"])
    assert n.text.startswith("A reviewer who flagged it replied")  # never an annotator's name
    assert "rev2" not in n.text
    assert not Notification.objects.filter(recipient__in=[team["r1"], team["admin"]]).exists()
    # once read, the next reply starts a new line
    mark_read(user=team["r2"], project=default_project(), notification_id=_unread(team["r2"]).pk)
    post_message(triple=triple, author=team["author"], body="Fixed?")
    assert Notification.objects.filter(recipient=team["r2"]).count() == 2
    assert mark_all_read(user=team["r2"], project=default_project()) == 1


def _unread(user):
    return Notification.objects.get(recipient=user, read_at__isnull=True)


@pytest.mark.parametrize("fresh", [True, False])
def test_a_revision_tells_the_flagging_reviewer_whether_it_waits_for_them(team, settings, fresh):
    settings.CURATION_FRESH_REVIEWERS_ON_REVISION = fresh
    triple = flagged_triple(team["author"], [team["r1"], team["r2"]])
    revise_triple(
        triple=triple,
        actor=team["author"],
        question="Which encryption-at-rest mechanism protects stored customer documents?",
        block_version=triple.current_revision.expected_block_version,
        expected_answer="AES-256 at the storage layer.",
    )
    (n,) = Notification.objects.filter(recipient=team["r2"], kind=NotificationKind.REVISION)
    if fresh:
        assert "other reviewers will review it" in n.text and n.link.endswith("#discussion")
    else:
        assert "waits for your re-review" in n.text and n.link == "/p/default/curation/reviews/"
    assert not Notification.objects.filter(recipient=team["r1"]).exists()


def test_items_reaching_adjudication_are_one_line_per_lead_whatever_their_number(lead):
    domain = DomainFactory(slug="supply_chain")
    second_lead = UserFactory(role=Role.LEAD, username="lead-two")
    annotators = qualified_annotators(domain, 3)
    for _ in range(3):
        AnswerRecordFactory(question__domain=domain)
    # every record gets acceptable, unacceptable and a severe-safety label: adjudication
    for i, a in enumerate(annotators):
        for _ in range(3):
            fields = (GOOD, BAD, {**BAD, "severe_safety": True, "rationale": "unsafe"})[i]
            claim_and_label(a, **fields)
    waiting = AnswerRecord.objects.filter(status=RecordStatus.NEEDS_ADJUDICATION).count()
    assert waiting == 3
    for who in (lead, second_lead):
        (n,) = Notification.objects.filter(recipient=who)
        assert n.kind == NotificationKind.ADJUDICATION_WAITING and n.count == 3
        assert n.link == "/p/default/answers/adjudication/"
    assert not Notification.objects.filter(recipient__in=annotators).exists()
    for text in _texts(lead):
        assert not any(secret in text for secret in SECRETS)
        assert "hybrid_rrf_system" not in text and "probe-run" not in text


def test_email_is_opt_in_and_leaves_through_the_outbox_after_commit(
    team, django_capture_on_commit_callbacks
):
    team["r2"].email = "rev2@example.org"
    team["r2"].save()
    team["author"].email = "author@example.org"
    team["author"].save()
    set_email_preference(user=team["r2"], email=True)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        triple = flagged_triple(team["author"], [team["r1"], team["r2"]])
        assert mail.outbox == []  # nothing is sent inside the transaction
    (message,) = OutboxMessage.objects.filter(kind=NOTIFICATION_EMAIL_OUTBOX_KIND)
    for callback in callbacks:
        callback()  # the relay publishes; the eager task sends
    assert [m.to for m in mail.outbox] == [["rev2@example.org"]]
    assert "which you flagged, is open" in mail.outbox[0].body
    assert f"/p/default/curation/triples/{triple.pk}/#discussion" in mail.outbox[0].body
    message.refresh_from_db()
    assert message.done_at is not None
    # idempotent: a re-delivered task sends nothing twice
    assert send_notification_emails(ids=message.payload["ids"]) == 0
    assert len(mail.outbox) == 1


def test_notify_drops_duplicates_and_nobody(annotator, lead):
    ids = notify(
        project=default_project(),
        recipients=[annotator, annotator.pk, None, lead],
        kind=NotificationKind.RETAKE_DECIDED,
        text="x",
    )
    assert len(ids) == 2 and Notification.objects.count() == 2
