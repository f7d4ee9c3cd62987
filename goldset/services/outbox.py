"""The transactional outbox: background work is written to the database with the change that
triggers it, and published to the broker after commit.

* :func:`enqueue` inserts an :class:`~goldset.models.OutboxMessage` inside the caller's
  transaction and asks for a relay of it after commit. It never talks to the broker or the cache,
  so a label, a review, an upload or a freeze commits when Redis is down.
* :func:`relay_outbox` publishes pending messages. It claims them first (``dispatched_at`` set
  in a short transaction with ``SKIP LOCKED``, so two relays never publish the same message),
  then publishes each outside any transaction (in the embedded eager mode the task runs right
  there). A message the broker refuses goes back to pending with the error; the periodic
  reconciler relays it again.
* :func:`reconcile_outbox` (called by the reconciler) sends back to pending the messages that were
  published but never picked up by a worker (the broker lost them, or the relaying process died
  between claiming and publishing), and re-requests work whose worker died mid-task.

Each message kind registers how it is published (:func:`register_outbox_kind`); the task marks
the message started when a worker picks it up (:func:`mark_started`) and done when the work is
finished (:func:`mark_done`).
"""

import datetime as dt
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from goldset.conf import tunable
from goldset.models import OutboxMessage
from goldset.services.heartbeat import Heartbeat

logger = logging.getLogger(__name__)
RELAY_BATCH = 200


@dataclass(frozen=True)
class OutboxKind:
    name: str
    # publish(message) sends the message's task to the broker; raises when the broker is down.
    publish: Callable[[OutboxMessage], None]


_KINDS: dict[str, OutboxKind] = {}


def register_outbox_kind(name: str, *, publish: Callable[[OutboxMessage], None]) -> None:
    """Declare how messages of ``name`` are published (idempotent: the last one wins)."""
    _KINDS[name] = OutboxKind(name=name, publish=publish)


def _kinds() -> dict[str, OutboxKind]:
    return _KINDS


def redispatch_seconds() -> int:
    """A published message no worker picked up after this long is assumed lost."""
    return tunable("OUTBOX_REDISPATCH_SECONDS")


def enqueue(
    *, kind: str, payload: dict | None = None, dedupe_key: str = "", delay: float = 0
) -> OutboxMessage | None:
    """Record work to do after the current transaction commits (atomic with the caller).

    With a ``dedupe_key``, a request while an equal message has not been started yet is merged
    into it (returns None): that message will see this change too. ``delay`` seconds hold the
    message back (a debounce window). The relay runs after commit."""
    now = timezone.now()
    if dedupe_key and _merge_into_open(dedupe_key):
        return None
    try:
        with transaction.atomic():
            message = OutboxMessage.objects.create(
                kind=kind,
                payload=payload or {},
                dedupe_key=dedupe_key,
                created_at=now,
                available_at=now + dt.timedelta(seconds=delay),
            )
    except IntegrityError:
        if dedupe_key and _merge_into_open(dedupe_key):
            return None
        raise
    transaction.on_commit(lambda: relay_outbox(ids=[message.pk]))
    return message


def _open_duplicate(dedupe_key: str) -> bool:
    return OutboxMessage.objects.filter(dedupe_key=dedupe_key, started_at__isnull=True).exists()


def _merge_into_open(dedupe_key: str) -> bool:
    """True when an equal message is not started yet; if it is not even published, ask for
    its relay after commit (it may have been left pending by a broker outage)."""
    open_message = (
        OutboxMessage.objects.filter(dedupe_key=dedupe_key, started_at__isnull=True)
        .values_list("pk", "dispatched_at")
        .first()
    )
    if open_message is None:
        return False
    pk, dispatched_at = open_message
    if dispatched_at is None:
        transaction.on_commit(lambda: relay_outbox(ids=[pk]))
    return True


def relay_outbox(*, ids: list[int] | None = None, limit: int = RELAY_BATCH) -> dict:
    """Publish pending messages (only ``ids`` when given). Never raises for a broker outage:
    the messages stay pending with the error and the reconciler relays them later.
    Returns counts ``{"published": n, "failed": m}``."""
    kinds = _kinds()
    now = timezone.now()
    with transaction.atomic():
        pending = OutboxMessage.objects.select_for_update(skip_locked=True).filter(
            dispatched_at__isnull=True, done_at__isnull=True
        )
        if ids is not None:
            pending = pending.filter(pk__in=ids)
        claimed = list(pending.order_by("id")[:limit])
        OutboxMessage.objects.filter(pk__in=[m.pk for m in claimed]).update(dispatched_at=now)
    published = failed = 0
    for message in claimed:
        kind = kinds.get(message.kind)
        try:
            if kind is None:
                raise LookupError(f"no publisher registered for outbox kind {message.kind!r}")
            kind.publish(message)
        except Exception as exc:
            failed += 1
            OutboxMessage.objects.filter(pk=message.pk, started_at__isnull=True).update(
                dispatched_at=None, last_error=f"{type(exc).__name__}: {exc}"[:2000]
            )
            logger.warning("outbox message %s not published: %s", message.pk, exc)
            if ids is None:
                break  # the broker is down; the rest would fail the same way
            continue
        published += 1
        OutboxMessage.objects.filter(pk=message.pk).update(attempts=message.attempts + 1)
    return {"published": published, "failed": failed}


