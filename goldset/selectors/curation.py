"""Reads for gold triple curation. ``get_*_for(user=…)`` fetch and authorize in one call (404).

Blindness is enforced here: reviewer-facing reads never load another reviewer's review nor the
author's history; reviews of a revision are only shown once that revision is resolved."""

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    Max,
    OuterRef,
    Prefetch,
    Q,
    Subquery,
    Sum,
)
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils import timezone

from goldset.conf import curation_setting, tunable
from goldset.imports.bulk import one_of
from goldset.models import (
    BlockVersion,
    Customer,
    CustomerPermission,
    DashboardCounter,
    DiscussionMessage,
    Domain,
    QualityTrackerEntry,
    Review,
    ReviewAssignment,
    ReviewSkip,
    Source,
    SpotCheckDraw,
    Tier,
    Triple,
    TripleRevision,
    TripleState,
    Verdict,
    WorkingSlice,
)
from goldset.models.corpus import page_range_of
from goldset.rules.triple_states import needs_rereview_q
from goldset.selectors.keyset import KeysetPage, keyset_page
from goldset.selectors.text_search import in_project, text_matches, text_rank
from workbench.roles import Role, has_role

TRIPLE_JOINS = (
    "domain",
    "author",
    "customer",
    "current_revision__expected_block_version__block__document",
    "origin",
)


# ---------------------------------------------------------------- superseded pins


def newest_version_of(block_path: str):
    """A subquery: the newest version number of the block at ``block_path`` (an OuterRef path
    to a block id). With :func:`newest_versions` and :func:`newest_block_version`, the one
    home of "a block's newest version"."""
    return (
        BlockVersion.objects.filter(block_id=OuterRef(block_path))
        .order_by("-version")
        .values("version")[:1]
    )


def newest_versions(block_ids) -> dict[int, int]:
    """The current (newest) version number of each block (by primary key); one query."""
    return dict(
        BlockVersion.objects.filter(block_id__in=set(block_ids))
        .values("block_id")
        .annotate(newest=Max("version"))
        .values_list("block_id", "newest")
    )


def newest_block_version(block_id: int) -> BlockVersion | None:
    """The block's current (newest) version row."""
    return BlockVersion.objects.filter(block_id=block_id).order_by("-version").first()


def with_pin_status(qs):
    """Annotate triples with ``newest_version`` (their pinned block's current version number,
    for display) and ``superseded_pin`` (their current revision pins an older version)."""
    return qs.annotate(
        newest_version=Subquery(
            newest_version_of("current_revision__expected_block_version__block_id")
        )
    ).annotate(superseded_pin=ExpressionWrapper(superseded_pin_q(), output_field=BooleanField()))


def superseded_pin_q() -> Q:
    """Triples whose current revision pins a block version that is not the block's newest
    (the ``pin_superseded`` flag the database triggers keep; an index-friendly column)."""
    return Q(pin_superseded=True)


# ---------------------------------------------------------------- block versions (authoring)


def search_block_versions(*, project, query: str, limit: int = 20):
    """The triple editor's block picker: block versions whose text has every word of ``query``
    (anywhere, any case: :func:`goldset.selectors.corpus.text_matches`, full-text search on
    PostgreSQL), or whose block id, document id or document title contains ``query``; the
    best text matches first on PostgreSQL (``ts_rank``), then by document and block, newest
    version first; each annotated with ``latest`` (the block's newest version number). Only
    the blocks of ``project``."""
    query = query.strip()
    if not query:
        return BlockVersion.objects.none()
    by_words = text_matches(
        in_project(BlockVersion.objects.order_by(), project=project), query=query
    ).values("pk")
    return (
        BlockVersion.objects.filter(block__project=project)
        .filter(
            Q(pk__in=by_words)
            | Q(block__block_id__icontains=query)
            | Q(block__document__document_id__icontains=query)
            | Q(block__document__title__icontains=query)
        )
        .select_related("block__document__domain")
        .annotate(latest=Subquery(newest_version_of("block_id")), rank=text_rank(query))
        .order_by("-rank", "block__document__document_id", "block__block_id", "-version")[:limit]
    )


# ---------------------------------------------------------------- triples


def list_triples_by(*, project, author, state: str = ""):
    """The triples ``author`` wrote in ``project``, newest first."""
    qs = Triple.objects.filter(project=project, author=author).select_related(*TRIPLE_JOINS)
    if state:
        qs = qs.filter(state=state)
    return qs.order_by("-added_at", "-id")


# ---------------------------------------------------------------- who may see and act on a triple


