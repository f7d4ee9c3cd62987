"""Webhooks: endpoints admins register, events emitted by services, signed deliveries.

* :func:`emit` is what a service calls, inside the transaction of the action that raised the
  event: one :class:`~goldset.models.WebhookDelivery` per enabled endpoint subscribed to the
  event, each with an outbox message that publishes its delivery task after commit. A broker
  outage delays deliveries; it never loses one, and a rolled-back action sends nothing.
* :func:`deliver_webhook` (the body of the ``goldset.deliver_webhook`` task) makes one attempt:
  it claims the delivery (a duplicate or re-delivered message does nothing), checks the target
  again (DNS may have changed since registration) and connects to the address it checked, posts
  the payload signed as Standard Webhooks says (:mod:`goldset.rules.webhooks`), never follows a
  redirect, and records the outcome: a 2xx answer succeeds; anything else is retried with
  exponential backoff and jitter until ``WEBHOOKS_MAX_ATTEMPTS`` attempts are used, then fails.
* :func:`reconcile_webhook_deliveries` (a pass of the reconciler, ``goldset.services.jobs``)
  ends what a lost worker or a lost message left open.

Targets on private, loopback, link-local, multicast, reserved or unspecified addresses are
refused (every address a name resolves to is checked) unless ``WEBHOOKS_ALLOW_PRIVATE_TARGETS``.

Payloads are minimal and carry no blinded field: ids, types, timestamps, links, checksums and
counts; never a system or run name, a person, or any text of a triple or an answer.
"""

import datetime as dt
import hashlib
import hmac
import logging
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from goldset.conf import tunable
from goldset.exceptions import GoldsetError
from goldset.models import (
    TEST_EVENT,
    DeliveryStatus,
    GoldVersion,
    ImportJob,
    OutboxMessage,
    ScoringJob,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookEvent,
)
from goldset.rules.blinding import without_system_fields
from goldset.rules.webhooks import (
    RESPONSE_SNIPPET_CHARS,
    WEBHOOK_OUTBOX_KIND,
    address_refusal,
    body_bytes,
    delivery_dedupe_key,
    is_local_name,
    new_message_id,
    new_secret,
    retry_delay,
    sign,
)
from goldset.services import outbox
from workbench.project_urls import project_api_url, project_url
from workbench.services.audit import record_event
from workbench.services.idempotency import claim_form_token

logger = logging.getLogger(__name__)
USER_AGENT = "goldset-workbench-webhooks/1"


class TargetRefused(GoldsetError):
    """The URL may not receive webhooks (bad scheme, unresolvable, or a refused address)."""

    field = "url"


# ---------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # the name (or literal address) of the URL
    port: int
    netloc: str  # the Host header
    path: str  # path and query
    addresses: tuple[str, ...]  # what the host resolved to, every one checked


