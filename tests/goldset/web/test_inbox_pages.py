"""Issue 14: the inbox on Home, the notification pages and the retake pages — every role on
every new endpoint, constant query counts as data grows, keyset pages, no duplicate links."""

import re

import pytest
from django.urls import reverse

from goldset.models import (
    CalibrationRetake,
    Notification,
    NotificationKind,
    NotificationPreference,
    RetakeStatus,
)
from goldset.services.calibration import request_retake
from goldset.services.notifications import notify
from goldset.services.resolution import post_message, revise_triple
from tests.factories import (
    AnswerRecordFactory,
    CalibrationResultFactory,
    DomainFactory,
    UserFactory,
)
from tests.goldset.inbox_support import calibration_domain, fail_calibration, flagged_triple
from tests.goldset.project_support import default_project
from workbench.models import AuditEvent
from workbench.roles import Role

pytestmark = pytest.mark.django_db
ROLES = ["annotator", "lead", "admin_user", None]


def _client(request, client, client_for, fixture):
    if fixture is None:
        return client, None
    user = request.getfixturevalue(fixture)
    return client_for(user), user


def _note(user, text="Something happened.", link="/answers/"):
    (pk,) = notify(
        project=default_project(),
        recipients=[user],
        kind=NotificationKind.RETAKE_DECIDED,
        text=text,
        link=link,
    )
    return Notification.objects.get(pk=pk)


# ---------------------------------------------------------------- every role, every endpoint


@pytest.mark.parametrize("fixture", ROLES)
def test_notification_pages_are_everyones_own(request, client, client_for, fixture, make_user):
    c, user = _client(request, client, client_for, fixture)
    stranger = make_user(Role.ANNOTATOR, username="stranger")
    theirs = _note(stranger)
    pages = [
        reverse("inbox:notifications"),
        reverse("inbox:badge"),
        reverse("inbox:settings"),
    ]
    if user is None:
        for url in pages + [reverse("inbox:open", args=[theirs.pk])]:
            assert c.get(url).status_code == 302
        for url in (reverse("inbox:mark_all_read"), reverse("inbox:mark_read", args=[theirs.pk])):
            response = c.post(url)
            assert response.status_code == 302 and response["Location"].startswith("/login/")
        return
    mine = _note(user, link="/answers/calibration/")
    for url in pages:
        assert c.get(url).status_code == 200
    # someone else's notification is not found, whatever the role
    assert c.get(reverse("inbox:open", args=[theirs.pk])).status_code == 404
    assert c.post(reverse("inbox:mark_read", args=[theirs.pk])).status_code == 404
    theirs.refresh_from_db()
    assert theirs.read_at is None
    # one's own: opening follows the link and marks it read
    response = c.get(reverse("inbox:open", args=[mine.pk]))
    assert response.status_code == 302 and response["Location"] == "/answers/calibration/"
    mine.refresh_from_db()
    assert mine.read_at is not None
    _note(user)
    assert c.post(reverse("inbox:mark_all_read")).status_code == 302
    assert not Notification.objects.filter(recipient=user, read_at__isnull=True).exists()
    # e-mail is off by default and turned on here
    assert not NotificationPreference.objects.filter(user=user, email=True).exists()
    assert c.post(reverse("inbox:settings"), {"email": "on"}).status_code == 302
    assert NotificationPreference.objects.get(user=user).email is True


@pytest.mark.parametrize("fixture", ROLES)
def test_only_annotators_request_retakes_and_only_leads_answer_them(
    request, client, client_for, fixture, lead
):
    domain = calibration_domain(lead)
    failing = UserFactory(role=Role.ANNOTATOR, username="fails")
    fail_calibration(failing, domain)
    pending = request_retake(annotator=failing, domain=domain)
    c, user = _client(request, client, client_for, fixture)
    ask = reverse("inbox:retake_request", args=[domain.slug])
    decide = reverse("inbox:retake_decide", args=[pending.pk])
    answer = {"decision": "decline", "reason": "Not this week."}
    if user is None:
        for response in (c.post(ask), c.get(reverse("inbox:retakes")), c.post(decide, answer)):
            assert response.status_code == 302 and response["Location"].startswith("/login/")
        return
    if fixture == "annotator":
        fail_calibration(user, domain)
        response = c.post(ask, {"message": "I misread the grounding scale."})
        assert response.status_code == 302
        mine = CalibrationRetake.objects.get(annotator=user)
        assert mine.message == "I misread the grounding scale."
        assert c.get(reverse("inbox:retakes")).status_code == 403
        assert c.post(decide, answer).status_code == 403
        assert c.post(reverse("inbox:retake_request", args=["no-such-domain"])).status_code == 404
        return
    assert c.post(ask).status_code == 403
    page = c.get(reverse("inbox:retakes"))
    assert page.status_code == 200 and f'id="retake-request-{pending.pk}"' in page.content.decode()
    assert c.post(reverse("inbox:retake_decide", args=[999999]), answer).status_code == 404
    assert c.post(decide, {"decision": "decline", "reason": ""}).status_code == 302
    pending.refresh_from_db()
    assert pending.status == RetakeStatus.PENDING  # a reason is required
    assert c.post(decide, answer).status_code == 302
    pending.refresh_from_db()
    assert (pending.status, pending.decided_by) == (RetakeStatus.DECLINED, user)
    assert AuditEvent.objects.filter(verb="calibration_retake_declined", actor=user).exists()


