from celery import shared_task


@shared_task(name="workbench.ping")
def ping_task() -> str:
    """A no-op the health checks and worker tests use to prove a worker executes tasks."""
    return "pong"