def resolve_target(url: str) -> Target:
    """Parse ``url``, resolve its host and check every address (see the module docstring).
    Raises :class:`TargetRefused` before any connection is attempted."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise TargetRefused(f"not a valid URL: {exc}") from exc
    if parts.scheme not in ("http", "https"):
        raise TargetRefused("the URL must start with https:// or http://")
    host = parts.hostname
    if not host:
        raise TargetRefused("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise TargetRefused("credentials in the URL are not allowed; verify the signature instead")
    allow_private = tunable("WEBHOOKS_ALLOW_PRIVATE_TARGETS")
    if is_local_name(host) and not allow_private:
        raise TargetRefused(
            f"{host} names this machine; private targets are off (WEBHOOKS_ALLOW_PRIVATE_TARGETS)"
        )
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise TargetRefused(f"{host} does not resolve: {exc}") from exc
    addresses = tuple(dict.fromkeys(info[4][0].split("%")[0] for info in infos))
    if not addresses:
        raise TargetRefused(f"{host} does not resolve")
    if not allow_private:
        for address in addresses:
            reason = address_refusal(address)
            if reason:
                raise TargetRefused(
                    f"{host} resolves to {reason}; private targets are off "
                    "(WEBHOOKS_ALLOW_PRIVATE_TARGETS)"
                )
    path = parts.path or "/"
    return Target(
        scheme=parts.scheme,
        host=host,
        port=port,
        netloc=parts.netloc,
        path=f"{path}?{parts.query}" if parts.query else path,
        addresses=addresses,
    )


def check_target(url: str) -> None:
    """Raise :class:`TargetRefused` when ``url`` may not receive webhooks."""
    resolve_target(url)


# ---------------------------------------------------------------- endpoints


def _check_events(events) -> list[str]:
    known = set(WebhookEvent.values)
    chosen = [str(e) for e in events]
    unknown = sorted(set(chosen) - known)
    if unknown:
        raise GoldsetError(f"unknown event type(s): {', '.join(unknown)}")
    if not chosen:
        raise GoldsetError("choose at least one event")
    return [e for e in WebhookEvent.values if e in chosen]


@transaction.atomic
def create_webhook_endpoint(
    *,
    project,
    actor,
    url: str,
    events,
    description: str = "",
    enabled: bool = True,
    form_token: str | None = None,
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint of ``project`` (it receives that project's events only); returns
    it and its signing secret (show it once: pages never
    display it again). Raises :class:`TargetRefused` for a refused URL, GoldsetError for
    unknown events. Audited. A ``form_token`` already used by ``actor`` (a double-submitted
    form) registers nothing and returns the endpoint its first submit registered."""
    claim = claim_form_token(user=actor, token=form_token, kind="webhook_endpoint")
    if claim is not None and not claim.first:
        endpoint = WebhookEndpoint.objects.get(pk=claim.row.object_id)
        return endpoint, endpoint.secret
    check_target(url)
    secret = new_secret()
    endpoint = WebhookEndpoint.objects.create(
        project=project,
        url=url.strip(),
        description=description,
        events=_check_events(events),
        secret=secret,
        enabled=enabled,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
    )
    record_event(
        actor=actor,
        verb="webhook_endpoint_created",
        obj=endpoint,
        detail={"url": endpoint.url, "events": endpoint.events, "enabled": enabled},
    )
    if claim is not None:
        claim.record(endpoint)
    return endpoint, secret


@transaction.atomic
def update_webhook_endpoint(
    *, actor, endpoint: WebhookEndpoint, url: str, events, description: str, enabled: bool
) -> WebhookEndpoint:
    """Change an endpoint's URL, events, description or enabled flag (the URL is checked
    again). Deliveries already created keep going to the endpoint's current URL. Audited."""
    check_target(url)
    locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    before = {"url": locked.url, "events": locked.events, "enabled": locked.enabled}
    locked.url, locked.description = url.strip(), description
    locked.events, locked.enabled = _check_events(events), enabled
    locked.updated_at = timezone.now()
    locked.save(update_fields=["url", "description", "events", "enabled", "updated_at"])
    after = {"url": locked.url, "events": locked.events, "enabled": locked.enabled}
    record_event(
        actor=actor,
        verb="webhook_endpoint_updated",
        obj=locked,
        detail={"before": before, "after": after},
    )
    return locked


@transaction.atomic
def set_webhook_endpoint_enabled(
    *, actor, endpoint: WebhookEndpoint, enabled: bool
) -> WebhookEndpoint:
    """Enable or disable an endpoint (no URL check: disabling must always work). A disabled
    endpoint gets no new deliveries, and its pending ones fail at their next attempt."""
    updated = WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        enabled=enabled, updated_at=timezone.now()
    )
    if updated:
        record_event(
            actor=actor,
            verb="webhook_endpoint_enabled" if enabled else "webhook_endpoint_disabled",
            obj=endpoint,
        )
    endpoint.refresh_from_db()
    return endpoint


