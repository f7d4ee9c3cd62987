"""workbench.broker, the cause of issue 24's worker crash in a few lines, without processes:
kombu's ``Connection.collect()`` (what Celery calls when the broker connection is lost) detaches
the transport, and a channel of it that still has to restore or acknowledge a message then needs
a new Redis pool. With kombu's transport that is the AttributeError that stopped the worker;
with ours the pool is built from the kept parameters, and a channel closed for good answers
with a connection error, which Celery handles."""

import pytest
from kombu import Connection
from redis.exceptions import ConnectionError as RedisConnectionError

from workbench.broker import Transport


def _collected_channel(url: str, transport: str):
    connection = Connection(url, transport=transport)
    channel = connection.channel()
    # With Redis gone, collect() stops closing channels at the first that cannot reach it: this
    # one stays open, with its unacknowledged messages.
    connection.transport.channels.remove(channel)
    connection.collect()  # as Celery does on a lost connection: detaches the transport
    channel._disconnect_pools()  # as the channel's later close does before restoring
    return channel


def test_kombus_own_transport_loses_the_parameters_a_late_restore_needs(redis_url):
    channel = _collected_channel(redis_url, "kombu.transport.redis:Transport")
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'hostname'"):
        channel._connparams()


def test_ours_keeps_them_so_a_late_restore_reaches_redis(redis_url):
    channel = _collected_channel(redis_url, "workbench.broker:Transport")
    assert isinstance(channel.connection, Transport)
    params = channel._connparams()
    assert f"{params['host']}:{params['port']}" in redis_url
    with channel.conn_or_acquire() as client:
        assert client.ping()


def test_a_channel_closed_for_good_answers_with_a_connection_error(redis_url):
    connection = Connection(redis_url, transport="workbench.broker:Transport")
    channel = connection.channel()
    connection.close()
    assert channel.connection is None
    with pytest.raises(RedisConnectionError):
        channel._connparams()


def test_every_celery_process_uses_it_with_redis(redis_url):
    from django.conf import settings

    assert settings.CELERY_BROKER_TRANSPORT == "workbench.broker:Transport"
