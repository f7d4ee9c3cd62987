"""The client tries again on 429/503 (after Retry-After) and on connection errors, with the
same Idempotency-Key on every try of a write (POST, PUT, PATCH, DELETE; none on a GET); a Retry-After longer than it will wait raises at
once. A transport that answers 429/503 or drops the connection stands in for the network (the
boundary); the live server's 429 is checked in test_client_operations."""

import asyncio
import inspect
import threading

import httpx
import pytest
from goldset_client import (
    NO_RETRY,
    AsyncGoldsetClient,
    Conflict,
    GoldsetClient,
    RateLimited,
    RetryPolicy,
    ServerError,
    TransportError,
    operation_ids,
)
from goldset_client._retry import parse_retry_after

from tests.client._loop import run_in_own_loop

FAST = RetryPolicy(attempts=3, backoff=0.001, max_backoff=0.002, max_retry_after=1.0)
DOMAINS = {"next": None, "previous": None, "results": [{"slug": "hr", "name": "HR"}]}
JOB = {"id": 7, "kind": "answers", "status": "queued", "summary": {}, "message": ""}


def flaky(*answers):
    """A transport answering each request with the next of ``answers`` (a status, with its
    Retry-After, an exception to raise, or the final JSON body); it records the requests."""
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers[min(len(seen) - 1, len(answers) - 1)]
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, tuple):
            status, retry_after = answer
            headers = {"Content-Type": "application/problem+json"}
            if retry_after is not None:
                headers["Retry-After"] = retry_after
            body = {"title": "Too Many Requests", "status": status, "detail": "slow down"}
            return httpx.Response(status, json=body, headers=headers)
        return httpx.Response(202 if request.method == "POST" else 200, json=answer)

    return handler, seen


def test_a_429_with_retry_after_is_retried_and_then_succeeds():
    handler, seen = flaky((429, "0"), (503, None), DOMAINS)
    with GoldsetClient(
        "http://gs.test", "t", retry=FAST, transport=httpx.MockTransport(handler)
    ) as gs:
        assert [d.slug for d in gs.list_domains()] == ["hr"]
    assert len(seen) == 3


def test_every_try_of_a_post_carries_the_same_idempotency_key():
    handler, seen = flaky(httpx.ConnectError("refused"), (429, "0"), JOB)
    with GoldsetClient(
        "http://gs.test", "t", retry=FAST, transport=httpx.MockTransport(handler)
    ) as gs:
        job = gs.import_answers(b'{"a": 1}\n')
    assert job.id == 7 and len(seen) == 3
    keys = {r.headers["Idempotency-Key"] for r in seen}
    assert len(keys) == 1 and next(iter(keys))
    assert all(b'{"a": 1}' in r.read() for r in seen)  # the file is sent whole each time


RULE = {"id": 3, "name": "tenth", "kind": "percentage", "version": 2, "daily_cap": 5}
SETTINGS = [{"name": "KAPPA_GATE", "own": "0.8", "value": 0.8, "overridden": True}]


@pytest.mark.parametrize(
    ("call", "answer"),
    [
        pytest.param(lambda gs: gs.update_sampling_rule(3, daily_cap=5), RULE, id="patch-rule"),
        pytest.param(lambda gs: gs.patch_webhook(3, enabled=False), RULE, id="patch-webhook"),
        pytest.param(
            lambda gs: gs.update_webhook(3, url="https://h.example.org/", events=["tag.moved"]),
            RULE,
            id="put-webhook",
        ),
        pytest.param(lambda gs: gs.set_tag("ci", 3), RULE, id="put-tag"),
        pytest.param(lambda gs: gs.delete_tag("ci"), RULE, id="delete-tag"),
        pytest.param(lambda gs: gs.delete_webhook(3), RULE, id="delete-webhook"),
        pytest.param(
            lambda gs: gs.update_project(archived=True, project="bot"), RULE, id="patch-project"
        ),
        pytest.param(
            lambda gs: gs.update_project_settings(KAPPA_GATE="0.8"), SETTINGS, id="patch-settings"
        ),
        pytest.param(lambda gs: gs.set_member_role("ann", "admin"), RULE, id="patch-member-role"),
        pytest.param(lambda gs: gs.remove_member("ann"), RULE, id="delete-member"),
        pytest.param(lambda gs: gs.delete_project("bot"), RULE, id="delete-project"),
    ],
)
def test_every_try_of_a_put_patch_or_delete_carries_the_same_idempotency_key(call, answer):
    handler, seen = flaky(httpx.ReadError("dropped"), (503, "0"), answer)
    with GoldsetClient(
        "http://gs.test", "t", retry=FAST, transport=httpx.MockTransport(handler)
    ) as gs:
        call(gs)
    assert len(seen) == 3 and seen[0].method in ("PUT", "PATCH", "DELETE")
    assert len({r.headers["Idempotency-Key"] for r in seen}) == 1
    assert seen[0].headers["Idempotency-Key"]