@transaction.atomic
def delete_webhook_endpoint(*, actor, endpoint: WebhookEndpoint) -> None:
    """Delete an endpoint and its delivery log (audited with its URL and events). A delivery
    still queued finds no row and does nothing (:func:`_claim`); nothing more is sent there."""
    locked = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    detail = {"url": locked.url, "events": locked.events, "enabled": locked.enabled}
    record_event(
        actor=actor,
        verb="webhook_endpoint_deleted",
        object_type="goldset.webhookendpoint",
        object_id=locked.pk,
        project=locked.project,
        detail=detail,
    )
    locked.delete()


# ---------------------------------------------------------------- emitting


def _queue(delivery_id: int, *, delay: float = 0) -> None:
    outbox.enqueue(
        kind=WEBHOOK_OUTBOX_KIND,
        payload={"delivery_id": delivery_id},
        dedupe_key=delivery_dedupe_key(delivery_id),
        delay=delay,
    )


def _new_delivery(
    *, endpoint_id: int, event_type: str, message_id: str, payload: dict, now
) -> WebhookDelivery:
    delivery = WebhookDelivery.objects.create(
        endpoint_id=endpoint_id,
        event_type=event_type,
        message_id=message_id,
        payload=payload,
        max_attempts=tunable("WEBHOOKS_MAX_ATTEMPTS"),
        next_attempt_at=now,
        created_at=now,
    )
    _queue(delivery.pk)
    return delivery


def subscribed_endpoint_ids(event_type: str, *, project) -> list[int]:
    """Enabled endpoints of ``project`` subscribed to ``event_type`` (one query; endpoints are
    few, and the JSON list is filtered here so SQLite and PostgreSQL agree)."""
    return [
        pk
        for pk, events in WebhookEndpoint.objects.filter(project=project, enabled=True).values_list(
            "pk", "events"
        )
        if event_type in (events or [])
    ]


def wants(event_type: str, *, project) -> bool:
    """Whether an enabled endpoint of ``project`` subscribes to ``event_type`` (skip building
    payloads)."""
    return bool(subscribed_endpoint_ids(event_type, project=project))


def project_data(project) -> dict:
    """The project a payload belongs to: its slug and name."""
    return {"slug": project.slug, "name": project.name}


@transaction.atomic
def emit(
    event_type: str, data: dict, *, project, now: dt.datetime | None = None
) -> list[WebhookDelivery]:
    """Record an event of ``project`` for every enabled endpoint of that project subscribed to
    it (another project's endpoints never see it), in the caller's transaction, and queue the
    deliveries through the outbox (published after commit). The body is ``{"type",
    "timestamp", "project": {"slug", "name"}, "data"}``; every endpoint gets the same message
    id. Returns the deliveries (none when nobody subscribes)."""
    endpoint_ids = subscribed_endpoint_ids(str(event_type), project=project)
    if not endpoint_ids:
        return []
    now = now or timezone.now()
    # blind whatever the builder put in: no system field leaves the application
    payload = {
        "type": str(event_type),
        "timestamp": _iso(now),
        "project": project_data(project),
        "data": without_system_fields(data),
    }
    message_id = new_message_id()
    return [
        _new_delivery(
            endpoint_id=pk,
            event_type=str(event_type),
            message_id=message_id,
            payload=payload,
            now=now,
        )
        for pk in endpoint_ids
    ]


@transaction.atomic
def send_test_event(*, actor, endpoint: WebhookEndpoint) -> WebhookDelivery:
    """Queue a ``webhook.test`` delivery to this endpoint alone (audited). Raises GoldsetError
    for a disabled endpoint."""
    if not endpoint.enabled:
        raise GoldsetError("this endpoint is disabled; enable it to send a test event")
    now = timezone.now()
    delivery = _new_delivery(
        endpoint_id=endpoint.pk,
        event_type=TEST_EVENT,
        message_id=new_message_id(),
        payload={
            "type": TEST_EVENT,
            "timestamp": _iso(now),
            "project": project_data(endpoint.project),
            "data": {"endpoint_id": endpoint.pk, "note": "a test event sent from the workbench"},
        },
        now=now,
    )
    record_event(actor=actor, verb="webhook_test_sent", obj=delivery, project=endpoint.project)
    return delivery


