"""The Celery app. Configuration comes from Django settings under the ``CELERY_`` namespace."""

import os

from celery import Celery, Task

from workbench import request_context
from workbench.envfile import read_env_file

read_env_file()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")


class ContextTask(Task):
    """Carries the id of the request that queued a task into the task, so the audit events the
    task records name the request that caused them (see :mod:`workbench.request_context`)."""

    def apply_async(self, args=None, kwargs=None, **options):
        request_id = request_context.current_request_id()
        if request_id:
            headers = dict(options.get("headers") or {})
            headers.setdefault(request_context.REQUEST_ID_HEADER, request_id)
            options["headers"] = headers
        return super().apply_async(args, kwargs, **options)

    def __call__(self, *args, **kwargs):
        with request_context.bound(
            request_context.RequestContext(request_id=self._queuing_request_id())
        ):
            return super().__call__(*args, **kwargs)

    def _queuing_request_id(self) -> str:
        name = request_context.REQUEST_ID_HEADER
        request = self.request
        found = getattr(request, name, None) or (getattr(request, "headers", None) or {}).get(name)
        return found if isinstance(found, str) else ""


app = Celery("workbench", task_cls=ContextTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