def test_every_write_operation_takes_an_idempotency_key_and_no_read_does():
    """The schema's operationIds name the method (drf-spectacular: POST ``_create``, PUT
    ``_update``, PATCH ``_partial_update``, DELETE ``_destroy``): each write lets the caller
    give the key (sent as is) that the client otherwise makes up."""
    writes = ("_create", "_update", "_destroy")
    for operation_id, name in operation_ids(GoldsetClient).items():
        takes_key = "idempotency_key" in inspect.signature(getattr(GoldsetClient, name)).parameters
        assert takes_key == operation_id.endswith(writes), (operation_id, name)


def test_a_get_carries_no_idempotency_key():
    handler, seen = flaky(RULE)
    with GoldsetClient("http://gs.test", "t", transport=httpx.MockTransport(handler)) as gs:
        gs.get_sampling_rule(3)
    assert "Idempotency-Key" not in seen[0].headers


def test_two_calls_use_two_keys_and_a_given_key_is_sent_as_is():
    handler, seen = flaky(JOB)
    with GoldsetClient("http://gs.test", "t", transport=httpx.MockTransport(handler)) as gs:
        gs.cancel_import(7)
        gs.cancel_import(7)
        gs.cancel_import(7, idempotency_key="nightly-42")
    keys = [r.headers["Idempotency-Key"] for r in seen]
    assert keys[0] != keys[1] and keys[2] == "nightly-42"


def test_a_retry_after_longer_than_the_policy_waits_raises_at_once_with_it():
    handler, seen = flaky((429, "120"), DOMAINS)
    with GoldsetClient(
        "http://gs.test", "t", retry=FAST, transport=httpx.MockTransport(handler)
    ) as gs:
        with pytest.raises(RateLimited) as refused:
            list(gs.list_domains())
    assert refused.value.retry_after == 120 and len(seen) == 1


def test_retries_end_after_the_attempts_and_no_retry_tries_once():
    handler, seen = flaky((503, None))
    with GoldsetClient(
        "http://gs.test", "t", retry=FAST, transport=httpx.MockTransport(handler)
    ) as gs:
        with pytest.raises(ServerError):
            gs.get_job(1)
    assert len(seen) == 3
    handler, seen = flaky(httpx.ConnectError("refused"), DOMAINS)
    transport = httpx.MockTransport(handler)
    with GoldsetClient("http://gs.test", "t", retry=NO_RETRY, transport=transport) as gs:
        with pytest.raises(TransportError):
            list(gs.list_domains())
    assert len(seen) == 1


def test_the_async_client_retries_the_same_way():
    handler, seen = flaky((429, "0"), httpx.ReadTimeout("slow"), JOB)

    async def run():
        transport = httpx.MockTransport(handler)
        async with AsyncGoldsetClient("http://gs.test", "t", retry=FAST, transport=transport) as gs:
            return await gs.retry_import(7)

    assert run_in_own_loop(run()).id == 7
    assert len(seen) == 3 and len({r.headers["Idempotency-Key"] for r in seen}) == 1


def test_retry_after_is_read_as_seconds_or_an_http_date():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


PATIENT = RetryPolicy(attempts=3, backoff=0.001, max_backoff=0.002, max_retry_after=3600.0)


def test_closing_the_client_ends_a_wait_for_retry_after_at_once():
    """A client waiting out an hour's Retry-After in one thread is closed from another: the
    call ends with a TransportError (the wait is on the client's closing, not on a clock)."""
    asked = threading.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        asked.set()
        return httpx.Response(503, headers={"Retry-After": "3600"})

    gs = GoldsetClient("http://gs.test", "t", retry=PATIENT, transport=httpx.MockTransport(handler))
    closer = threading.Thread(target=lambda: asked.wait(30) and gs.close())
    closer.start()
    with pytest.raises(TransportError, match="closed while waiting"):
        list(gs.list_domains())
    closer.join(30)
    assert not closer.is_alive()