def is_author_or_lead(*, user, triple: Triple) -> bool:
    """The author or a lead/admin: they decide a discussion's outcome (revise, split)."""
    return user.pk == triple.author_id or has_role(user, Role.LEAD, Role.ADMIN)


def may_discuss(*, user, triple: Triple) -> bool:
    """The visibility policy: the author, a reviewer who flagged the triple, or a lead/admin may
    see it, join its discussion and drop it from there. Nobody else learns it exists."""
    if is_author_or_lead(user=user, triple=triple):
        return True
    return Review.objects.filter(
        revision__triple=triple, reviewer=user, verdict=Verdict.FLAG
    ).exists()


def may_verify(*, triple: Triple) -> bool:
    """An LLM-generated triple waits for one human verification."""
    return triple.source == Source.LLM_GENERATED and triple.human_verified_by_id is None


def triple_actions_for(*, user, triple: Triple) -> dict[str, bool]:
    """What ``user`` may do on the triple's page, from the policies above."""
    in_discussion = triple.state == TripleState.IN_DISCUSSION
    party = in_discussion and may_discuss(user=user, triple=triple)
    return {
        "can_post": party,
        "can_decide": in_discussion and is_author_or_lead(user=user, triple=triple),
        "can_drop": party,
        "can_verify": may_verify(triple=triple),
    }


def list_triples_for(*, project, user, state: str = ""):
    """The triples of ``project`` :func:`may_discuss` lets ``user`` see, as one query: every
    triple for a lead/admin; for anyone else the triples they wrote and those they flagged in a
    review."""
    qs = Triple.objects.filter(project=project).select_related(*TRIPLE_JOINS)
    if not has_role(user, Role.LEAD, Role.ADMIN):
        flagged = Review.objects.filter(
            revision__triple=OuterRef("pk"), reviewer=user, verdict=Verdict.FLAG
        )
        qs = qs.filter(Q(author=user) | Exists(flagged))
    if state:
        qs = qs.filter(state=state)
    return qs


def get_triple_by_external_id_for(*, project, user, external_id: str) -> Triple:
    """A triple of ``project`` by its public id, for those :func:`may_discuss` lets see it;
    Http404 else (and for a triple of another project)."""
    triple = get_object_or_404(
        Triple.objects.select_related(*TRIPLE_JOINS), project=project, external_id=external_id
    )
    if not may_discuss(user=user, triple=triple):
        raise Http404("No such triple.")
    return triple


def get_triple_for(*, project, user, pk) -> Triple:
    """A triple of ``project`` for those :func:`may_discuss` lets see it; Http404 for anyone
    else and for a triple of another project."""
    triple = get_object_or_404(
        Triple.objects.select_related(*TRIPLE_JOINS, "parent"), project=project, pk=pk
    )
    if not may_discuss(user=user, triple=triple):
        raise Http404("No such triple.")
    return triple


@dataclass
class RevisionView:
    revision: TripleRevision
    resolved: bool
    reviews: list[Review]


def revision_history(*, triple: Triple) -> list[RevisionView]:
    """Every revision with its reviews; a revision still under review shows none of them."""
    revisions = (
        TripleRevision.objects.filter(triple=triple)
        .select_related("expected_block_version__block__document", "created_by")
        .annotate(newest_version=Subquery(newest_version_of("expected_block_version__block_id")))
        .prefetch_related(
            Prefetch(
                "reviews",
                queryset=Review.objects.select_related("reviewer", "assignment").order_by(
                    "assignment__slot"
                ),
            )
        )
        .order_by("-number")
    )
    history = []
    for revision in revisions:
        under_review = (
            revision.pk == triple.current_revision_id and triple.state == TripleState.PENDING_REVIEW
        )
        history.append(
            RevisionView(
                revision=revision,
                resolved=not under_review,
                reviews=[] if under_review else list(revision.reviews.all()),
            )
        )
    return history


def reviews_to_answer(*, triple: Triple) -> list[Review]:
    """The reviews a revise or split of ``triple`` answers: those of its current revision, with
    their flags, entailment direction, disagreement category and comment, in slot order (one
    query). ``triple`` comes from :func:`get_triple_for`, so only those :func:`may_discuss` lets
    see it get here. A revision still under review shows none (reviews stay blind until the
    revision is resolved, as in :func:`revision_history`)."""
    if triple.state == TripleState.PENDING_REVIEW or triple.current_revision_id is None:
        return []
    return list(
        Review.objects.filter(revision_id=triple.current_revision_id)
        .select_related("reviewer", "assignment")
        .order_by("assignment__slot", "id")
    )


def list_messages(*, triple: Triple):
    return DiscussionMessage.objects.filter(triple=triple).select_related("author", "revision")


# ---------------------------------------------------------------- reviewer queue


