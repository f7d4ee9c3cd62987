import csv
import json

from django.core.management.base import BaseCommand, CommandError

from goldset.selectors.agreement import CSV_FIELDS, list_agreement_alerts, list_snapshots
from goldset.services.agreement import recompute_agreement_snapshots

SCOPE_KEYS = {"protocol", "axis", "metric", "tier", "task_type", "domain", "week", "subject"}


class Command(BaseCommand):
    help = "Print the stored agreement figures (those of the dashboard) as JSON or CSV."

    def add_arguments(self, parser):
        parser.add_argument(
            "--scope",
            default="",
            help="Filters, e.g. protocol=answer_label,axis=grounding,tier=tier_b",
        )
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument(
            "--recompute", action="store_true", help="Recompute the figures from the labels first."
        )

    def handle(self, *args, scope, format, recompute, **options):
        filters = {}
        for part in filter(None, scope.split(",")):
            key, sep, value = part.partition("=")
            if not sep or key.strip() not in SCOPE_KEYS:
                raise CommandError(
                    f"--scope: {part!r} is not key=value with key one of {sorted(SCOPE_KEYS)}"
                )
            filters[key.strip()] = value.strip()
        if recompute:
            recompute_agreement_snapshots()
        rows = [
            dict(zip(CSV_FIELDS, r, strict=True))
            for r in list_snapshots(**filters).values_list(*CSV_FIELDS)
        ]
        if format == "json":
            alerts = [a.__dict__ for a in list_agreement_alerts()]
            self.stdout.write(
                json.dumps({"figures": rows, "alerts": alerts}, indent=1, default=str)
            )
        else:
            writer = csv.DictWriter(self.stdout, fieldnames=CSV_FIELDS)
            writer.writeheader()
            writer.writerows(rows)