@transaction.atomic
def redeliver_webhook(*, actor, delivery: WebhookDelivery) -> WebhookDelivery:
    """One more attempt for a finished delivery (same message id and payload, so receivers can
    recognise a duplicate), queued now. Audited. Raises GoldsetError while it is still open."""
    locked = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
    if not locked.finished:
        raise GoldsetError(f"delivery {locked.pk} is still {locked.get_status_display().lower()}")
    previous = locked.status
    locked.status = DeliveryStatus.PENDING
    locked.max_attempts = locked.attempts + 1
    locked.next_attempt_at = timezone.now()
    locked.finished_at = None
    locked.save(update_fields=["status", "max_attempts", "next_attempt_at", "finished_at"])
    record_event(
        actor=actor,
        verb="webhook_redelivered",
        obj=locked,
        project=locked.endpoint.project,
        detail={"was": previous, "attempt": locked.attempts + 1},
    )
    _queue(locked.pk)
    return locked


# ---------------------------------------------------------------- payloads (no blinded fields)


def _iso(moment: dt.datetime | None) -> str | None:
    return moment.isoformat(timespec="seconds") if moment else None


def _link(project, name: str, /, **kwargs) -> str:
    """An absolute link into ``project``: its page, or (``api:*``) its API endpoint."""
    if name.startswith("api:"):
        path = project_api_url(project, name, **kwargs)
    else:
        path = project_url(project, name, **kwargs)
    return tunable("WEBHOOKS_LINK_BASE_URL").rstrip("/") + path


def gold_version_data(version: GoldVersion) -> dict:
    """The ``gold_version.frozen`` data: number, checksums, counts and files (their sha256)."""
    manifest = version.manifest or {}
    diff = manifest.get("diff") or {}
    return {
        "version": version.number,
        "label": version.label,
        "parent_version": manifest.get("parent_version"),
        "frozen_at": manifest.get("created_at") or _iso(version.created_at),
        "triples": version.row_count,
        "rows_sha256": version.rows_sha256,
        "manifest_sha256": version.manifest_sha256,
        "diff": {k: len(diff.get(k) or []) for k in ("added", "removed", "changed")},
        "files": [
            {"format": f["format"], "redacted": f["redacted"], "sha256": f["sha256"]}
            for f in manifest.get("files", [])
        ],
        "links": {
            "page": _link(version.project, "exports:version", number=version.number),
            "api": _link(version.project, "api:version", ref=version.number),
        },
    }


def tag_data(move) -> dict:
    """The ``tag.moved`` data (a ``VersionTagMove``): the tag, what it pointed at before and
    after (null when it was created or deleted) and when. Not the note (free text) nor who
    moved it (a person): the audit log keeps both."""
    project = move.project
    before, after = move.from_version, move.to_version
    links = {"page": _link(project, "exports:versions")}
    if after is not None:
        links = {
            "page": _link(project, "exports:version", number=after.number),
            "api": _link(project, "api:tag", name=move.name),
        }
    return {
        "tag": move.name,
        "action": move.action,
        "from_version": before.number if before else None,
        "to_version": after.number if after else None,
        "moved_at": _iso(move.moved_at),
        "links": links,
    }


def label_data(label, record) -> dict:
    """The ``label.submitted`` data (a production label): the item's opaque id, the slot, the
    tier, the item's status once the label is counted (``labeling``, ``final``,
    ``needs_adjudication``, ``audit``) and when. Not the label's values or rationale, not who
    gave it, nothing of the system or run: read the label through the API, which blinds it as
    the pages do."""
    return {
        "label_id": label.pk,
        "record": record.public_id,
        "slot": label.assignment.slot,
        "tier": record.tier,
        "record_status": record.status,
        "submitted_at": _iso(label.created_at),
        "links": {"api": _link(record.project, "api:label", pk=label.pk)},
    }


