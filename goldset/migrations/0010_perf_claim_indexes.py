"""Issue 17: claims that do not scan the pool.

Answer records get their domain, their seeded (6601) queue rank and a count of claimed slots; a
partial index holds the open production records per domain in rank order. Revisions get a
partial index on those still short of reviewers. Per-domain slots and per-annotator claims become
counters. Existing rows are filled in place (SQL on PostgreSQL, Python elsewhere)."""

import hashlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

QUEUE_SHUFFLE_SEED = 6601

FILL_SQL = f"""
UPDATE goldset_answerrecord AS r SET domain_id = q.domain_id,
    queue_rank = ('x' || substr(encode(sha256(convert_to('{QUEUE_SHUFFLE_SEED}:' || r.public_id,
        'UTF8')), 'hex'), 1, 15))::bit(60)::bigint
FROM goldset_question AS q WHERE q.id = r.question_id;
UPDATE goldset_answerrecord AS r SET assigned_count = a.n
FROM (SELECT record_id, count(*) AS n FROM goldset_labelassignment
      WHERE NOT is_calibration GROUP BY record_id) AS a WHERE a.record_id = r.id;
"""


def fill(apps, schema_editor):
    AnswerRecord = apps.get_model("goldset", "AnswerRecord")
    LabelAssignment = apps.get_model("goldset", "LabelAssignment")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FILL_SQL)
    else:
        batch = []
        for record in AnswerRecord.objects.select_related("question").iterator(chunk_size=2000):
            record.domain_id = record.question.domain_id
            digest = hashlib.sha256(f"{QUEUE_SHUFFLE_SEED}:{record.public_id}".encode())
            record.queue_rank = int(digest.hexdigest()[:15], 16)
            record.assigned_count = LabelAssignment.objects.filter(
                record_id=record.pk, is_calibration=False
            ).count()
            batch.append(record)
            if len(batch) >= 2000:
                AnswerRecord.objects.bulk_update(batch, ["domain", "queue_rank", "assigned_count"])
                batch = []
        AnswerRecord.objects.bulk_update(batch, ["domain", "queue_rank", "assigned_count"])


def fill_loads(apps, schema_editor):
    AnswerRecord = apps.get_model("goldset", "AnswerRecord")
    LabelAssignment = apps.get_model("goldset", "LabelAssignment")
    DomainLabelLoad = apps.get_model("goldset", "DomainLabelLoad")
    AnnotatorDomainLoad = apps.get_model("goldset", "AnnotatorDomainLoad")
    slots = (
        AnswerRecord.objects.filter(is_calibration=False)
        .values("domain_id")
        .annotate(n=models.Sum("labels_required"))
    )
    DomainLabelLoad.objects.bulk_create(
        DomainLabelLoad(domain_id=row["domain_id"], slots=row["n"]) for row in slots
    )
    claims = (
        LabelAssignment.objects.filter(is_calibration=False)
        .values("annotator_id", "record__domain_id")
        .annotate(n=models.Count("id"))
    )
    AnnotatorDomainLoad.objects.bulk_create(
        AnnotatorDomainLoad(
            annotator_id=row["annotator_id"], domain_id=row["record__domain_id"], claimed=row["n"]
        )
        for row in claims
    )


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0009_sec_pseudonyms"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="answerrecord",
            name="domain",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="goldset.domain",
            ),
        ),
        migrations.AddField(
            model_name="answerrecord",
            name="queue_rank",
            field=models.BigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name="answerrecord",
            name="assigned_count",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="answerrecord",
            name="domain",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="+", to="goldset.domain"
            ),
        ),
        migrations.AlterField(
            model_name="answerrecord",
            name="queue_rank",
            field=models.BigIntegerField(),
        ),
        migrations.CreateModel(
            name="DomainLabelLoad",
            fields=[
                (
                    "domain",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        serialize=False,
                        to="goldset.domain",
                    ),
                ),
                ("slots", models.PositiveIntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name="AnnotatorDomainLoad",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("claimed", models.PositiveIntegerField(default=0)),
                (
                    "annotator",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "domain",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="goldset.domain",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("annotator", "domain"), name="annotator_domain_load_once"
                    )
                ],
            },
        ),
        migrations.RunPython(fill_loads, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="answerrecord",
            index=models.Index(
                condition=models.Q(
                    ("is_calibration", False),
                    ("status", "labeling"),
                    ("assigned_count__lt", models.F("labels_required")),
                ),
                fields=["domain", "queue_rank", "id"],
                name="answer_record_open_slots",
            ),
        ),
        migrations.AddIndex(
            model_name="answerrecord",
            index=models.Index(
                condition=models.Q(("is_calibration", False)),
                fields=["status", "created_at", "id"],
                name="answer_record_lead_queue",
            ),
        ),
        migrations.AddIndex(
            model_name="triplerevision",
            index=models.Index(
                condition=models.Q(("assigned_count__lt", models.F("reviewers_needed"))),
                fields=["created_at", "id"],
                name="revision_open_slots",
            ),
        ),
    ]
