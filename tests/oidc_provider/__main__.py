"""``python -m tests.oidc_provider PORT``: migrate the provider's database, then serve it (one
process, so Django starts once)."""

import os
import sys

import django
from django.core.management import call_command

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.oidc_provider.settings")
django.setup()
call_command("migrate", interactive=False, verbosity=0)
call_command("runserver", f"127.0.0.1:{sys.argv[1]}", use_reloader=False, skip_checks=True)