def reviewable_q() -> Q:
    """Revisions that still take reviews: the current revision of a pending triple, or a
    spot-check revision of a TRIAGE triple that is gold."""
    current = Q(triple__current_revision_id=F("id"))
    return current & (
        Q(triple__state=TripleState.PENDING_REVIEW)
        | Q(spot_check=True, triple__state=TripleState.GOLD)
    )


def open_assignments(*, project, reviewer):
    """A reviewer's claimed, unsubmitted assignments in ``project`` on revisions that still
    take reviews."""
    live = TripleRevision.objects.filter(reviewable_q(), pk=OuterRef("revision_id"))
    return (
        ReviewAssignment.objects.filter(
            Exists(live),
            reviewer=reviewer,
            completed_at__isnull=True,
            revision__triple__project=project,
        )
        .select_related("revision__triple__domain", "revision__expected_block_version__block")
        .order_by("assigned_at", "id")
    )


def claimable_revisions(*, project, reviewer):
    """Revisions of ``project`` ``reviewer`` may still be given, oldest first (never their own
    triple, never one they hold, and with the project's FRESH_REVIEWERS_ON_REVISION never a
    triple they reviewed before)."""
    mine = ReviewAssignment.objects.filter(reviewer=reviewer)
    skipped = ReviewSkip.objects.filter(reviewer=reviewer, revision_id=OuterRef("id"))
    if curation_setting("FRESH_REVIEWERS_ON_REVISION", project=project):
        seen = mine.filter(revision__triple_id=OuterRef("triple_id"))
    else:
        seen = mine.filter(revision_id=OuterRef("id"))
    return (
        TripleRevision.objects.filter(
            reviewable_q(), triple__project=project, assigned_count__lt=F("reviewers_needed")
        )
        .exclude(triple__author=reviewer)
        .exclude(Exists(seen))
        .exclude(Exists(skipped))
        .order_by("created_at", "id")
    )


def get_undoable_review(*, project, reviewer) -> Review | None:
    """The reviewer's last review in ``project`` if it can still be undone (one query): within
    the project's ``REVIEW_UNDO_WINDOW_SECONDS``, not a spot-check, its triple still pending
    review on that revision. The undo service re-checks everything under lock."""
    window = tunable("REVIEW_UNDO_WINDOW_SECONDS", project=project)
    since = timezone.now() - timedelta(seconds=window)
    last = (
        Review.objects.filter(reviewer=reviewer, revision__triple__project=project)
        .select_related("revision__triple")
        .order_by("-submitted_at", "-id")
        .first()
    )
    if (
        last is None
        or last.submitted_at < since
        or last.spot_check
        or last.revision.triple.state != TripleState.PENDING_REVIEW
        or last.revision.triple.current_revision_id != last.revision_id
    ):
        return None
    return last


def count_review_skips_by_reviewer(*, project) -> list[tuple[str, int]]:
    """(username, skips in ``project``) for every reviewer who skipped there, most first (one
    grouped query)."""
    return list(
        ReviewSkip.objects.filter(revision__triple__project=project)
        .values_list("reviewer__username")
        .annotate(n=Count("id"))
        .order_by("-n", "reviewer__username")
    )


WAITING_COUNT_CAP = 100
WAITING_WINDOW = 4 * WAITING_COUNT_CAP


def count_claimable_revisions(
    *, project, reviewer, cap: int = WAITING_COUNT_CAP
) -> tuple[int, bool]:
    """How many revisions of ``project`` ``reviewer`` could claim, looked for among the oldest
    ``WAITING_WINDOW`` revisions still short of reviewers (a bounded walk of the open-slots
    index; the planner is never left to join every revision). Returns (count, at_least): with
    ``at_least`` the true number may be higher (the page shows "N+")."""
    window = list(
        TripleRevision.objects.filter(assigned_count__lt=F("reviewers_needed"), project=project)
        .order_by("created_at", "id")
        .values_list("pk", flat=True)[:WAITING_WINDOW]
    )
    found = (
        claimable_revisions(project=project, reviewer=reviewer).filter(pk__in=window)[:cap].count()
    )
    return found, found >= cap or len(window) >= WAITING_WINDOW


def list_recent_reviews(*, project, reviewer, limit: int = 20):
    """The reviewer's latest ``limit`` reviews in ``project``, newest first: a walk of the
    ``review_reviewer_time`` index, whatever the length of their history."""
    return (
        Review.objects.filter(reviewer=reviewer, revision__triple__project=project)
        .select_related("revision__triple__domain")
        .order_by("-submitted_at", "-id")[:limit]
    )


