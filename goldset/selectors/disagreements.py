"""The items behind an agreement alert, for the lead: where an annotator pair (or one annotator
and their co-raters, or the annotators of a task type) gave different values on an axis, and the
links that lead from each alert to its pair's confusion matrix and to those items.

Leads see who rated what here, as on the agreement dashboard (the protocol lets them see who
agrees with whom); downloads keep their pseudonyms (``workbench.access``)."""

from dataclasses import dataclass
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.core.paginator import Paginator

from goldset.models import AnswerRecord, Label, Review, Tier, TripleRevision
from goldset.rules.axes import AXES
from goldset.rules.blinding import LABELERS_HIDDEN_WHILE
from goldset.rules.display import display
from goldset.selectors.agreement import PROTOCOL_LABELS, Alert, display_names

PAGE_SIZE = 25


@dataclass(frozen=True)
class LinkedAlert:
    """An alert with the query strings of its confusion matrix and its disagreeing items."""

    alert: Alert
    matrix: str = ""  # for quality:agreement, with the pair chosen
    items: str = ""  # for quality:disagreements

    def __getattr__(self, name):
        return getattr(self.alert, name)


def link_alerts(alerts: list[Alert]) -> list[LinkedAlert]:
    """Each alert with its links (one query for the annotators' logins, whatever the count)."""
    ids = {pk for a in alerts for pk in a.subjects}
    logins = (
        dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
        if ids
        else {}
    )
    out = []
    for a in alerts:
        scope = {k: v for k, v in a.scope.items() if v}
        if not {"protocol", "axis"} <= set(scope):
            out.append(LinkedAlert(a))
            continue
        people = [logins[pk] for pk in a.subjects if pk in logins]
        if len(people) != len(a.subjects):
            out.append(LinkedAlert(a))  # an annotator since deleted: nothing to link to
            continue
        pair = dict(zip(("a", "b"), people, strict=False))
        matrix = ""
        if len(people) == 2:
            matrix = urlencode({"protocol": scope["protocol"], "axis": scope["axis"], **pair})
        out.append(LinkedAlert(a, matrix=matrix, items=urlencode(scope | pair)))
    return out


@dataclass(frozen=True)
class Rating:
    who: str
    value: str


@dataclass(frozen=True)
class DisagreementRow:
    """One item with differing values: ``ratings`` in the order asked (the pair first)."""

    kind: str  # "answer_record" or "triple_revision"
    key: str  # public id (answer record) or triple id (revision)
    label: str  # what the lead reads: the record's public id, the triple's id and revision
    task_type: str
    ratings: list[Rating]
    needs_adjudication: bool = False


@dataclass
class Disagreements:
    protocol: str
    axis: str
    task_type: str
    people: list[str]  # display names of the annotators asked about
    page: object  # a Paginator page of DisagreementRow
    error: str = ""


def _ratings(*, project, protocol: str, axis: str, user_ids: list[int], task_type: str):
    """(item id, annotator id, value) for the project's gold items; one query."""
    if protocol == "triple_review":
        rows = Review.objects.filter(
            revision__triple__project=project, revision__triple__tier=Tier.GOLD, spot_check=False
        )
        if task_type:
            rows = rows.filter(revision__triple__task_type=task_type)
        if len(user_ids) == 2:
            rows = rows.filter(reviewer_id__in=user_ids)
        elif user_ids:
            rows = rows.filter(revision__reviews__reviewer_id=user_ids[0])
        return rows.distinct().values_list("revision_id", "reviewer_id", "verdict")
    rows = Label.objects.filter(
        record__project=project,
        record__tier=Tier.GOLD,
        record__is_calibration=False,
        assignment__is_calibration=False,
    )
    if task_type:
        rows = rows.filter(record__question__task_type=task_type)
    if len(user_ids) == 2:
        rows = rows.filter(annotator_id__in=user_ids)
    elif user_ids:
        rows = rows.filter(record__labels__annotator_id=user_ids[0])
    return rows.distinct().values_list("record_id", "annotator_id", axis)


