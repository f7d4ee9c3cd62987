"""Issue 25: a frozen gold version also stores its TREC qrels (``qid 0 docid rel``), a new
format of ``GoldVersionFile`` (a choice only: no SQL)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("goldset", "0030_scale_person_time_indexes"),
    ]

    operations = [
        migrations.AlterField(
            model_name="goldversionfile",
            name="format",
            field=models.CharField(
                choices=[
                    ("gold_jsonl", "Gold JSONL"),
                    ("unrag_json", "Unrag dataset JSON v1"),
                    ("probe_questions", "PROBE question file"),
                    ("probe_packets", "PROBE evidence packets"),
                    ("adjudication", "Adjudication export"),
                    ("trec_qrels", "TREC qrels"),
                    ("manifest", "Manifest"),
                ],
                max_length=20,
            ),
        ),
    ]
