"""Time on item: what the server trusts of a submit's timing (pure rules)."""

import datetime as dt

import pytest

from goldset.models import Tier
from goldset.rules.time_on_item import (
    decision_ms,
    is_fast,
    measure,
    opening_token,
    parse_active_ms,
    read_opening,
    start_of,
)

NOW = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1234", 1234),
        (" 0 ", 0),
        (None, None),
        ("", None),
        ("-5", None),
        ("12.5", None),
        ("1e6", None),
        ("abc", None),
        ("１２", None),  # full-width digits are not ASCII digits
        ("9" * 5000, 10**15),  # a huge string is capped, never parsed digit by digit
        (["7"], None),
    ],
)
def test_active_time_parses_only_non_negative_integers(raw, expected):
    assert parse_active_ms(raw) == expected


def test_active_time_is_capped_at_server_time_plus_slack(settings):
    settings.ACTIVE_TIME_SLACK_MS = 2000
    start = NOW - dt.timedelta(seconds=10)
    assert measure(started_at=start, now=NOW, active_ms=4000) == (10000, 4000)
    assert measure(started_at=start, now=NOW, active_ms=11500) == (10000, 11500)
    assert measure(started_at=start, now=NOW, active_ms=10**15) == (10000, 12000)
    assert measure(started_at=start, now=NOW, active_ms=None) == (10000, None)
    # no server time: nothing to check the client's figure against
    assert measure(started_at=None, now=NOW, active_ms=4000) == (None, None)
    # a start in the future (clock skew between web servers) is 0, never negative
    assert measure(started_at=NOW + dt.timedelta(seconds=1), now=NOW, active_ms=5) == (0, 5)


def test_opening_token_is_bound_to_kind_object_and_user():
    token = opening_token(kind="label", object_id=7, user_id=3, now=NOW)
    assert read_opening(token, kind="label", object_id=7, user_id=3) == NOW
    assert read_opening(token, kind="review", object_id=7, user_id=3) is None
    assert read_opening(token, kind="label", object_id=8, user_id=3) is None
    assert read_opening(token, kind="label", object_id=7, user_id=4) is None
    assert read_opening(token[:-2] + "xx", kind="label", object_id=7, user_id=3) is None
    assert read_opening("garbage", kind="label", object_id=7, user_id=3) is None
    assert read_opening(None, kind="label", object_id=7, user_id=3) is None
    assert read_opening("x" * 5000, kind="label", object_id=7, user_id=3) is None


def test_server_time_starts_at_the_later_of_claim_and_opening():
    claim, opened = NOW - dt.timedelta(hours=2), NOW - dt.timedelta(seconds=30)
    assert start_of(claim, opened) == opened
    assert start_of(opened, claim) == opened
    assert start_of(claim, None) == claim
    assert start_of(None, None) is None


def test_fast_uses_the_shorter_known_time_and_the_tier_threshold(settings):
    settings.FAST_DECISION_SECONDS_GOLD = 5
    settings.FAST_DECISION_SECONDS_TRIAGE = 2
    assert decision_ms(9000, 1200) == 1200 and decision_ms(None, None) is None
    assert is_fast(tier=Tier.GOLD, server_ms=9000, active_ms=4999)
    assert not is_fast(tier=Tier.GOLD, server_ms=9000, active_ms=5000)
    assert is_fast(tier=Tier.GOLD, server_ms=3000, active_ms=None)
    assert not is_fast(tier=Tier.TRIAGE, server_ms=3000, active_ms=None)
    assert not is_fast(tier=Tier.GOLD, server_ms=None, active_ms=None)
    settings.FAST_DECISION_SECONDS_GOLD = 0  # off
    assert not is_fast(tier=Tier.GOLD, server_ms=1, active_ms=1)
