"""Webhook rules as pure functions: the Standard Webhooks signature, secrets and message ids,
the retry schedule, and which addresses a delivery may never reach.

Standard Webhooks (https://www.standardwebhooks.com/): every request carries ``webhook-id``
(the message id, the same on every attempt), ``webhook-timestamp`` (unix seconds of the attempt)
and ``webhook-signature: v1,<base64 HMAC-SHA256>``, signed over ``{id}.{timestamp}.{body}`` with
the secret's bytes (the base64 after ``whsec_``)."""

import base64
import hashlib
import hmac
import ipaddress
import json
import random
import secrets
import uuid

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
MESSAGE_PREFIX = "msg_"

# The outbox kind and the Celery task of one delivery attempt.
WEBHOOK_OUTBOX_KIND = "webhooks.deliver"
DELIVER_TASK = "goldset.deliver_webhook"

# How much of a receiver's answer a delivery keeps (characters).
RESPONSE_SNIPPET_CHARS = 500


def delivery_dedupe_key(delivery_id: int) -> str:
    """At most one unstarted outbox message per delivery."""
    return f"webhook-delivery:{delivery_id}"


def new_secret() -> str:
    """A fresh signing secret, ``whsec_`` + base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_bytes(secret: str) -> bytes:
    """The key the HMAC uses: the base64-decoded part after ``whsec_``."""
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX))


def new_message_id() -> str:
    return MESSAGE_PREFIX + uuid.uuid4().hex


def body_bytes(payload: dict) -> bytes:
    """The request body: the payload as compact JSON (the same bytes on every attempt)."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")


def sign(*, secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` header value for one attempt."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def retry_delay(
    *, attempt: int, base: float, cap: float, rng: random.Random | None = None
) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): ``base * 2**(attempt-1)``
    capped at ``cap``, plus up to 25 % jitter so retries of many deliveries do not arrive
    together."""
    delay = min(cap, base * (2 ** max(0, attempt - 1)))
    return delay + (rng or random).uniform(0, delay / 4)


def address_refusal(address: str) -> str | None:
    """Why a delivery may not connect to ``address`` (an IP address), or None when it is a
    public (globally routable) address. An IPv4-mapped IPv6 address is judged as its IPv4."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for check, what in (
        ("is_unspecified", "unspecified"),
        ("is_loopback", "loopback"),
        ("is_link_local", "link-local"),
        ("is_multicast", "multicast"),
        ("is_reserved", "reserved"),
        ("is_private", "private"),
    ):
        if getattr(ip, check):
            return f"{ip} is a {what} address"
    if not ip.is_global:
        return f"{ip} is not a public address"
    return None


LOCAL_NAMES = ("localhost", "localhost.localdomain")


def is_local_name(host: str) -> bool:
    """``localhost`` and the ``.localhost`` domain name this machine whatever DNS says."""
    host = host.lower().rstrip(".")
    return host in LOCAL_NAMES or host.endswith(".localhost")