# ---------------------------------------------------------------- Home


def _grow(n, *, annotator, lead, team):
    """n of everything an inbox counts: replies, discussions, adjudication items, retakes."""
    domain = calibration_domain(lead, slug=f"domain-{n}")
    for i in range(n):
        triple = flagged_triple(
            annotator, [team["r1"], team["r2"]], question=f"Question {n}-{i} about retention?"
        )
        post_message(triple=triple, author=team["r2"], body="Not entailed.")
        post_message(triple=triple, author=lead, body="Agreed.")
        post_message(triple=triple, author=annotator, body="Revising it.")
        record = AnswerRecordFactory(question__domain=domain)
        record.status = "needs_adjudication"
        record.save(update_fields=["status"])
        failing = UserFactory(role=Role.ANNOTATOR, username=f"fails-{n}-{i}")
        fail_calibration(failing, domain)
        request_retake(annotator=failing, domain=domain)
    CalibrationResultFactory(annotator=annotator, domain=domain, passed=False)


def test_home_costs_the_same_queries_at_any_size(
    client_for, annotator, lead, admin_user, team, django_assert_max_num_queries
):
    clients = {"annotator": client_for(annotator), "lead": client_for(lead)}
    clients["admin"] = client_for(admin_user)
    counts = {role: [] for role in clients}
    for n in (1, 3):
        _grow(n, annotator=annotator, lead=lead, team=team)
        for role, c in clients.items():
            with django_assert_max_num_queries(40) as ctx:
                assert c.get(reverse("home")).status_code == 200
            counts[role].append(len(ctx.captured_queries))
    print(f"home queries per role at sizes 1 and 3: {counts}")
    for role, (small, large) in counts.items():
        assert small == large, (role, counts)


def test_home_inbox_counts_and_links_per_role(client_for, annotator, lead, team):
    _grow(2, annotator=annotator, lead=lead, team=team)
    html = client_for(annotator).get(reverse("home")).content.decode()
    assert re.search(
        r'id="inbox-replies"><a href="/p/default/inbox/\?unread=1&amp;kind=discussion_reply"',
        html,
    )
    assert 'id="inbox-my-discussions"' in html and "Your triples in discussion" in html
    assert 'action="/inbox/calibration/domain-2/retake/"' in html  # the failed calibration
    assert "Request a retake" in html
    assert 'id="inbox-adjudication"' not in html and 'id="inbox-retakes"' not in html
    html = client_for(lead).get(reverse("home")).content.decode()
    assert re.search(
        r'id="inbox-adjudication"><a href="/p/default/answers/adjudication/"><strong[^>]*>2<',
        html,
    )
    assert re.search(
        r'id="inbox-retakes"><a href="/p/default/inbox/retakes/"><strong[^>]*>2<', html
    )
    assert re.search(r'id="inbox-replies"><a [^>]*><strong[^>]*>2<', html)
    assert "Request a retake" not in html


HATS = {"lead": Role.LEAD, "admin": Role.ADMIN, "annotator": Role.ANNOTATOR}


@pytest.mark.parametrize("roles", [["annotator"], ["lead"], ["admin"]])
def test_home_lists_each_page_once(client_for, make_user, roles):
    user = make_user(role=HATS[roles[0]], username="one-hat", is_staff=False)
    html = client_for(user).get(reverse("home")).content.decode()
    cards = html.split('<div class="cards">', 1)[1]
    links = re.findall(r'href="([^"]+)"', cards)
    assert links and len(links) == len(set(links)), sorted(links)


