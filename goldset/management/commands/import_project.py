"""``manage.py import_project bundle.tar.gz --slug <new-slug>``: recreate a bundled project
(:mod:`goldset.services.project_bundle`). Exit 2 when the bundle is refused (a member that
fails its checksum, a slug in use…), with the reason on stderr; nothing is written then."""

import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from goldset.exceptions import GoldsetError
from goldset.services.project_bundle import import_bundle


class Command(BaseCommand):
    help = "Import a project bundle as a new project (checksums verified, all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("bundle", help="the .tar.gz written by export_project")
        parser.add_argument("--slug", required=True, help="the new project's slug")
        parser.add_argument("--name", default="", help="the new project's name (else the bundle's)")
        parser.add_argument(
            "--user", default="", help="username of the importer (becomes the project's admin)"
        )

    def handle(self, *args, **o):
        actor = None
        if o["user"]:
            actor = get_user_model().objects.filter(username=o["user"]).first()
            if actor is None:
                raise CommandError(f"no user {o['user']!r}")
        try:
            result = import_bundle(source=o["bundle"], slug=o["slug"], name=o["name"], by=actor)
        except GoldsetError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(
            json.dumps(
                {
                    "project": result.project.slug,
                    "counts": result.counts,
                    "users_created_inactive": result.users_created,
                }
            )
        )
