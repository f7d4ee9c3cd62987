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


# IPv6 forms that carry an IPv4 address a gateway will connect to: the well-known NAT64 prefix
# (RFC 6052; the IPv4 is the last 32 bits), 6to4 (RFC 3056, 2002::/16) and Teredo (RFC 4380,
# 2001::/32, client and server). The local-use NAT64 prefix (RFC 8215) is never public.
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses an IPv6 address hands to a translator or tunnel, with the form's name."""
    if ip.ipv4_mapped is not None:
        return [("IPv4-mapped", ip.ipv4_mapped)]
    if ip.sixtofour is not None:
        return [("6to4", ip.sixtofour)]
    if ip.teredo is not None:
        server, client = ip.teredo
        return [("Teredo", client), ("Teredo", server)]
    if ip in NAT64_WELL_KNOWN:
        return [("NAT64", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))]
    return []


def _refusal(ip) -> str | None:
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


def address_refusal(address: str) -> str | None:
    """Why a delivery may not connect to ``address`` (an IP address), or None when it is a
    public (globally routable) address. An IPv6 address that embeds an IPv4 address (IPv4-mapped,
    6to4, Teredo, NAT64) is judged as that IPv4 address too, since the network delivers it there
    (a well-known NAT64 address of a public IPv4 passes, as a DNS64 resolver would hand it out);
    the local-use NAT64 prefix 64:ff9b:1::/48 is always refused."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:  # judged as its IPv4 alone
            return _refusal(ip.ipv4_mapped)
        if ip in NAT64_LOCAL_USE:
            return f"{ip} is a local-use NAT64 address (64:ff9b:1::/48)"
        for form, embedded in _embedded_ipv4(ip):
            refusal = _refusal(embedded)
            if refusal is not None:
                return f"{ip} is a {form} address embedding {embedded}: {refusal}"
        if ip in NAT64_WELL_KNOWN:  # Python counts it reserved; DNS64 networks deliver through it
            return None
    return _refusal(ip)


LOCAL_NAMES = ("localhost", "localhost.localdomain")


def is_local_name(host: str) -> bool:
    """``localhost`` and the ``.localhost`` domain name this machine whatever DNS says."""
    host = host.lower().rstrip(".")
    return host in LOCAL_NAMES or host.endswith(".localhost")
