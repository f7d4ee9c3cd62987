"""Time on item (issue 14): what the server trusts of a decision's timing, as pure functions.

* The **server time** runs from the later of the claim and the opening of the item's page to the
  submit. The page carries a signed *opening token* (kind, object, user, time) so the server knows
  when the form it receives was rendered without storing a row per page view.
* The **active time** is measured by the browser (``static/js/app.js``: visible and not idle for
  longer than ``ACTIVE_IDLE_GAP_SECONDS``). It arrives as text: a non-negative integer is kept,
  capped at the server time plus ``ACTIVE_TIME_SLACK_MS``; anything else (missing, negative,
  garbage) is ``None``, never an error. Without a server time there is nothing to check it
  against, so it is ``None`` too.
* A decision is **fast** when the shorter known time is under its tier's threshold
  (``FAST_DECISION_SECONDS_GOLD`` / ``_TRIAGE``; 0 turns the check off).
"""

import datetime as dt
import re
from dataclasses import dataclass

from django.core import signing

from goldset.conf import tunable
from goldset.models import Tier

_SALT = "goldset.time_on_item.opening"
_DIGITS = re.compile(r"[0-9]+")
_MAX_DIGITS = 15  # ~31,700 years in ms: anything longer is capped, never parsed


@dataclass(frozen=True)
class ItemTiming:
    """What a submit brings about its own timing: the verified page opening and the client's
    active milliseconds (both None when missing or not trustworthy)."""

    opened_at: dt.datetime | None = None
    active_ms: int | None = None


NO_TIMING = ItemTiming()


def opening_token(*, kind: str, object_id: int, user_id: int, now: dt.datetime) -> str:
    """A signed token saying this user opened this object's form at ``now``."""
    stamp = int(now.timestamp() * 1000)
    return signing.Signer(salt=_SALT).sign(f"{kind}:{object_id}:{user_id}:{stamp}")


def read_opening(token, *, kind: str, object_id: int, user_id: int) -> dt.datetime | None:
    """The opening time in a valid token for exactly this (kind, object, user); else None."""
    if not isinstance(token, str) or not token or len(token) > 200:
        return None
    try:
        value = signing.Signer(salt=_SALT).unsign(token)
    except signing.BadSignature:
        return None
    parts = value.split(":")
    if len(parts) != 4 or parts[:3] != [kind, str(object_id), str(user_id)]:
        return None
    return dt.datetime.fromtimestamp(int(parts[3]) / 1000, tz=dt.UTC)


def parse_active_ms(raw) -> int | None:
    """The client's active time as sent: a non-negative integer of ms, or None. Very long digit
    strings are returned as a huge number (capped later), never parsed digit by digit."""
    if raw is None:
        return None
    text = str(raw).strip()
    if not _DIGITS.fullmatch(text):
        return None
    if len(text) > _MAX_DIGITS:
        return 10**_MAX_DIGITS
    return int(text)


def measure(
    *, started_at: dt.datetime | None, now: dt.datetime, active_ms: int | None
) -> tuple[int | None, int | None]:
    """(server_ms, active_ms) as stored: the server time since ``started_at`` (None when
    unknown) and the client's active time capped at server time + ``ACTIVE_TIME_SLACK_MS``."""
    if started_at is None:
        return None, None
    server_ms = max(0, int((now - started_at).total_seconds() * 1000))
    if active_ms is None or active_ms < 0:
        return server_ms, None
    return server_ms, min(active_ms, server_ms + tunable("ACTIVE_TIME_SLACK_MS"))


def start_of(claimed_at: dt.datetime | None, opened_at: dt.datetime | None) -> dt.datetime | None:
    """The later of the claim and the page opening (the opening alone when nothing is claimed)."""
    known = [t for t in (claimed_at, opened_at) if t is not None]
    return max(known) if known else None


def fast_threshold_ms(tier: str, *, project=None) -> int:
    """The tier's fast-decision threshold in ms (0: no check), the project's setting when
    given, else the installation's."""
    name = "FAST_DECISION_SECONDS_GOLD" if tier == Tier.GOLD else "FAST_DECISION_SECONDS_TRIAGE"
    return int(float(tunable(name, project=project)) * 1000)


def decision_ms(server_ms: int | None, active_ms: int | None) -> int | None:
    """The time a fast-decision check compares: the shorter of the known times."""
    known = [t for t in (server_ms, active_ms) if t is not None]
    return min(known) if known else None


def is_fast(*, tier: str, server_ms: int | None, active_ms: int | None, project=None) -> bool:
    threshold = fast_threshold_ms(tier, project=project)
    took = decision_ms(server_ms, active_ms)
    return threshold > 0 and took is not None and took < threshold