def adjudication_data(adjudication, record) -> dict:
    """The ``adjudication.recorded`` data: the item's opaque id, why it reached a lead, the
    final acceptability and grounding, whether the lead changed the outcome, and when (not the
    rationale, not the lead, nothing of the system)."""
    return {
        "adjudication_id": adjudication.pk,
        "record": record.public_id,
        "reason": adjudication.reason,
        "final_acceptability": adjudication.acceptability,
        "final_grounding": adjudication.grounding,
        "changed_outcome": adjudication.changed_outcome,
        "adjudicated_at": _iso(adjudication.created_at),
        "links": {
            "page": _link(record.project, "answers:adjudicate", public_id=record.public_id),
            "api": _link(record.project, "api:adjudication", pk=adjudication.pk),
        },
    }


def triple_resolved_data(triple, revision, *, verdicts: list[str]) -> dict:
    """The ``triple.resolved`` data: the triple's id, the revision its reviews resolved, the
    state that followed (``gold``, ``in_discussion``, ``dropped``), its resolution, the count
    of each verdict, and when (no text of the triple, no reviewer, no comment)."""
    return {
        "triple": triple.external_id,
        "revision": revision.number,
        "state": triple.state,
        "resolution": triple.resolution,
        "verdicts": {v: verdicts.count(v) for v in sorted(set(verdicts))},
        "resolved_at": _iso(timezone.now()),
        "links": {
            "page": _link(triple.project, "curation:triple", pk=triple.pk),
            "api": _link(triple.project, "api:triple", triple_id=triple.external_id),
        },
    }


def scoring_job_data(job: ScoringJob) -> dict:
    """The ``scoring_job.*`` data: ids, kind, status, timestamps and, for a failure, the error
    (never the run's name: systems are hidden from all but admins' pages)."""
    data = {
        "job_id": job.pk,
        "kind": job.kind,
        "status": job.status,
        "gold_version": job.version.number,
        "attempts": job.attempts,
        "created_at": _iso(job.created_at),
        "finished_at": _iso(job.finished_at),
        "links": {
            "page": _link(job.project, "exports:job", pk=job.pk),
            "api": _link(job.project, "api:job", pk=job.pk),
        },
    }
    if job.status == "failed":
        data["error"] = (job.error or "")[:500]
    return data


def import_data(job: ImportJob, *, status: str, summary: dict | None = None, errors: int = 0):
    """The ``import.finished`` data: id, kind, outcome, the file's checksum and size, problem
    count and the summary's counts (numbers only)."""
    counts = {
        key: value
        for key, value in (summary or {}).items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }
    return {
        "import_id": job.pk,
        "kind": job.kind,
        "status": str(status),
        "sha256": job.sha256,
        "size": job.size,
        "problems": errors,
        "counts": counts,
        "finished_at": _iso(timezone.now()),
        "links": {
            "page": _link(job.project, "imports:job", pk=job.pk),
            "api": _link(job.project, "api:import", pk=job.pk),
        },
    }


def alert_key(*, kind: str, title: str, numbers: dict) -> str:
    """A stable id for "the same alert": its kind, title and identifying values (scope and the
    people it names), keyed with SECRET_KEY so the people cannot be guessed back from it."""
    identity = [kind, title] + sorted(
        f"{k}={v}"
        for k, v in numbers.items()
        if isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v))
    )
    digest = hmac.new(
        settings.SECRET_KEY.encode(), "\x1f".join(map(str, identity)).encode(), hashlib.sha256
    )
    return digest.hexdigest()[:24]


def alert_data(*, project, kind: str, title: str, key: str, numbers: dict) -> dict:
    """The ``alert.raised`` data: the alert's kind, title, a stable key and its scope and
    figures, without people (annotators, pairs and authors are left out)."""
    scope_keys = ("protocol", "axis", "task_type", "weeks")
    return {
        "kind": kind,
        "title": title,
        "key": key,
        "scope": {k: numbers[k] for k in scope_keys if k in numbers},
        "figures": {
            k: v
            for k, v in numbers.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        },
        "links": {
            "page": _link(project, "quality:alerts"),
            "api": _link(project, "api:alerts"),
        },
    }


# ---------------------------------------------------------------- delivering (the task's work)


@dataclass(frozen=True)
class Attempt:
    status_code: int | None
    error: str
    snippet: str
    retryable: bool


