"""Adapters from the two protocols to the agreement service's rows (one query each; rating rows in
primary-key order, so a figure recomputed alone sees its rows in the order a full recompute does).

* triple reviews: one rating per review on the axis ``verdict`` (confirm / flag);
* answer labels: three ratings per production label — ``acceptability``, ``grounding`` and
  ``severe_safety`` (yes / no); calibration labels are excluded;
* spot checks: a TRIAGE case's first look against its spot-check look (verdicts, or
  acceptability), in the ISO week the spot check was made;
* per-annotator facts: volume, flag rate given (reviews), rationale coverage and agreement with
  the adjudicated acceptability (labels).

Every adapter reads one project's rows (``project``): its figures never include another
project's reviews or labels.
"""

import io
from collections import defaultdict

import numpy as np
import pandas as pd
import pyarrow as pa
from django.db import connection
from django.db.models import CharField, Count, F, Func, Q
from pandas.api.types import union_categoricals
from pyarrow import csv as pa_csv

from goldset.models import Label, Review, Verdict
from goldset.rules.calendar import iso_week

TRIPLES, ANSWERS = "triple_review", "answer_label"


def _reviews(project):
    return Review.objects.filter(revision__triple__project=project)


def triple_review_ratings(*, project, triples=None):
    """Every review (spot checks included) of the project as a ``verdict`` rating of its
    revision; with ``triples`` (a queryset of triple primary keys, or a list) only their
    revisions' reviews."""
    reviews = _reviews(project)
    if triples is not None:
        reviews = reviews.filter(revision__triple_id__in=triples)
    rows = reviews.order_by("pk").values_list(
        "revision_id",
        "reviewer_id",
        "verdict",
        "revision__triple__tier",
        "revision__triple__task_type",
        "revision__triple__domain__slug",
        "submitted_at",
    )
    for revision, reviewer, verdict, tier, task_type, domain, at in rows.iterator(chunk_size=5000):
        yield (
            TRIPLES,
            f"r{revision}",
            reviewer,
            "verdict",
            verdict,
            tier,
            task_type,
            domain,
            iso_week(at),
        )


def _production_labels(project):
    return Label.objects.filter(
        record__project=project, record__is_calibration=False, assignment__is_calibration=False
    )


def answer_label_ratings(*, project):
    rows = (
        _production_labels(project)
        .order_by("pk")
        .values_list(
            "record_id",
            "annotator_id",
            "acceptability",
            "grounding",
            "severe_safety",
            "record__tier",
            "record__question__task_type",
            "record__question__domain__slug",
            "created_at",
        )
    )
    for (
        record,
        annotator,
        acceptability,
        grounding,
        severe,
        tier,
        task_type,
        domain,
        at,
    ) in rows.iterator(chunk_size=5000):
        item, week = f"a{record}", iso_week(at)
        yield (
            ANSWERS,
            item,
            annotator,
            "acceptability",
            acceptability,
            tier,
            task_type,
            domain,
            week,
        )
        yield (ANSWERS, item, annotator, "grounding", grounding, tier, task_type, domain, week)
        yield (
            ANSWERS,
            item,
            annotator,
            "severe_safety",
            "yes" if severe else "no",
            tier,
            task_type,
            domain,
            week,
        )


def triple_spot_checks(*, project):
    looks: dict[int, dict] = defaultdict(dict)
    rows = (
        _reviews(project)
        .filter(revision__spot_check=True)
        .values_list("revision_id", "verdict", "spot_check", "submitted_at")
    )
    for revision, verdict, is_spot, at in rows:
        looks[revision]["spot" if is_spot else "first"] = (verdict, at)
    for revision, pair in looks.items():
        if "spot" in pair and "first" in pair:
            yield (
                TRIPLES,
                f"r{revision}",
                iso_week(pair["spot"][1]),
                pair["spot"][0] == pair["first"][0],
            )


def answer_spot_checks(*, project):
    looks: dict[int, list] = defaultdict(list)
    rows = (
        _production_labels(project)
        .filter(record__spot_check=True)
        .values_list("record_id", "acceptability", "record__spot_check_week")
    )
    for record, acceptability, week in rows:
        looks[record].append((acceptability, week))
    for record, labels in looks.items():
        if len(labels) == 2:
            yield (ANSWERS, f"a{record}", labels[0][1], labels[0][0] == labels[1][0])


def annotator_facts(*, project):
    reviews = (
        _reviews(project)
        .order_by()
        .values("reviewer_id")
        .annotate(n=Count("id"), flags=Count("id", filter=Q(verdict=Verdict.FLAG)))
    )
    for r in reviews:
        yield (TRIPLES, "volume", r["reviewer_id"], float(r["n"]), r["n"])
        yield (TRIPLES, "flag_rate", r["reviewer_id"], r["flags"] / r["n"], r["n"])
    labels = (
        _production_labels(project)
        .order_by()
        .values("annotator_id")
        .annotate(
            n=Count("id"),
            with_rationale=Count("id", filter=~Q(rationale="")),
            adjudicated=Count("id", filter=Q(record__adjudication__isnull=False)),
            matching=Count("id", filter=Q(record__adjudication__acceptability=F("acceptability"))),
        )
    )
    for r in labels:
        who = r["annotator_id"]
        yield (ANSWERS, "volume", who, float(r["n"]), r["n"])
        yield (ANSWERS, "rationale_coverage", who, r["with_rationale"] / r["n"], r["n"])
        if r["adjudicated"]:
            yield (
                ANSWERS,
                "adjudication_agreement",
                who,
                r["matching"] / r["adjudicated"],
                r["adjudicated"],
            )


