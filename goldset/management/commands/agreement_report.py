import csv
import json

from django.core.management.base import BaseCommand, CommandError

from goldset.management.project_option import add_project_argument, project_from
from goldset.selectors.agreement import (
    AGREEMENT_SETTINGS,
    CSV_FIELDS,
    list_agreement_alerts,
    list_snapshots,
)
from goldset.services.agreement import recompute_agreement_snapshots
from goldset.services.project_settings import settings_in_force

SCOPE_KEYS = {"protocol", "axis", "metric", "tier", "task_type", "domain", "week", "subject"}


class Command(BaseCommand):
    help = (
        "Print a project's stored agreement figures (those of its dashboard) as JSON or CSV, "
        "with the project's settings in force that shape them (JSON: settings_in_force; CSV: "
        "one column each, as the dashboard's download)."
    )

    def add_arguments(self, parser):
        add_project_argument(parser)
        parser.add_argument(
            "--scope",
            default="",
            help="Filters, e.g. protocol=answer_label,axis=grounding,tier=tier_b",
        )
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument(
            "--recompute", action="store_true", help="Recompute the figures from the labels first."
        )

    def handle(self, *args, project, scope, format, recompute, **options):
        project = project_from(project)
        filters = {}
        for part in filter(None, scope.split(",")):
            key, sep, value = part.partition("=")
            if not sep or key.strip() not in SCOPE_KEYS:
                raise CommandError(
                    f"--scope: {part!r} is not key=value with key one of {sorted(SCOPE_KEYS)}"
                )
            filters[key.strip()] = value.strip()
        if recompute:
            recompute_agreement_snapshots(project=project)
        rows = [
            dict(zip(CSV_FIELDS, r, strict=True))
            for r in list_snapshots(project=project, **filters).values_list(*CSV_FIELDS)
        ]
        in_force = settings_in_force(project=project, names=AGREEMENT_SETTINGS)
        if format == "json":
            alerts = [a.__dict__ for a in list_agreement_alerts(project=project)]
            report = {"figures": rows, "alerts": alerts, "settings_in_force": in_force}
            self.stdout.write(json.dumps(report, indent=1, default=str))
        else:
            settings = {name: in_force[name]["value"] for name in AGREEMENT_SETTINGS}
            writer = csv.DictWriter(self.stdout, fieldnames=[*CSV_FIELDS, *AGREEMENT_SETTINGS])
            writer.writeheader()
            writer.writerows({**row, **settings} for row in rows)
