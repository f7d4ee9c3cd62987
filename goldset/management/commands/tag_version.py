import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.http import Http404

from goldset.exceptions import GoldsetError
from goldset.management.project_option import add_project_argument, project_from
from goldset.management.version_option import VERSION_HELP, version_from
from goldset.selectors.version_tags import list_tags
from goldset.services.version_tags import delete_version_tag, set_version_tag


class Command(BaseCommand):
    help = (
        "Create a project's version tag or move it (NAME --version REF), delete it (NAME "
        "--delete), or list the tags (no NAME). Each change is audited and sent as a tag.moved "
        "webhook event; --user names the admin it is recorded for."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # ``--version REF`` names a gold version here, replacing Django's --version flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        add_project_argument(parser)
        parser.add_argument("name", nargs="?", help="the tag, e.g. release-2026q4")
        parser.add_argument("--version", dest="ref", help=VERSION_HELP)
        parser.add_argument("--delete", action="store_true")
        parser.add_argument("--note", default="")
        parser.add_argument("--user", default="", help="the admin the change is recorded for")

    def handle(self, *args, name, ref, delete, note, user, project, **options):
        project = project_from(project, returncode=2)
        if not name:
            rows = [
                {"tag": t.name, "version": t.version.number} for t in list_tags(project=project)
            ]
            self.stdout.write(json.dumps(rows))
            return
        if delete == bool(ref):
            raise CommandError("give --version REF to set the tag, or --delete", returncode=2)
        actor = None
        if user:
            actor = get_user_model().objects.filter(username=user).first()
            if actor is None:
                raise CommandError(f"no user {user!r}", returncode=2)
        try:
            if delete:
                move = delete_version_tag(project=project, actor=actor, name=name, note=note)
                self.stdout.write(json.dumps({"tag": move.name, "deleted": True}))
                return
            change = set_version_tag(
                project=project,
                actor=actor,
                name=name,
                version=version_from(ref, project=project, returncode=2),
                note=note,
            )
        except Http404 as exc:
            raise CommandError(str(exc), returncode=2) from exc
        except GoldsetError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        previous = change.previous.number if change.previous else None
        self.stdout.write(
            json.dumps(
                {
                    "tag": change.tag.name,
                    "version": change.tag.version.number,
                    "previous": previous,
                    "created": change.created,
                    "changed": change.changed,
                }
            )
        )
