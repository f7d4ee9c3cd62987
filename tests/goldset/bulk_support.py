"""Bulk pools for scaling tests (PostgreSQL): clone one factory-made row many times in a single
``INSERT … SELECT … generate_series`` so a test can build thousands of rows in well under a second,
then ANALYZE so the planner sees the real sizes."""

from django.db import connection

from goldset.models import (
    AnswerRecord,
    Label,
    LabelAssignment,
    Question,
    Review,
    ReviewAssignment,
    Run,
    Tier,
    Triple,
    TripleRevision,
)
from goldset.rules.labeling import QUEUE_SHUFFLE_SEED
from goldset.services.labeling import add_domain_slots

QUEUE_RANK_SQL = (
    f"('x' || substr(encode(sha256(convert_to('{QUEUE_SHUFFLE_SEED}:' || {{public_id}}, 'UTF8')),"
    " 'hex'), 1, 15))::bit(60)::bigint"
)


def vacuum_test_database() -> None:
    """VACUUM the test database from a second connection (PostgreSQL). A test's rolled-back rows
    stay as dead tuples until a VACUUM, and the PostgreSQL the suite runs on may have autovacuum
    off: late in a full run, a 200-row page's nested loop read the dead tuples of every earlier
    bulk-seeded test and hit the 30 s statement timeout (never alone). Rows of aborted
    transactions are removable at once, even while this test's transaction is open."""
    if connection.vendor != "postgresql":
        return
    import psycopg

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as vacuuming:
        vacuuming.execute("VACUUM")


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


def grow_decision_pool(*, tag: str, annotator, reviewer) -> None:
    """A completed claim and an acceptable label by ``annotator`` on every answer record grown
    under ``tag`` (:func:`grow_answer_pool`), and a completed claim and a confirming review by
    ``reviewer`` on the current revision of every triple grown under ``tag``
    (:func:`grow_revision_pool`); each claimed slot counted. Untimed (no active time), like
    decisions made before time on item was kept."""
    records = (
        "SELECT r.id FROM goldset_answerrecord r JOIN goldset_question q ON q.id = r.question_id"
        " WHERE q.question_id LIKE %s"
    )
    revisions = "SELECT t.current_revision_id FROM goldset_triple t WHERE t.external_id LIKE %s"
    like = [f"{tag}-%"]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {LabelAssignment._meta.db_table} (record_id, annotator_id, slot,"
            " is_calibration, shuffle_seed, shuffle_key, claimed_at, completed_at)"
            f" SELECT s.id, %s, 1, false, 6601, substr(md5(s.id || ':1'), 1, 16), now(), now()"
            f" FROM ({records}) AS s",
            [annotator.pk, *like],
        )
        cursor.execute(
            f"INSERT INTO {Label._meta.db_table} (acceptability, grounding, severe_safety,"
            " primary_failure, secondary_failures, rationale, created_at, assignment_id,"
            " record_id, annotator_id, evidence_sufficiency, citation_correctness,"
            " conflict_handling, safety_boundary)"
            " SELECT 'acceptable', 'fully_grounded', false, '', '[]'::jsonb, '', a.completed_at,"
            " a.id, a.record_id, a.annotator_id, 'sufficient', 'correct', 'not_applicable',"
            f" 'respected' FROM {LabelAssignment._meta.db_table} a"
            f" WHERE a.annotator_id = %s AND a.record_id IN ({records})",
            [annotator.pk, *like],
        )
        cursor.execute(
            "UPDATE goldset_answerrecord SET assigned_count = assigned_count + 1"
            f" WHERE id IN ({records})",
            like,
        )
        cursor.execute(
            f"INSERT INTO {ReviewAssignment._meta.db_table} (revision_id, reviewer_id, slot,"
            f" spot_check, assigned_at, completed_at) SELECT s.id, %s, 1, false, now(), now()"
            f" FROM ({revisions}) AS s(id)",
            [reviewer.pk, *like],
        )
        cursor.execute(
            f"INSERT INTO {Review._meta.db_table} (assignment_id, revision_id, reviewer_id,"
            " verdict, question_unrealistic, wrong_source_block, answer_not_entailed,"
            " entailment_direction, disagreement_category, comment, spot_check, submitted_at)"
            " SELECT a.id, a.revision_id, a.reviewer_id, 'confirm', false, false, false, '', '',"
            f" '', false, a.completed_at FROM {ReviewAssignment._meta.db_table} a"
            f" WHERE a.reviewer_id = %s AND a.revision_id IN ({revisions})",
            [reviewer.pk, *like],
        )
        cursor.execute(
            "UPDATE goldset_triplerevision SET assigned_count = assigned_count + 1"
            f" WHERE id IN ({revisions})",
            like,
        )
    analyze(LabelAssignment, Label, AnswerRecord, ReviewAssignment, Review, TripleRevision)