# ---------------------------------------------------------------- columnar reads (PostgreSQL)
#
# At a million items the row-by-row adapters above build millions of Python tuples. On
# PostgreSQL the recompute reads the same rows, in the same order, with COPY into Arrow columns
# instead (``rating_frames``); a test checks both give the same frame.

_ISO_WEEK_SQL = "to_char(%(expressions)s AT TIME ZONE 'UTC', 'IYYY-\"W\"IW')"


def _iso_week(field: str) -> Func:
    """The ISO week of a timestamp in SQL, as ``goldset.rules.calendar.iso_week`` writes it."""
    return Func(F(field), template=_ISO_WEEK_SQL, output_field=CharField())


# Ids as integers; the few distinct scope values and labels dictionary-encoded (categoricals).
_ARROW_TYPES = {
    "item": pa.int64(),
    "annotator": pa.int64(),
    **{
        n: pa.dictionary(pa.int32(), pa.string())
        for n in ("tier", "task_type", "domain", "week", "verdict", "acceptability", "grounding")
    },
}


def _copy_frame(queryset, names: list[str]) -> pd.DataFrame:
    """The queryset's rows (``values_list`` in ``names`` order) through ``COPY … TO STDOUT``."""
    sql, params = queryset.query.sql_with_params()
    buffer = io.BytesIO()
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)", params) as copy:
            for chunk in copy:
                buffer.write(chunk)
    if not buffer.tell():
        return pd.DataFrame({n: pd.Series(dtype=object) for n in names})
    buffer.seek(0)
    table = pa_csv.read_csv(
        buffer,
        # One thread: Arrow's reader threads each keep their own buffers (issue 26: tens of MB
        # more at a freeze's peak for a read of a second); the same table either way.
        read_options=pa_csv.ReadOptions(column_names=names, use_threads=False),
        convert_options=pa_csv.ConvertOptions(
            column_types={n: _ARROW_TYPES.get(n, pa.string()) for n in names},
            strings_can_be_null=False,
        ),
    )
    return table.to_pandas(use_threads=False)


def _sorted_categorical(values) -> pd.Categorical:
    """``values`` as a categorical of its distinct values in sorted order (what
    ``astype("category")`` makes of text)."""
    values = pd.Categorical(values)
    return values.set_categories(sorted(values.categories))


def _frame(protocol, item_prefix, data: pd.DataFrame, axes: dict) -> pd.DataFrame:
    """Rating rows of one protocol: one block per axis, rows in the source's order (the order
    within each axis is what the figures depend on). Every text column is a categorical built
    from codes (a handful of distinct values over millions of rows)."""
    n, k = len(data), len(axes)

    def tiled(values: pd.Categorical) -> pd.Categorical:
        return pd.Categorical.from_codes(np.tile(values.codes, k), categories=values.categories)

    def constant(value: str, count: int) -> pd.Categorical:
        return pd.Categorical.from_codes(np.zeros(count, dtype=np.int8), categories=[value])

    # Items: one string per item instead of one per rating row.
    codes, ids = pd.factorize(data["item"])
    items = pd.Categorical.from_codes(codes, categories=item_prefix + pd.Index(ids).astype(str))
    names = sorted(axes)
    frame = pd.DataFrame(
        {
            "protocol": constant(protocol, n * k),
            "item": tiled(items),
            "annotator": np.tile(data["annotator"].to_numpy(), k),
            "axis": pd.Categorical.from_codes(
                np.repeat([names.index(a) for a in axes], n), categories=names
            ),
            "value": union_categoricals(
                [pd.Categorical(v) for v in axes.values()],
                sort_categories=True,
            )
            if n
            else pd.Categorical([]),
            **{c: tiled(_sorted_categorical(data[c])) for c in SCOPE_COLUMNS},
        }
    )
    return frame


SCOPE_COLUMNS = ("tier", "task_type", "domain", "week")


def triple_review_frame(*, project, triples=None) -> pd.DataFrame:
    """:func:`triple_review_ratings` as columns (the same rows in the same order)."""
    names = ["item", "annotator", "verdict", "tier", "task_type", "domain", "week"]
    reviews = _reviews(project)
    if triples is not None:
        reviews = reviews.filter(revision__triple_id__in=triples)
    rows = (
        reviews.order_by("pk")
        .annotate(week=_iso_week("submitted_at"))
        .values_list(
            "revision_id",
            "reviewer_id",
            "verdict",
            "revision__triple__tier",
            "revision__triple__task_type",
            "revision__triple__domain__slug",
            "week",
        )
    )
    data = _copy_frame(rows, names)
    return _frame(TRIPLES, "r", data, {"verdict": data["verdict"]})


def answer_label_frame(*, project) -> pd.DataFrame:
    names = [
        "item",
        "annotator",
        "acceptability",
        "grounding",
        "severe",
        "tier",
        "task_type",
        "domain",
        "week",
    ]
    rows = (
        _production_labels(project)
        .order_by("pk")
        .annotate(week=_iso_week("created_at"))
        .values_list(
            "record_id",
            "annotator_id",
            "acceptability",
            "grounding",
            "severe_safety",
            "record__tier",
            "record__question__task_type",
            "record__question__domain__slug",
            "week",
        )
    )
    data = _copy_frame(rows, names)
    severe = pd.Categorical.from_codes(
        (data["severe"].to_numpy() == "t").astype(np.int8), categories=["no", "yes"]
    )
    return _frame(
        ANSWERS,
        "a",
        data,
        {
            "acceptability": data["acceptability"],
            "grounding": data["grounding"],
            "severe_safety": severe,
        },
    )


FRAME_SOURCES = {TRIPLES: triple_review_frame, ANSWERS: answer_label_frame}
