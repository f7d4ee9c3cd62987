from django.apps import AppConfig


class GoldsetConfig(AppConfig):
    name = "goldset"
    verbose_name = "Gold set"

    def ready(self):
        # Registers the Celery tasks services queue by name (workbench.dispatch); the task
        # module imports services, which need the app registry, so it cannot load any earlier.
        from goldset import tasks  # noqa: F401

        # The kinds of background work the outbox publishes and the reconciler watches; models
        # must be loaded first, so this cannot happen at import time either.
        from goldset.services.jobs import register_builtin_kinds

        register_builtin_kinds()
