from django.apps import AppConfig
from django.db.models.signals import post_migrate


class WorkbenchConfig(AppConfig):
    name = "workbench"
    verbose_name = "Workbench: accounts, roles and audit log"

    def ready(self):
        # Groups reference permissions of several apps, which exist only after each app's
        # post_migrate; syncing after every app (and after a test flush) is idempotent and cheap.
        post_migrate.connect(_ensure_roles, dispatch_uid="workbench.ensure_roles")
        # auth's signals and our middleware import models: only once the app registry is ready
        from django.contrib.auth.signals import user_logged_in

        # (the middleware module imports the role models, so it too waits for ready())
        from workbench.middleware import SessionSecurityMiddleware

        user_logged_in.connect(
            SessionSecurityMiddleware.stamp_login, dispatch_uid="workbench.session_stamp"
        )
        # (services import models too: records each login's session for ending them later)
        from workbench.services.identity import remember_session

        user_logged_in.connect(remember_session, dispatch_uid="workbench.remember_session")
        # registers the OpenID Connect settings check (importing it is what registers it)
        from workbench import checks  # noqa: F401


def _ensure_roles(sender, using="default", **kwargs):
    # Imported here: apps.py loads before the app registry, and services import models.
    from workbench.services.accounts import ensure_roles

    ensure_roles(using=using)