def get_assignment_for(*, project, user, pk) -> ReviewAssignment:
    """The reviewer's own assignment in ``project`` with what the review page shows — the
    revision and its pinned block version, and ``newest_version`` (the block's current version
    number, so a superseded pin is badged). 404 for anyone else's assignment and for one of
    another project."""
    assignment = get_object_or_404(
        ReviewAssignment.objects.select_related(
            "revision__triple__domain",
            "revision__expected_block_version__block__document__domain",
        ).annotate(
            newest_version=Subquery(newest_version_of("revision__expected_block_version__block_id"))
        ),
        pk=pk,
        reviewer=user,
        revision__triple__project=project,
    )
    assignment.reviewer = user  # it is theirs: no second read of the user row
    return assignment


def get_own_review(*, assignment: ReviewAssignment) -> Review | None:
    """The assignment's review; an assignment has one exactly when it is completed (the review
    service sets both in one transaction, undo clears both), so an open one costs no query."""
    if assignment.completed_at is None:
        return None
    return Review.objects.filter(assignment=assignment).first()


def takes_reviews(*, assignment: ReviewAssignment) -> bool:
    return TripleRevision.objects.filter(reviewable_q(), pk=assignment.revision_id).exists()


# ---------------------------------------------------------------- leads' dashboard


@dataclass(frozen=True)
class AuthorFlagRate:
    author_id: int
    username: str
    reviews: int
    flags: int
    recent_reviews: int
    recent_flags: int
    # the project's FLAG_RATE_THRESHOLD and FLAG_RATE_MIN_REVIEWS in force
    threshold: Decimal = Decimal("0.25")
    minimum: int = 20

    @staticmethod
    def _rate(flags, reviews) -> Decimal | None:
        return (Decimal(flags) / Decimal(reviews)) if reviews else None

    @property
    def rate(self):
        return self._rate(self.flags, self.reviews)

    @property
    def recent_rate(self):
        return self._rate(self.recent_flags, self.recent_reviews)

    @property
    def calibration_needed(self) -> bool:
        """Above the threshold over at least the minimum number of reviews, overall or in the
        recent window."""
        return any(
            n >= self.minimum and Decimal(f) / Decimal(n) > self.threshold
            for n, f in ((self.reviews, self.flags), (self.recent_reviews, self.recent_flags))
        )


def counter_rows(
    *names: str, project, keys: Iterable[str] | None = None
) -> dict[str, list[tuple[str, int]]]:
    """``DashboardCounter`` counts (key, n) by name, the shards of a key summed, zero counts left
    out; only ``keys`` when given (a page's rows). The project's counters only: their keys start
    with ``<project_id>|`` (migration 0036), which is stripped from the keys returned;
    ``project=None`` reads the installation-wide counters (``time_changes``, per person). One
    query, bounded by the number of keys (states × tiers × domains × sources, days, authors ×
    days) times the shards, never by the number of items."""
    out: dict[str, list[tuple[str, int]]] = {name: [] for name in names}
    prefix = "" if project is None else f"{project.pk}|"
    rows = DashboardCounter.objects.filter(name__in=names)
    if keys is not None:
        rows = rows.filter(key__in=[prefix + key for key in keys])
    elif prefix:
        rows = rows.filter(key__startswith=prefix)
    rows = (
        rows.values("name", "key")
        .annotate(total=Sum("n"))
        .filter(total__gt=0)
        .order_by()
        .values_list("name", "key", "total")
    )
    for name, key, n in rows:
        out[name].append((key[len(prefix) :], n))
    return out


def counters_by_row(name: str, ids, values, *, project) -> dict[int, dict[str, int]]:
    """The ``name`` counters keyed ``<id>|<value>`` for these ids (a page's rows) and values
    (states, statuses) in ``project``, as ``{id: {value: n}}`` (zero counts left out). One
    query, none when there is no id."""
    keys = [f"{pk}|{value}" for pk in ids for value in values]
    counts: dict[int, dict[str, int]] = {}
    for key, n in counter_rows(name, keys=keys, project=project)[name] if keys else ():
        pk, _, value = key.partition("|")
        counts.setdefault(int(pk), {})[value] = n
    return counts


def list_author_flag_rates(*, project, now: dt.datetime | None = None) -> list[AuthorFlagRate]:
    """Flags received ÷ reviews received per author, overall and over the recent window
    (``project``'s ``FLAG_RATE_WINDOW_DAYS``, default 4 weeks, counted in whole UTC days from
    the window's first day), judged against the project's threshold (``project=None``: the
    installation's). From the maintained per-author, per-day counters: two queries."""
    rows = counter_rows("author_reviews", "author_flags", project=project)
    rates = _flag_rates(rows, project=project, now=now)
    names = (
        dict(
            get_user_model()
            .objects.filter(pk__in=[r.author_id for r in rates])
            .values_list("pk", "username")
        )
        if rates
        else {}
    )
    return sorted(
        (replace(r, username=names.get(r.author_id, "")) for r in rates),
        key=lambda r: r.username,
    )


