"""Webhook rules: the Standard Webhooks signature (the specification's published example and
the independent ``standardwebhooks`` package), secrets, the retry schedule and the address
checks."""

import base64
import datetime as dt
import random

import pytest
from standardwebhooks.webhooks import Webhook

from goldset.rules.webhooks import (
    address_refusal,
    is_local_name,
    new_message_id,
    new_secret,
    retry_delay,
    secret_bytes,
    sign,
)

# The example of the Standard Webhooks specification's reference libraries.
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TIMESTAMP = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_signature_matches_the_specifications_example():
    assert (
        sign(secret=SPEC_SECRET, message_id=SPEC_ID, timestamp=SPEC_TIMESTAMP, body=SPEC_BODY)
        == SPEC_SIGNATURE
    )


def test_signature_agrees_with_the_standardwebhooks_package_for_a_new_secret():
    secret, message_id = new_secret(), new_message_id()
    body = b'{"data":{"version":3},"type":"gold_version.frozen"}'
    ours = sign(secret=secret, message_id=message_id, timestamp=1_800_000_000, body=body)
    theirs = Webhook(secret).sign(
        msg_id=message_id,
        timestamp=dt.datetime.fromtimestamp(1_800_000_000, tz=dt.UTC),
        data=body.decode(),
    )
    assert ours == theirs


def test_secrets_are_whsec_base64_of_32_random_bytes_and_message_ids_msg():
    secret = new_secret()
    assert secret.startswith("whsec_") and len(secret_bytes(secret)) == 32
    assert base64.b64encode(secret_bytes(secret)).decode() == secret.removeprefix("whsec_")
    assert secret != new_secret()
    assert new_message_id().startswith("msg_") and new_message_id() != new_message_id()


def test_retry_delay_doubles_per_attempt_is_capped_and_jitters_up_to_a_quarter():
    rng = random.Random(7)
    for attempt, plain in [(1, 10), (2, 20), (3, 40), (4, 80), (9, 300), (20, 300)]:
        delays = [retry_delay(attempt=attempt, base=10, cap=300, rng=rng) for _ in range(200)]
        assert plain <= min(delays) and max(delays) <= plain * 1.25
        assert max(delays) - min(delays) > 0  # jitter: not all at once


@pytest.mark.parametrize(
    "address,what",
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("240.0.0.1", "reserved"),
        ("fc00::5", "private"),
        ("::ffff:10.0.0.1", "private"),  # IPv4-mapped: judged as its IPv4
        ("100.64.0.1", "not a public"),  # shared address space (carrier-grade NAT)
    ],
)
def test_non_public_addresses_are_refused_with_their_kind(address, what):
    assert what in address_refusal(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
def test_public_addresses_pass(address):
    assert address_refusal(address) is None


@pytest.mark.parametrize(
    "address,embedded,what",
    [
        ("2002:7f00:1::", "127.0.0.1", "loopback"),  # 6to4 of 127.0.0.1 (the case)
        ("2002:a00:1::1", "10.0.0.1", "private"),  # 6to4 of 10.0.0.1
        ("2002:a9fe:a9fe::", "169.254.169.254", "link-local"),
        # Teredo: client 127.0.0.1 (stored XOR-ed: 80ff:fffe), server 65.54.227.120
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1", "loopback"),
        # Teredo with a private server (10.0.0.1) and a public client (93.184.216.34)
        ("2001:0:a00:1::a247:27dd", "10.0.0.1", "private"),
        ("64:ff9b::7f00:1", "127.0.0.1", "loopback"),  # NAT64 well-known prefix
        ("64:ff9b::c0a8:101", "192.168.1.1", "private"),
    ],
)
def test_ipv6_forms_embedding_a_non_public_ipv4_are_refused(address, embedded, what):
    refusal = address_refusal(address)
    assert refusal is not None and embedded in refusal and what in refusal


def test_the_local_use_nat64_prefix_is_refused_whatever_it_embeds():
    assert "local-use NAT64" in address_refusal("64:ff9b:1::5db8:d822")


@pytest.mark.parametrize(
    "address",
    [
        "2002:5db8:d822::1",  # 6to4 of 93.184.216.34
        "64:ff9b::5db8:d822",  # NAT64 of 93.184.216.34
    ],
)
def test_ipv6_forms_embedding_a_public_ipv4_pass(address):
    assert address_refusal(address) is None


def test_localhost_names_are_local_whatever_dns_says():
    assert (
        is_local_name("localhost") and is_local_name("LOCALHOST.") and is_local_name("a.localhost")
    )
    assert not is_local_name("localhost.example.org")
