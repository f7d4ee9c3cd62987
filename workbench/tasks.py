from celery import shared_task


@shared_task(name="workbench.ping")
def ping_task() -> str:
    """A no-op the health checks and worker tests use to prove a worker executes tasks."""
    return "pong"


@shared_task(name="workbench.notify_expiring_tokens")
def notify_expiring_tokens_task() -> int:
    """Every 6 hours (Celery beat entry ``notify-expiring-tokens``): tell owners of API tokens
    ending within a week. Idempotent: each token is noticed once
    (workbench.services.identity.notify_expiring_tokens)."""
    # imported when the task runs: the service imports models, not loaded at worker start
    from workbench.services.identity import notify_expiring_tokens

    return notify_expiring_tokens()