def test_the_nav_loads_the_unread_badge_without_costing_the_page(client_for, annotator):
    c = client_for(annotator)
    html = c.get(reverse("corpus:documents")).content.decode()
    assert 'hx-get="/inbox/badge/"' in html
    assert "unread-count" not in c.get(reverse("inbox:badge")).content.decode()
    for _ in range(3):
        _note(annotator)
    badge = c.get(reverse("inbox:badge")).content.decode()
    assert '<span class="badge warn unread-count">3</span>' in badge and "hx-get" not in badge


# ---------------------------------------------------------------- the notification list


def test_notification_list_pages_by_keyset_at_constant_queries(
    client_for, annotator, django_assert_max_num_queries
):
    c = client_for(annotator)
    counts = []
    for n in (3, 40):
        Notification.objects.all().delete()
        for i in range(n):
            _note(annotator, text=f"Event {i:02d}")
        with django_assert_max_num_queries(12) as ctx:
            response = c.get(reverse("inbox:notifications"))
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1], counts
    page = response.context["page"]
    assert [n.text for n in page][:2] == ["Event 39", "Event 38"] and page.next_cursor
    rest = c.get(reverse("inbox:notifications"), {"after": page.next_cursor}).context["page"]
    assert [n.text for n in rest][-1] == "Event 00" and rest.next_cursor is None
    assert len(page) + len(rest) == 40
    fragment = c.get(
        reverse("inbox:notifications"),
        {"unread": "1"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="notification-list",
    )
    assert fragment.content.decode().strip().startswith('<section id="notification-list">')
    assert c.get(reverse("inbox:notifications"), {"after": "not-a-cursor"}).status_code == 404


def test_a_revision_waiting_for_re_review_shows_on_the_flagging_reviewers_home(
    client_for, team, settings
):
    settings.CURATION_FRESH_REVIEWERS_ON_REVISION = False
    triple = flagged_triple(team["author"], [team["r1"], team["r2"]])
    c = client_for(team["r2"])
    assert 'id="inbox-rereviews"' not in c.get(reverse("home")).content.decode()
    revise_triple(
        triple=triple,
        actor=team["author"],
        question="Which mechanism protects stored customer documents at rest?",
        block_version=triple.current_revision.expected_block_version,
        expected_answer="AES-256 at the storage layer.",
    )
    html = c.get(reverse("home")).content.decode()
    assert re.search(
        r'id="inbox-rereviews"><a href="/p/default/curation/reviews/"><strong[^>]*>1<', html
    )
    replies = c.get(reverse("inbox:notifications"), {"kind": "revision"}).context["page"]
    assert [n.kind for n in replies] == ["revision"]


def test_the_retake_page_costs_the_same_queries_at_any_size(
    client_for, lead, django_assert_max_num_queries
):
    domain = DomainFactory(slug="supply_chain")
    c = client_for(lead)
    counts = []
    for n in (2, 30):
        for i in range(n):
            who = UserFactory(role=Role.ANNOTATOR, username=f"asks-{n}-{i}")
            CalibrationRetake.objects.create(annotator=who, domain=domain, message=f"Please {i}")
            CalibrationRetake.objects.create(
                annotator=who,
                domain=domain,
                status=RetakeStatus.DECLINED,
                decided_by=lead,
                reason="Not yet.",
            )
        with django_assert_max_num_queries(12) as ctx:
            response = c.get(reverse("inbox:retakes"))
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1], counts
    page = response.context["page"]
    assert len(page) == 25 and page.next_cursor  # oldest requests first, 25 a page
    assert page.items[0].message == "Please 0" and len(response.context["answered"]) == 10


def test_reading_the_discussion_marks_its_replies_read(client_for, team):
    triple = flagged_triple(team["author"], [team["r1"], team["r2"]])
    post_message(triple=triple, author=team["author"], body="Which part?")
    c = client_for(team["r2"])
    assert Notification.objects.filter(recipient=team["r2"], read_at__isnull=True).count() == 1
    assert 'id="inbox-replies"' in c.get(reverse("home")).content.decode()
    assert c.get(reverse("curation:triple", args=[triple.pk])).status_code == 200
    assert not Notification.objects.filter(recipient=team["r2"], read_at__isnull=True).exists()
    assert 'id="inbox-replies"' not in c.get(reverse("home")).content.decode()