def countdown(message: OutboxMessage) -> float:
    """Seconds until the message may run (its debounce window), for ``apply_async``."""
    return max(0.0, (message.available_at - timezone.now()).total_seconds())


def postpone(message_id: int, *, seconds: float) -> bool:
    """Hold a delivered message that no worker has started back for ``seconds`` more and
    publish it again with that delay (its dedupe key stays open, so requests meanwhile merge
    into it). False when it was started or closed in the meantime: then it runs as it is."""
    held = OutboxMessage.objects.filter(
        pk=message_id, started_at__isnull=True, done_at__isnull=True
    ).update(available_at=timezone.now() + dt.timedelta(seconds=seconds), dispatched_at=None)
    if held:
        relay_outbox(ids=[message_id])
    return bool(held)


def mark_started(message_id: int | None) -> None:
    """A worker picked the message up (the broker delivered it). Idempotent."""
    if message_id:
        OutboxMessage.objects.filter(pk=message_id, started_at__isnull=True).update(
            started_at=timezone.now()
        )


def start_all_of_kind(
    *, kind: str, message_id: int | None = None, payload: dict | None = None
) -> list[int]:
    """For work that covers every earlier request of its kind (a full recompute): mark this
    message and every open, not yet started message of ``kind`` (whose payload has the values
    of ``payload``, e.g. the same project) started; returns their ids, to close with
    :func:`mark_done` once the work is stored. Requests made after this point stay open and run
    again."""
    now = timezone.now()
    matching = {f"payload__{key}": value for key, value in (payload or {}).items()}
    with transaction.atomic():
        ids = list(
            OutboxMessage.objects.select_for_update(skip_locked=True)
            .filter(
                kind=kind,
                done_at__isnull=True,
                started_at__isnull=True,
                created_at__lte=now,
                **matching,
            )
            .values_list("pk", flat=True)
        )
        OutboxMessage.objects.filter(pk__in=ids).update(started_at=now)
    mark_started(message_id)
    return sorted(set(ids) | ({message_id} if message_id else set()))


@contextmanager
def beating(message_ids: list[int], *, heartbeat: bool = True) -> Iterator[None]:
    """While the work of started messages runs, a heartbeat thread stamps their
    ``heartbeat_at`` every ``JOB_HEARTBEAT_SECONDS`` (see :mod:`goldset.services.heartbeat`),
    so :func:`reconcile_outbox` does not request a slow but live piece of work again; when
    the worker dies the stamps stop and the work is requested again after
    ``JOB_STALE_SECONDS``. The thread stops once the messages are done."""
    beat = None
    if heartbeat and message_ids:
        beat = Heartbeat(
            f"outbox-{message_ids[0]}",
            lambda: OutboxMessage.objects.filter(pk__in=message_ids, done_at__isnull=True),
        )
        beat.start()
    try:
        yield
    finally:
        if beat is not None:
            beat.stop()


def mark_done(message_id: int | list[int] | None) -> None:
    """The message's work is finished (whatever its outcome). Idempotent."""
    ids = message_id if isinstance(message_id, list) else [message_id] if message_id else []
    if ids:
        now = timezone.now()
        OutboxMessage.objects.filter(pk__in=ids, done_at__isnull=True).update(
            started_at=Coalesce("started_at", Value(now)), done_at=now
        )


def reconcile_outbox(*, now: dt.datetime | None = None) -> dict:
    """Repair messages the broker or a worker lost, then relay everything pending.

    * published, never started, and older than its window plus ``OUTBOX_REDISPATCH_SECONDS``:
      the broker lost it (e.g. Redis restarted without persistence) → pending again;
    * started, not done, and neither started nor beating (``heartbeat_at``, see
      :func:`beating`) within ``JOB_STALE_SECONDS``: the worker died mid-task → the old message
      is closed and an equal one is requested (its ``created_at`` kept, so "stale since" stays
      truthful). A slow piece of work whose worker is alive keeps beating and is left alone.
      Scoring jobs are not affected: their task closes the message as soon as it starts and
      the job row's heartbeat takes over.
    """
    now = now or timezone.now()
    lost_after = dt.timedelta(seconds=redispatch_seconds())
    lost = OutboxMessage.objects.filter(
        done_at__isnull=True,
        started_at__isnull=True,
        dispatched_at__isnull=False,
        dispatched_at__lt=now - lost_after,
        available_at__lt=now - lost_after,
    ).update(dispatched_at=None, last_error="published but never picked up; published again")
    stale_before = now - dt.timedelta(seconds=tunable("JOB_STALE_SECONDS"))
    abandoned = 0
    silent = Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale_before)
    for message in OutboxMessage.objects.filter(
        silent, done_at__isnull=True, started_at__lt=stale_before
    ).order_by("id"):
        with transaction.atomic():
            closed = (
                OutboxMessage.objects.filter(silent, pk=message.pk, done_at__isnull=True)
                .filter(started_at__lt=stale_before)
                .update(done_at=now, last_error="the worker was lost mid-task; requested again")
            )
            if closed and not (message.dedupe_key and _open_duplicate(message.dedupe_key)):
                OutboxMessage.objects.create(
                    kind=message.kind,
                    payload=message.payload,
                    dedupe_key=message.dedupe_key,
                    created_at=message.created_at,
                    available_at=now,
                )
            abandoned += closed
    relayed = relay_outbox()
    return {"lost_messages": lost, "abandoned_messages": abandoned, **relayed}