def _claim(delivery_id: int) -> WebhookDelivery | None:
    """Take the next attempt of a pending delivery (a duplicate message finds nothing to take).
    A delivery of an endpoint disabled meanwhile fails instead."""
    now = timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("endpoint")
            .filter(pk=delivery_id, status=DeliveryStatus.PENDING)
            .first()
        )
        if delivery is None:
            return None
        if not delivery.endpoint.enabled:
            delivery.status, delivery.finished_at = DeliveryStatus.FAILED, now
            delivery.last_error = "the endpoint was disabled before this attempt"
            delivery.save(update_fields=["status", "finished_at", "last_error"])
            return None
        delivery.status = DeliveryStatus.DELIVERING
        delivery.attempts += 1
        delivery.attempt_started_at = now
        delivery.save(update_fields=["status", "attempts", "attempt_started_at"])
    return delivery


def _read_snippet(response: httpx.Response) -> str:
    data = b""
    for chunk in response.iter_bytes():
        data += chunk
        if len(data) >= RESPONSE_SNIPPET_CHARS * 4:
            break
    return data.decode("utf-8", "replace")[:RESPONSE_SNIPPET_CHARS]


def _post(delivery: WebhookDelivery) -> Attempt:
    """One signed POST, to the address the target check resolved (DNS is not asked twice)."""
    endpoint = delivery.endpoint
    try:
        target = resolve_target(endpoint.url)
    except TargetRefused as exc:
        return Attempt(None, f"refused: {exc}", "", retryable=False)
    address = target.addresses[0]
    pinned = urlunsplit(
        (
            target.scheme,
            f"[{address}]:{target.port}" if ":" in address else f"{address}:{target.port}",
            target.path.partition("?")[0],
            target.path.partition("?")[2],
            "",
        )
    )
    body = body_bytes(delivery.payload)
    timestamp = int(time.time())
    headers = {
        "host": target.netloc,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(
            secret=endpoint.secret, message_id=delivery.message_id, timestamp=timestamp, body=body
        ),
    }
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    timeout = tunable("WEBHOOKS_TIMEOUT_SECONDS")
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            with client.stream(
                "POST", pinned, content=body, headers=headers, extensions=extensions
            ) as response:
                snippet = _read_snippet(response)
                code = response.status_code
                location = response.headers.get("location", "")
    except (httpx.HTTPError, OSError, ValueError) as exc:  # network, TLS, a malformed answer
        return Attempt(None, f"{type(exc).__name__}: {exc}"[:2000], "", retryable=True)
    if 200 <= code < 300:
        return Attempt(code, "", snippet, retryable=False)
    error = f"HTTP {code}"
    if 300 <= code < 400:
        error += f": redirects are not followed (Location: {location[:300]})"
    return Attempt(code, error, snippet, retryable=True)


def _settle(delivery: WebhookDelivery, attempt: Attempt, *, now: dt.datetime) -> str:
    """Record an attempt's outcome on the locked delivery: succeeded, pending again (a retry
    queued with its backoff) or failed once its attempts are used. Returns the new status."""
    delivery.last_attempt_at = now
    delivery.last_status_code = attempt.status_code
    delivery.last_error = attempt.error
    delivery.response_snippet = attempt.snippet
    if attempt.status_code is not None and 200 <= attempt.status_code < 300:
        delivery.status, delivery.finished_at = DeliveryStatus.SUCCEEDED, now
    elif attempt.retryable and delivery.attempts < delivery.max_attempts:
        delay = retry_delay(
            attempt=delivery.attempts,
            base=tunable("WEBHOOKS_RETRY_BASE_SECONDS"),
            cap=tunable("WEBHOOKS_RETRY_MAX_SECONDS"),
        )
        delivery.status = DeliveryStatus.PENDING
        delivery.next_attempt_at = now + dt.timedelta(seconds=delay)
        _queue(delivery.pk, delay=delay)
    else:
        delivery.status, delivery.finished_at = DeliveryStatus.FAILED, now
    delivery.save(
        update_fields=[
            "status",
            "next_attempt_at",
            "finished_at",
            "last_attempt_at",
            "last_status_code",
            "last_error",
            "response_snippet",
        ]
    )
    return delivery.status