def seed_answer_records(
    template: AnswerRecord,
    items: int,
    *,
    tag: str,
    domain_ids,
    task_types=(),
    labels_required: str,
    assigned_count: str,
) -> None:
    """``items`` production records like ``template`` over min(items, 10,000) questions (named
    ``<tag>-q-<n>``, spread over ``domain_ids`` and, when given, ``task_types``) times as many
    runs (``<tag>-run-<n>``) as that takes: GOLD (routed by task type) for 2 questions of 5, else
    TRIAGE; ``labels_required`` and ``assigned_count`` are SQL in which ``{gold}`` is that test.
    Three INSERT … SELECT statements (the benchmarks' seed)."""
    domains = "ARRAY[" + ",".join(str(pk) for pk in domain_ids) + "]"
    n_domains = len(domain_ids)
    n_questions = min(items, 10_000)
    questions = {
        "question_id": f"'{tag}-q-' || s.g",
        "content_sha256": "md5('q' || s.g) || md5('qq' || s.g)",
        "domain_id": f"({domains})[1 + s.g %% {n_domains}]",
    }
    if task_types:
        kinds = "ARRAY[" + ",".join(f"'{t}'" for t in task_types) + "]"
        questions["task_type"] = f"({kinds})[1 + (s.g / 5) %% {len(task_types)}]"
    clone_rows(
        Question,
        template_pk=template.question_id,
        source=f"generate_series(1, {n_questions}) AS s(g)",
        overrides=questions,
    )
    clone_rows(
        Run,
        template_pk=template.run_id,
        source=f"generate_series(1, {-(-items // n_questions)}) AS s(g)",
        overrides={"run_id": f"'{tag}-run-' || s.g"},
    )
    public_id = f"substr(md5('{tag}:' || s.run_id || ':' || s.question_id), 1, 16)"
    gold = "s.question_id %% 5 < 2"  # %% : the SQL runs with parameters
    clone_rows(
        AnswerRecord,
        template_pk=template.pk,
        source=(
            "(SELECT r.id AS run_id, q.id AS question_id, q.domain_id FROM goldset_run r"
            f" CROSS JOIN goldset_question q WHERE r.run_id LIKE '{tag}-run-%%'"
            f" AND q.question_id LIKE '{tag}-q-%%' LIMIT {int(items)}) AS s"
        ),
        overrides={
            "public_id": public_id,
            "run_id": "s.run_id",
            "question_id": "s.question_id",
            "domain_id": "s.domain_id",
            "queue_rank": QUEUE_RANK_SQL.format(public_id=public_id),
            "assigned_count": assigned_count.format(gold=gold),
            "tier": f"CASE WHEN {gold} THEN '{Tier.GOLD}' ELSE '{Tier.TRIAGE}' END",
            "labels_required": labels_required.format(gold=gold),
            "routing_rule": f"CASE WHEN {gold} THEN 'task_type:rag_synthesis' ELSE 'default' END",
        },
    )