def list_author_flag_rates_by_project(
    *, projects, now: dt.datetime | None = None
) -> dict[int, list[AuthorFlagRate]]:
    """:func:`list_author_flag_rates` of several projects at once, without the usernames (what
    the projects home counts alerts from): ``{project id: rates}``, one query whatever the
    number of projects."""
    projects = list(projects)
    out: dict[int, list[AuthorFlagRate]] = {p.pk: [] for p in projects}
    if not projects:
        return out
    prefixes = Q()
    for p in projects:
        prefixes |= Q(key__startswith=f"{p.pk}|")
    grouped: dict[int, dict[str, list[tuple[str, int]]]] = {
        p.pk: {"author_reviews": [], "author_flags": []} for p in projects
    }
    found = (
        DashboardCounter.objects.filter(prefixes, name__in=("author_reviews", "author_flags"))
        .values("name", "key")
        .annotate(total=Sum("n"))
        .filter(total__gt=0)
        .order_by()
        .values_list("name", "key", "total")
    )
    for name, key, n in found:
        pk, _, rest = key.partition("|")
        grouped[int(pk)][name].append((rest, n))
    for p in projects:
        out[p.pk] = _flag_rates(grouped[p.pk], project=p, now=now)
    return out


def _flag_rates(rows: dict, *, project, now: dt.datetime | None) -> list[AuthorFlagRate]:
    """The authors' flag rates from their ``author_reviews`` / ``author_flags`` counter rows
    (keys ``<author>|<day>``), against ``project``'s settings; no username (reads nothing)."""
    since = (now or timezone.now()) - dt.timedelta(
        days=int(curation_setting("FLAG_RATE_WINDOW_DAYS", project=project))
    )
    threshold = Decimal(str(curation_setting("FLAG_RATE_THRESHOLD", project=project)))
    minimum = int(curation_setting("FLAG_RATE_MIN_REVIEWS", project=project))
    first_day = since.astimezone(dt.UTC).date().isoformat()
    totals: dict[int, list[int]] = {}
    for index, name in enumerate(("author_reviews", "author_flags")):
        for key, n in rows[name]:
            author, _, day = key.partition("|")
            counts = totals.setdefault(int(author), [0, 0, 0, 0])
            counts[index] += n
            if day >= first_day:
                counts[2 + index] += n
    return [
        AuthorFlagRate(
            author_id=author,
            username="",
            reviews=c[0],
            flags=c[1],
            recent_reviews=c[2],
            recent_flags=c[3],
            threshold=threshold,
            minimum=minimum,
        )
        for author, c in totals.items()
        if c[0]
    ]


SOURCE_GROUPS = {
    Source.PUBLIC_RFP: "public_rfp",
    Source.CUSTOMER_PERMISSIONED: "customer_permissioned",
    Source.SYNTHETIC_HUMAN_VERIFIED: "synthetic",
    Source.LLM_GENERATED: "synthetic",
}


@dataclass(frozen=True)
class SourceShare:
    group: str
    count: int
    share: Decimal  # percent of the gold set
    target: int
    drift: Decimal  # percentage points, actual − target
    warning: bool


def triple_counts(*, project) -> list[tuple[str, str, int, str, int]]:
    """(state, tier, domain id, source, n) of the project's triples, from the maintained triple
    counters (one query)."""
    out = []
    for key, n in counter_rows("triple", project=project)["triple"]:
        state, tier, domain, source = key.split("|")
        out.append((state, tier, int(domain), source, n))
    return out


def source_balance(counts=None, *, project) -> list[SourceShare]:
    """Gold-set shares by source group (LLM-generated counts as synthetic) against ``project``'s
    target, with a warning when one drifts more than its ``SOURCE_DRIFT_POINTS`` points. From the
    maintained triple counters (one query, or none given ``counts`` from :func:`triple_counts`)."""
    targets = curation_setting("SOURCE_TARGETS", project=project)
    counts_by = dict.fromkeys(targets, 0)
    for state, _, _, source, n in counts if counts is not None else triple_counts(project=project):
        if state == TripleState.GOLD:
            group = SOURCE_GROUPS[source]
            counts_by[group] = counts_by.get(group, 0) + n
    total = sum(counts_by.values())
    limit = Decimal(str(curation_setting("SOURCE_DRIFT_POINTS", project=project)))
    shares = []
    for group, target in targets.items():
        share = (
            (Decimal(100) * counts_by[group] / total).quantize(Decimal("0.1"))
            if total
            else Decimal(0)
        )
        drift = share - Decimal(target)
        shares.append(
            SourceShare(
                group, counts_by[group], share, target, drift, bool(total) and abs(drift) > limit
            )
        )
    return shares


