"""Bulk pools for scaling tests (PostgreSQL): clone one factory-made row many times in a single
``INSERT … SELECT … generate_series`` so a test can build thousands of rows in well under a second,
then ANALYZE so the planner sees the real sizes."""

from django.db import connection

from goldset.models import AnswerRecord, Question, Triple, TripleRevision
from goldset.rules.labeling import QUEUE_SHUFFLE_SEED
from goldset.services.labeling import add_domain_slots

QUEUE_RANK_SQL = (
    f"('x' || substr(encode(sha256(convert_to('{QUEUE_SHUFFLE_SEED}:' || {{public_id}}, 'UTF8')),"
    " 'hex'), 1, 15))::bit(60)::bigint"
)


def clone_rows(model, *, template_pk: int, source: str, overrides: dict[str, str]) -> None:
    """INSERT one row per row of ``source`` (SQL after FROM, aliased ``s``), copying the template
    row (alias ``t``) except for the columns in ``overrides`` (SQL expressions)."""
    table = model._meta.db_table
    columns = [f.column for f in model._meta.concrete_fields if not f.primary_key]
    values = [overrides.get(c, f't."{c}"') for c in columns]
    names = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({names}) "
            f"SELECT {', '.join(values)} FROM {table} AS t, {source} WHERE t.id = %s",
            [template_pk],
        )


def analyze(*models) -> None:
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ANALYZE {model._meta.db_table}")


def grow_answer_pool(template: AnswerRecord, n: int, *, tag: str) -> None:
    """``n`` more open production records like ``template`` (each with its own question)."""
    clone_rows(
        Question,
        template_pk=template.question_id,
        source=f"generate_series(1, {int(n)}) AS s(g)",
        overrides={
            "question_id": f"'{tag}-' || s.g",
            "content_sha256": f"md5('{tag}-' || s.g) || md5('{tag}' || s.g)",
        },
    )
    public_id = f"substr(md5('{tag}:' || s.id), 1, 16)"
    clone_rows(
        AnswerRecord,
        template_pk=template.pk,
        source=f"(SELECT id FROM goldset_question WHERE question_id LIKE '{tag}-%%') AS s",
        overrides={
            "public_id": public_id,
            "question_id": "s.id",
            "queue_rank": QUEUE_RANK_SQL.format(public_id=public_id),
            "assigned_count": "0",
        },
    )
    add_domain_slots(domain_id=template.domain_id, delta=n * template.labels_required)
    analyze(Question, AnswerRecord)


def grow_revision_pool(template: Triple, n: int, *, tag: str) -> None:
    """``n`` more pending triples like ``template``, each with one unreviewed current revision."""
    clone_rows(
        Triple,
        template_pk=template.pk,
        source=f"generate_series(1, {int(n)}) AS s(g)",
        overrides={"external_id": f"'{tag}-' || s.g", "current_revision_id": "NULL"},
    )
    clone_rows(
        TripleRevision,
        template_pk=template.current_revision_id,
        source=f"(SELECT id FROM goldset_triple WHERE external_id LIKE '{tag}-%%') AS s",
        overrides={"triple_id": "s.id", "assigned_count": "0", "number": "1"},
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE goldset_triple AS t SET current_revision_id = r.id FROM goldset_triplerevision"
            " AS r WHERE r.triple_id = t.id AND t.external_id LIKE %s",
            [f"{tag}-%"],
        )
    analyze(Triple, TripleRevision)
