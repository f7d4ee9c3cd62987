import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import GoldsetError
from goldset.management.project_option import add_project_argument, project_from
from goldset.services.freeze import FreezeFilters, freeze_gold_version


class Command(BaseCommand):
    help = "Freeze a project's curated gold set (with optional filters) as its next gold version."

    def add_arguments(self, parser):
        add_project_argument(parser)
        parser.add_argument("--domain", default="")
        parser.add_argument("--tier", default="")
        parser.add_argument("--source", default="")
        parser.add_argument("--public-only", action="store_true")
        parser.add_argument("--working-slice", default="", help='a quarter, e.g. "2026Q1"')
        parser.add_argument(
            "--include-superseded",
            action="store_true",
            help="also freeze gold triples pinned to superseded block versions (left out "
            "otherwise; the manifest lists them either way)",
        )
        parser.add_argument("--note", default="")
        parser.add_argument("--user", default="", help="username recorded as the creator")

    def handle(self, *args, **o):
        project = project_from(o["project"])
        actor = None
        if o["user"]:
            actor = get_user_model().objects.filter(username=o["user"]).first()
            if actor is None:
                raise CommandError(f"no user {o['user']!r}")
        filters = FreezeFilters(
            domain=o["domain"],
            tier=o["tier"],
            source=o["source"],
            public_only=o["public_only"],
            working_slice=o["working_slice"],
            include_superseded=o["include_superseded"],
        )
        try:
            version = freeze_gold_version(
                project=project, filters=filters, actor=actor, note=o["note"]
            )
        except GoldsetError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            json.dumps(
                {
                    "project": project.slug,
                    "version": version.number,
                    "triples": version.row_count,
                    "rows_sha256": version.rows_sha256,
                    "diff": {
                        k: len(v) for k, v in version.manifest["diff"].items() if k != "against"
                    },
                }
            )
        )