def count_by(field: str, *, project, gold_only: bool = False) -> list[dict]:
    qs = Triple.objects.filter(project=project)
    if gold_only:
        qs = qs.filter(state=TripleState.GOLD)
    return list(qs.values(field).annotate(n=Count("id")).order_by(field))


def dashboard_counts(counts=None, *, project) -> dict:
    """Counts by state (all triples) and, for the gold set, by domain and by tier — from the
    maintained triple counters of ``project`` (two queries: counters, domain slugs)."""
    counts = counts if counts is not None else triple_counts(project=project)
    states: dict[str, int] = {}
    by_domain: dict[int, int] = {}
    by_tier: dict[str, int] = {}
    for state, tier, domain, _, n in counts:
        states[state] = states.get(state, 0) + n
        if state == TripleState.GOLD:
            by_domain[domain] = by_domain.get(domain, 0) + n
            by_tier[tier] = by_tier.get(tier, 0) + n
    slugs = dict(Domain.objects.filter(project=project, pk__in=by_domain).values_list("pk", "slug"))
    return {
        "states": [(s, states.get(s.value, 0)) for s in TripleState],
        "gold_by_domain": sorted(
            ({"domain__slug": slugs[d], "n": n} for d, n in by_domain.items() if d in slugs),
            key=lambda r: r["domain__slug"],
        ),
        "gold_by_tier": [(Tier(t).label, by_tier[t]) for t in sorted(by_tier)],
        "total": sum(states.values()),
    }


def list_quality_entries(*, project):
    """The project's quality-tracker entries with what their rows show."""
    return (
        QualityTrackerEntry.objects.filter(project=project)
        .select_related("triple__domain", "author", "revision")
        .prefetch_related("reviewers")
    )


def recent_quality_entries(limit: int = 10, *, project) -> list:
    """The newest ``limit`` quality-tracker entries with what their rows show: the entries'
    keys first (an index walk), then the joined rows of just those (two queries; a join of
    the whole tracker with triples and revisions made the planner scan both)."""
    ids = list(
        QualityTrackerEntry.objects.filter(project=project)
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)[:limit]
    )
    return list(list_quality_entries(project=project).filter(pk__in=ids)) if ids else []


def list_needs_rereview(*, project):
    """The triples of ``project`` :func:`~goldset.rules.triple_states.needs_rereview_q` names,
    oldest change
    first (``updated_at``, ``id``: the ``triple_needs_rereview`` partial index, so a page is an
    index walk whatever the number of triples). Annotated with ``newest_version``; everything
    the rows show is joined (constant queries)."""
    return (
        Triple.objects.filter(needs_rereview_q(), project=project)
        .annotate(
            newest_version=Subquery(
                newest_version_of("current_revision__expected_block_version__block_id")
            )
        )
        .select_related(*TRIPLE_JOINS)
        .order_by("updated_at", "id")
    )


def page_needs_rereview(*, project, cursor: str | None, size: int) -> KeysetPage:
    """One keyset page of :func:`list_needs_rereview` after ``cursor`` (Http404 when bad)."""
    return keyset_page(
        list_needs_rereview(project=project), fields=("updated_at", "id"), cursor=cursor, size=size
    )


def list_working_slices(*, project):
    return (
        WorkingSlice.objects.filter(project=project).select_related("drawn_by").order_by("-quarter")
    )


def get_working_slice(*, project, quarter: str) -> WorkingSlice:
    """A working slice of ``project``; Http404 for another project's."""
    return get_object_or_404(
        WorkingSlice.objects.select_related("drawn_by"), project=project, quarter=quarter
    )


def list_slice_triples(*, working_slice: WorkingSlice):
    return (
        Triple.objects.filter(project_id=working_slice.project_id, pk__in=working_slice.triple_ids)
        .select_related(*TRIPLE_JOINS)
        .order_by("domain__slug", "external_id")
    )


def list_spot_check_draws(*, project):
    return SpotCheckDraw.objects.filter(project=project).select_related("drawn_by")


# ---------------------------------------------------------------- customers


