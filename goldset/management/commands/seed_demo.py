import os
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from goldset.demo.seed import roles_by_project, seed_demo


class Command(BaseCommand):
    help = "Load the demo project (domains, corpus, users for every role). Safe to run again."

    def add_arguments(self, parser):
        parser.add_argument(
            "--password", default=None, help="Password for every demo user (random if omitted)."
        )
        parser.add_argument(
            "--nist", type=Path, default=None, help="Also load NIST SP 800-53 controls.jsonl."
        )
        parser.add_argument(
            "--credentials-file", type=Path, default=settings.VAR_DIR / "demo-credentials.txt"
        )

    def handle(self, *args, password, nist, credentials_file: Path, **options):
        if nist is not None and not nist.exists():
            raise CommandError(f"{nist}: no such file")
        result = seed_demo(password=password, nist_path=nist)
        for summary in result.corpus:
            self.stdout.write(f"corpus: {summary}")
        roles = roles_by_project()
        if result.credentials:
            lines = [
                f"{user:8} {secret:14} "
                + " · ".join(f"{slug}: {label}" for slug, label in roles.get(user, []))
                for user, secret in result.credentials.items()
            ]
            credentials_file.parent.mkdir(parents=True, exist_ok=True)
            credentials_file.write_text(
                "username password       roles (per project)\n" + "\n".join(lines) + "\n"
            )
            os.chmod(credentials_file, 0o600)
            self.stdout.write(f"Demo users (also in {credentials_file}):")
            self.stdout.write("\n".join(lines))
        elif credentials_file.exists():
            self.stdout.write(f"Demo users (already loaded; from {credentials_file}):")
            self.stdout.write(credentials_file.read_text().rstrip("\n"))
        else:
            self.stdout.write(
                f"Demo users already exist; {credentials_file} is gone (run with --password to "
                "set a new password for every demo user)."
            )
