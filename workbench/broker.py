"""The Redis broker transport of every Celery process: kombu's, made to survive a broker restart.

Why (issue 24): a worker's main process exited with ``Unrecoverable error: AttributeError("'NoneType'
object has no attribute 'hostname'")`` when Redis restarted while it held an unacknowledged
message (an agreement recompute in progress), in about one restart of two. Reproduced with
celery 5.7.0 / kombu 5.7.0, a prefork worker with two processes and one task running:

1. Redis goes away while the consumer's default channel waits in ``BRPOP`` (a second pool
   process is free, so the worker asks for more work) and the loss is noticed first on another
   connection (the remote-control or gossip subscription).
2. Celery calls ``Connection.collect()``. Closing the default channel first reads the pending
   ``BRPOP`` reply, which fails, so that channel stays open with its unacknowledged message;
   closing the others stops at the first that cannot reach Redis. Then ``collect()`` detaches
   the transport from the connection: ``transport.client = None``.
3. Celery then calls ``connection.close()``, which closes the default channel again. The
   channel restores its unacknowledged message, which needs a new Redis pool, whose parameters
   are read from ``transport.client`` — now ``None``. The ``AttributeError`` is not a connection
   error, so nothing on the way catches it and the worker stops.

Which connection notices the loss first is a race, hence "one restart of two". Configuration
does not avoid it: ``worker_cancel_long_running_tasks_on_connection_loss`` acts after the close,
and no setting turns off the restore (kombu 5.7.0 is the newest release).

The fix: the transport keeps its connection's parameters after kombu detaches it, so a channel
closed (or a message acknowledged) late still builds its pool from them. Redis being down then
fails the restore with a connection error, which Celery handles as for any other channel (the
message stays in Redis's unacknowledged set and is delivered again after the visibility
timeout; our outbox and reconciler requeue the work in any case); Redis back already restores
it at once. ``tests/workbench/worker/test_broker_restarts.py`` restarts Redis five times under
such a worker and checks that its main process lives and still runs tasks.

Selected by ``CELERY_BROKER_TRANSPORT`` (workbench.settings) for ``redis://`` and ``rediss://``
broker URLs; the URL's parameters (TLS included) are read as kombu's own transport reads them.
"""

from kombu.transport import redis as kombu_redis
from redis import exceptions as redis_exceptions


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous=False):
        if self.connection is None:  # closed and released by its transport
            raise redis_exceptions.ConnectionError("this broker channel is closed")
        return super()._connparams(asynchronous=asynchronous)


class Transport(kombu_redis.Transport):
    """kombu's Redis transport whose ``client`` (the kombu ``Connection`` holding the URL's
    parameters) outlives ``Connection.collect()``/``close()``: they set it to ``None`` to
    detach the transport, while its channels may still need it (see the module docstring)."""

    Channel = Channel

    @property
    def client(self):
        return self._broker_client

    @client.setter
    def client(self, value):
        if value is not None or not hasattr(self, "_broker_client"):
            self._broker_client = value