def list_customers(*, project, cursor: str | None = None, size: int) -> KeysetPage:
    """One keyset page of ``project``'s customers by name, each with whether a permission is
    active and its
    triples (``triple_count``, ``gold_count``) from the maintained ``customer_triples``
    counters: two queries, whatever the number of customers and triples. Raises Http404 for a
    malformed cursor."""
    active = CustomerPermission.objects.filter(customer=OuterRef("pk"), revoked_at__isnull=True)
    page = keyset_page(
        Customer.objects.filter(project=project).annotate(active=Exists(active)),
        fields=("name", "id"),
        cursor=cursor,
        size=size,
    )
    counts = counters_by_row(
        "customer_triples", [c.pk for c in page.items], TripleState.values, project=project
    )
    for customer in page.items:
        by_state = counts.get(customer.pk, {})
        customer.triple_count = sum(by_state.values())
        customer.gold_count = by_state.get(TripleState.GOLD, 0)
    return page


def get_customer(*, project, slug: str) -> Customer:
    """A customer of ``project`` with its grants; Http404 for another project's."""
    return get_object_or_404(
        Customer.objects.prefetch_related(
            Prefetch(
                "permissions",
                queryset=CustomerPermission.objects.select_related("granted_by", "revoked_by"),
            )
        ),
        project=project,
        slug=slug,
    )


def list_active_customers(*, project):
    active = CustomerPermission.objects.filter(customer=OuterRef("pk"), revoked_at__isnull=True)
    return Customer.objects.filter(Exists(active), project=project).order_by("name")


# ---------------------------------------------------------------- the gold set (export shape)


def list_gold_triples(*, domain=None, tier=None, source=None, public_only: bool = False):
    """The gold set as issue 7 freezes it: triples in state ``gold`` (so never revoked, dropped,
    retired or awaiting re-review), never a customer triple without an active grant, and with
    ``public_only`` no customer-permissioned triple at all. Everything :func:`gold_row` needs
    is joined or prefetched (constant queries)."""
    active = CustomerPermission.objects.filter(
        customer=OuterRef("customer_id"), revoked_at__isnull=True
    )
    qs = Triple.objects.filter(state=TripleState.GOLD).exclude(
        Q(source=Source.CUSTOMER_PERMISSIONED) & ~Exists(active)
    )
    if public_only:
        qs = qs.exclude(source=Source.CUSTOMER_PERMISSIONED)
    if domain:
        qs = qs.filter(domain__slug=getattr(domain, "slug", domain))
    if tier:
        qs = qs.filter(tier=tier)
    if source:
        qs = qs.filter(source=source)
    return (
        qs.select_related(*TRIPLE_JOINS)
        .prefetch_related(
            Prefetch(
                "current_revision__reviews",
                queryset=Review.objects.select_related("reviewer", "assignment").order_by(
                    "assignment__slot"
                ),
            )
        )
        .order_by("external_id")
    )


def gold_row(triple: Triple) -> dict:
    """One line of gold JSONL (DESIGN.md §9); :mod:`goldset.services.triples` imports this shape."""
    revision = triple.current_revision
    version = revision.expected_block_version
    values = {
        "external_id": triple.external_id,
        "question": revision.question,
        "expected_answer": revision.expected_answer,
        "superseded_reason": revision.superseded_reason,
        "block_id": version.block.block_id,
        "document_id": version.block.document.document_id,
        "version": version.version,
        "page_start": version.page_start,
        "page_end": version.page_end,
        "sha256": version.sha256,
        "domain": triple.domain.slug,
        "difficulty": triple.difficulty,
        "task_type": triple.task_type,
        "tier": triple.tier,
        "source": triple.source,
        "author": triple.author.username,
        "added_at": triple.added_at,
        "resolution": triple.resolution,
        "customer": triple.customer.slug if triple.customer_id else None,
        **_origin_values(triple),
    }
    return _gold_row(values, [r.reviewer.username for r in revision.reviews.all()])


# The columns gold_row reads, as ``values_list`` paths (the order of ``_gold_row``'s keys).
_BLOCK_VERSION = "current_revision__expected_block_version__"
GOLD_ROW_COLUMNS = {
    "external_id": "external_id",
    "question": "current_revision__question",
    "expected_answer": "current_revision__expected_answer",
    "superseded_reason": "current_revision__superseded_reason",
    "block_id": f"{_BLOCK_VERSION}block__block_id",
    "document_id": f"{_BLOCK_VERSION}block__document__document_id",
    "version": f"{_BLOCK_VERSION}version",
    "page_start": f"{_BLOCK_VERSION}page_start",
    "page_end": f"{_BLOCK_VERSION}page_end",
    "sha256": f"{_BLOCK_VERSION}sha256",
    "domain": "domain__slug",
    "difficulty": "difficulty",
    "task_type": "task_type",
    "tier": "tier",
    "source": "source",
    "author": "author__username",
    "added_at": "added_at",
    "resolution": "resolution",
    "customer": "customer__slug",
    "origin_record": "origin__record_public_id",
    "origin_trace": "origin__trace_id",
    "origin_rule": "origin__sampling_rule",
}