def test_closing_the_async_client_ends_a_wait_for_retry_after_at_once():
    async def scenario():
        asked = asyncio.Event()

        def handler(request: httpx.Request) -> httpx.Response:
            asked.set()
            return httpx.Response(503, headers={"Retry-After": "3600"})

        gs = AsyncGoldsetClient(
            "http://gs.test", "t", retry=PATIENT, transport=httpx.MockTransport(handler)
        )

        async def listing():
            return [d async for d in gs.list_domains()]

        call = asyncio.create_task(listing())
        await asyncio.wait_for(asked.wait(), 30)
        await gs.aclose()
        with pytest.raises(TransportError, match="closed while waiting"):
            await asyncio.wait_for(call, 30)

    run_in_own_loop(scenario())


def test_a_write_whose_first_try_is_still_running_is_tried_again_and_gets_the_first_answer():
    # a write tried again after a timeout can reach the server while its first try is still
    # being answered (seen at load 12): the API's 409 for that key is not a conflict of state
    seen = []
    running = {"title": "Conflict", "status": 409,
               "detail": "A request with this Idempotency-Key is still running; retry later."}  # fmt: skip

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            raise httpx.ReadTimeout("slow first answer", request=request)
        if len(seen) == 2:
            return httpx.Response(409, json=running)
        return httpx.Response(202, json=JOB)

    with GoldsetClient(
        "http://gs.test", "t", retry=FAST, transport=httpx.MockTransport(handler)
    ) as gs:
        assert gs.cancel_import(7).id == 7
    assert len(seen) == 3
    assert len({r.headers["Idempotency-Key"] for r in seen}) == 1


RUNNING = {"title": "Conflict", "status": 409,
           "detail": "A request with this Idempotency-Key is still running; retry later."}  # fmt: skip


def _slow_first_try(running_answers: int):
    """A first try that times out, then ``running_answers`` 409 "still running", then the
    first try's answer (202)."""
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            raise httpx.ReadTimeout("slow first answer", request=request)
        if len(seen) <= 1 + running_answers:
            return httpx.Response(409, json=RUNNING)
        return httpx.Response(202, json=JOB)

    return handler, seen


def test_waiting_for_a_first_try_still_running_spends_no_retry():
    # at load 15 a label's first try outlived the 60 s timeout and the three retries the policy
    # allows all came within 4 s, each finding it still running: the client waits for it as
    # long as its timeout, however many polls that takes, with the same key
    handler, seen = _slow_first_try(running_answers=8)
    with GoldsetClient(
        "http://gs.test", "t", retry=FAST, transport=httpx.MockTransport(handler)
    ) as gs:
        assert gs.cancel_import(7).id == 7
    assert len(seen) == 10  # 1 timed out + 8 "running" + the answer, with 3 attempts allowed
    assert len({r.headers["Idempotency-Key"] for r in seen}) == 1

    async def run():
        handler, seen = _slow_first_try(running_answers=8)
        transport = httpx.MockTransport(handler)
        async with AsyncGoldsetClient("http://gs.test", "t", retry=FAST, transport=transport) as gs:
            return (await gs.cancel_import(7)).id, seen

    job_id, seen = run_in_own_loop(run())
    assert job_id == 7 and len(seen) == 10
    assert len({r.headers["Idempotency-Key"] for r in seen}) == 1


def test_a_first_try_still_running_after_the_timeout_raises_the_conflict():
    handler, seen = _slow_first_try(running_answers=10**6)
    with GoldsetClient(
        "http://gs.test", "t", timeout=0.2, retry=FAST, transport=httpx.MockTransport(handler)
    ) as gs:
        with pytest.raises(Conflict, match="still running"):
            gs.cancel_import(7)
    assert 3 <= len(seen) < 10**6  # it polled, then gave up at its timeout
    handler, seen = _slow_first_try(running_answers=1)
    with GoldsetClient(
        "http://gs.test", "t", retry=NO_RETRY, transport=httpx.MockTransport(handler)
    ) as gs:
        with pytest.raises(TransportError):
            gs.cancel_import(7)
    assert len(seen) == 1  # a client that never retries never polls either


def test_a_409_of_the_objects_state_is_not_tried_again():
    handler, seen = flaky((409, None), JOB)
    with GoldsetClient(
        "http://gs.test", "t", retry=FAST, transport=httpx.MockTransport(handler)
    ) as gs:
        with pytest.raises(Conflict):
            gs.cancel_import(7)
    assert len(seen) == 1