def _disagreeing(values: dict[int, dict[int, str]], user_ids: list[int]) -> list[int]:
    """Item ids whose values differ: between the pair, between the one annotator and any
    co-rater, or among all raters (at least two)."""
    out = []
    for item, by in values.items():
        if len(user_ids) == 2:
            first, second = user_ids
            if first in by and second in by and by[first] != by[second]:
                out.append(item)
        elif user_ids:
            mine = by.get(user_ids[0])
            if mine is not None and any(v != mine for u, v in by.items() if u != user_ids[0]):
                out.append(item)
        elif len(by) >= 2 and len(set(by.values())) > 1:
            out.append(item)
    return sorted(out)


def _rows(
    project, protocol: str, item_ids: list[int], values, names, order
) -> list[DisagreementRow]:
    """The page's items (one query), ratings ordered: the asked-about annotators first."""

    def ratings(by):
        ranked = sorted(
            by.items(), key=lambda kv: (order.get(kv[0], len(order)), names.get(kv[0], ""))
        )
        return [Rating(names.get(u, "a former annotator"), display(v)) for u, v in ranked]

    if protocol == "triple_review":
        revisions = TripleRevision.objects.filter(
            triple__project=project, pk__in=item_ids
        ).select_related("triple")
        found = {r.pk: r for r in revisions}
        return [
            DisagreementRow(
                "triple_revision",
                str(found[i].triple_id),
                f"{found[i].triple.external_id} r{found[i].number}",
                found[i].triple.task_type,
                ratings(values[i]),
            )
            for i in item_ids
            if i in found
        ]
    records = AnswerRecord.objects.filter(project=project, pk__in=item_ids).select_related(
        "question"
    )
    found = {r.pk: r for r in records}
    blind = LABELERS_HIDDEN_WHILE
    return [
        DisagreementRow(
            "answer_record",
            found[i].public_id,
            found[i].public_id,
            found[i].question.task_type,
            # awaiting adjudication: the lead adjudicates blind, so no name beside a value
            [Rating("", display(v)) for v in sorted(values[i].values())]
            if found[i].status in blind
            else ratings(values[i]),
            needs_adjudication=found[i].status in blind,
        )
        for i in item_ids
        if i in found
    ]


def list_disagreements(
    *,
    project,
    protocol: str,
    axis: str,
    first: str = "",
    second: str = "",
    task_type: str = "",
    page=1,
) -> Disagreements:
    """The project's gold items on which the named annotators (by login: none, one or a pair) gave different
    values on ``axis``, oldest first, paginated. Four queries whatever the data size (the
    logins, the ratings, the page's items, their raters' names)."""
    empty = Paginator([], PAGE_SIZE).get_page(1)
    result = Disagreements(protocol, axis, task_type, [], empty)
    if protocol not in PROTOCOL_LABELS or axis not in AXES:
        result.error = "Choose a protocol and an axis from the dashboard."
        return result
    if (protocol == "triple_review") != (axis == "verdict"):
        result.error = f"{display(protocol)} are not rated on {display(axis).lower()}."
        return result
    if first and first == second:
        result.error = "Choose two different annotators."
        return result
    logins = [u for u in (first, second) if u]
    found = (
        dict(get_user_model().objects.filter(username__in=logins).values_list("username", "pk"))
        if logins
        else {}
    )
    if len(found) != len(logins):
        result.error = "No such annotator."
        return result
    user_ids = [found[u] for u in logins]
    values: dict[int, dict[int, str]] = {}
    for item, who, value in _ratings(
        project=project, protocol=protocol, axis=axis, user_ids=user_ids, task_type=task_type
    ):
        if axis == "severe_safety":
            value = "yes" if value else "no"
        values.setdefault(item, {})[who] = value
    page_obj = Paginator(_disagreeing(values, user_ids), PAGE_SIZE).get_page(page)
    on_page = list(page_obj.object_list)
    names = display_names({u for i in on_page for u in values[i]} | set(user_ids))
    order = {u: k for k, u in enumerate(user_ids)}
    page_obj.object_list = _rows(project, protocol, on_page, values, names, order)
    result.people = [names.get(u, "?") for u in user_ids]
    result.page = page_obj
    return result
