"""The client's address, taken through the configured number of trusted reverse proxies.

With ``TRUSTED_PROXY_HOPS = 0`` (the default) the address is ``REMOTE_ADDR`` and any
``X-Forwarded-For`` header is ignored: a client could write anything there. With ``n`` trusted
proxies in front of the app, each appends the address it received the request from, so the client
is the ``n``-th entry from the right of ``X-Forwarded-For``; entries further left are the client's
own claims and are never used. A header shorter than ``n`` entries, or an entry that is not an IP
address, means the proxies are not configured as declared: ``REMOTE_ADDR`` is used instead.
"""

import ipaddress

from django.conf import settings


def client_address(request) -> str:
    remote = request.META.get("REMOTE_ADDR", "") or ""
    hops = int(getattr(settings, "TRUSTED_PROXY_HOPS", 0) or 0)
    if hops <= 0:
        return remote
    forwarded = [
        part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part
    ]
    if len(forwarded) < hops:
        return remote
    candidate = forwarded[-hops]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote
