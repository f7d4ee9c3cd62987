"""``manage.py export_project --project <slug> --out bundle.tar.gz``: a project's whole state as
a portable bundle (:mod:`goldset.services.project_bundle`); ``--out -`` writes to stdout."""

import json
import os
import sys
import tempfile

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from goldset.models import Project
from goldset.models.projects import DEFAULT_PROJECT_SLUG
from goldset.services.project_bundle import export_bundle


class Command(BaseCommand):
    help = "Export a project's whole state (corpus, triples, labels, versions…) as a bundle."

    def add_arguments(self, parser):
        parser.add_argument("--project", default=DEFAULT_PROJECT_SLUG, help="the project's slug")
        parser.add_argument("--out", required=True, help="the .tar.gz to write, or - for stdout")
        parser.add_argument("--user", default="", help="username recorded in the audit log")

    def handle(self, *args, **o):
        project = Project.objects.filter(slug=o["project"]).first()
        if project is None:
            raise CommandError(f"no project {o['project']!r}")
        actor = None
        if o["user"]:
            actor = get_user_model().objects.filter(username=o["user"]).first()
            if actor is None:
                raise CommandError(f"no user {o['user']!r}")
        if o["out"] == "-":
            manifest = export_bundle(project=project, out=sys.stdout.buffer, by=actor)
        else:
            # Written beside the target and renamed: a failed export leaves no partial bundle.
            target = os.path.abspath(o["out"])
            fd, partial = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".partial")
            try:
                with os.fdopen(fd, "wb") as out:
                    manifest = export_bundle(project=project, out=out, by=actor)
                os.replace(partial, target)
            except BaseException:
                os.unlink(partial)
                raise
        summary = {"project": project.slug, "counts": manifest["counts"]}
        (self.stderr if o["out"] == "-" else self.stdout).write(json.dumps(summary))