def deliver_webhook(*, delivery_id: int, outbox_id: int | None = None) -> str:
    """One delivery attempt (the body of ``goldset.deliver_webhook``). Idempotent: the delivery
    is claimed first, so a duplicate message does nothing; the outcome is recorded only while
    this attempt still holds the delivery. Returns the delivery's status afterwards."""
    delivery = _claim(delivery_id)
    outbox.mark_done(outbox_id)  # from here the delivery row tracks the work
    if delivery is None:
        found = WebhookDelivery.objects.filter(pk=delivery_id).values_list("status", flat=True)
        return found.first() or "missing"
    attempt = _post(delivery)
    with transaction.atomic():
        locked = (
            WebhookDelivery.objects.select_for_update()
            .filter(pk=delivery_id, status=DeliveryStatus.DELIVERING, attempts=delivery.attempts)
            .first()
        )
        if locked is None:
            return "taken-over"  # the reconciler gave this attempt up meanwhile
        status = _settle(locked, attempt, now=timezone.now())
    if status != DeliveryStatus.SUCCEEDED:
        logger.info("webhook delivery %s attempt %s: %s", delivery_id, locked.attempts, status)
    return status


# ---------------------------------------------------------------- the reconciler's pass


def stuck_seconds() -> float:
    """An attempt running longer than this lost its worker (timeout plus the staleness window)."""
    return tunable("WEBHOOKS_TIMEOUT_SECONDS") + tunable("JOB_STALE_SECONDS")


def reconcile_webhook_deliveries(*, now: dt.datetime | None = None) -> dict:
    """The reconciler's pass over deliveries:

    * delivering for longer than :func:`stuck_seconds`: the worker died mid-attempt; the attempt
      counts as failed (retried with backoff, or failed once its attempts are used);
    * pending, due for ``OUTBOX_REDISPATCH_SECONDS`` and with no open outbox message (the
      message was lost or closed without a claim): queued again.

    Every change is conditional under the row's lock, safe next to workers and other passes."""
    now = now or timezone.now()
    lost, redispatched = [], []
    stuck_before = now - dt.timedelta(seconds=stuck_seconds())
    stuck = WebhookDelivery.objects.filter(
        status=DeliveryStatus.DELIVERING, attempt_started_at__lt=stuck_before
    )
    for pk in stuck.values_list("pk", flat=True):
        with transaction.atomic():
            delivery = (
                WebhookDelivery.objects.select_for_update()
                .filter(
                    pk=pk, status=DeliveryStatus.DELIVERING, attempt_started_at__lt=stuck_before
                )
                .first()
            )
            if delivery is None:
                continue
            error = (
                f"attempt {delivery.attempts} was lost mid-delivery (no outcome after "
                f"{stuck_seconds():.0f} s; the worker died or was killed)"
            )
            _settle(delivery, Attempt(None, error, "", retryable=True), now=now)
            lost.append(pk)
    due_before = now - dt.timedelta(seconds=outbox.redispatch_seconds())
    open_keys = set(
        OutboxMessage.objects.filter(kind=WEBHOOK_OUTBOX_KIND, done_at__isnull=True).values_list(
            "dedupe_key", flat=True
        )
    )
    waiting = WebhookDelivery.objects.filter(
        status=DeliveryStatus.PENDING, next_attempt_at__lt=due_before
    )
    for pk in waiting.values_list("pk", flat=True):
        if delivery_dedupe_key(pk) in open_keys:
            continue  # its message is pending or in flight; the outbox reconciler watches it
        with transaction.atomic():
            if (
                WebhookDelivery.objects.select_for_update()
                .filter(pk=pk, status=DeliveryStatus.PENDING)
                .exists()
            ):
                _queue(pk)
                redispatched.append(pk)
    return {"lost_attempts": lost, "redispatched": redispatched}