def _origin_values(triple: Triple) -> dict:
    origin = getattr(triple, "origin", None)  # joined by TRIPLE_JOINS
    return {
        "origin_record": origin.record_public_id if origin else None,
        "origin_trace": origin.trace_id if origin else None,
        "origin_rule": origin.sampling_rule if origin else None,
    }


def iter_gold_rows(triples, *, batch: int = 5000) -> Iterator[dict]:
    """:func:`gold_row` of every triple of ``triples`` (a :func:`list_gold_triples` queryset,
    filtered at will), in its order, without building a model object: one streamed query of
    plain columns and one query of reviewer names per ``batch`` triples. Same rows, byte for
    byte, as :func:`gold_row` (a test compares them)."""
    names = list(GOLD_ROW_COLUMNS)
    plain = triples.select_related(None).prefetch_related(None)
    columns = plain.values_list("current_revision_id", *GOLD_ROW_COLUMNS.values())
    chunk: list[tuple] = []
    for row in columns.iterator(chunk_size=batch):
        chunk.append(row)
        if len(chunk) >= batch:
            yield from _gold_rows_of(chunk, names)
            chunk = []
    yield from _gold_rows_of(chunk, names)


def _gold_rows_of(chunk: list[tuple], names: list[str]) -> Iterator[dict]:
    if not chunk:
        return
    reviewers: dict[int, list[str]] = {}
    for revision_id, username in (
        Review.objects.filter(revision_id__in=one_of([row[0] for row in chunk], of="bigint"))
        .order_by("revision_id", "assignment__slot")
        .values_list("revision_id", "reviewer__username")
    ):
        reviewers.setdefault(revision_id, []).append(username)
    for row in chunk:
        yield _gold_row(dict(zip(names, row[1:], strict=True)), reviewers.get(row[0], []))


def _gold_row(v: dict, reviewed_by: list[str]) -> dict:
    metadata = {
        "domain": v["domain"],
        "difficulty": v["difficulty"],
        "task_type": v["task_type"],
        "tier": v["tier"],
        "source": v["source"],
        "added_by": v["author"],
        "added_at": v["added_at"].date().isoformat(),
        "reviewed_by": reviewed_by,
        "resolution": v["resolution"],
    }
    if v["customer"] is not None:
        metadata["customer"] = v["customer"]
    if v["origin_record"] is not None:
        # promoted from a labeled production record (issue 28): where it came from
        metadata["provenance"] = {
            "answer_record": v["origin_record"],
            "trace_id": v["origin_trace"] or None,
            "sampling_rule": v["origin_rule"] or None,
        }
    if v["superseded_reason"]:
        # pinned to superseded text on purpose; the importer reads the reason back (check_pin)
        metadata["superseded_reason"] = v["superseded_reason"]
    return {
        "id": v["external_id"],
        "question": v["question"],
        "expected_block": {
            "block_id": v["block_id"],
            "document_id": v["document_id"],
            "version": v["version"],
            "page_range": page_range_of(v["page_start"], v["page_end"]),
            "sha256": v["sha256"],
        },
        "expected_answer": v["expected_answer"],
        "metadata": metadata,
    }


# ---------------------------------------------------------------- the API's reads (issue 29)


def list_reviews_for(*, project, user, triple: str = ""):
    """The reviews of ``project`` the pages show ``user``, as one query: their own (the review
    queue and page), and on the triples :func:`list_triples_for` lets them see, the reviews of
    every revision no longer under review (:func:`revision_history`'s rule: reviews stay blind
    until the revision is resolved). ``triple``: one triple's reviews (its id). Newest first."""
    under_review = Q(
        revision__triple__current_revision_id=F("revision_id"),
        revision__triple__state=TripleState.PENDING_REVIEW,
    )
    seen = list_triples_for(project=project, user=user).values("pk")
    qs = Review.objects.filter(
        Q(reviewer=user) | (Q(revision__triple__in=seen) & ~under_review),
        revision__triple__project=project,
    )
    if triple:
        qs = qs.filter(revision__triple__external_id=triple)
    return qs.select_related("reviewer", "revision__triple", "assignment").order_by("-id")


def get_review_for(*, project, user, pk: int) -> Review:
    """One review of :func:`list_reviews_for`; Http404 for any other."""
    review = list_reviews_for(project=project, user=user).filter(pk=pk).first()
    if review is None:
        raise Http404("No such review.")
    return review
