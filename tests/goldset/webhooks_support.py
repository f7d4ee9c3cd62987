"""A loopback webhook receiver for tests: an ``http.server`` in a thread on a free 127.0.0.1
port that verifies every request with the ``standardwebhooks`` package (an independent
implementation of the specification) and answers the status codes it is given, in order."""

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes
    verified: bool
    payload: dict | None
    at: float = field(default_factory=time.monotonic)


@dataclass
class Receiver:
    """Answers ``statuses`` in order (the last one repeats), each after its ``delays`` entry;
    ``secret`` verifies signatures (set it once the endpoint exists)."""

    statuses: list[int] = field(default_factory=lambda: [200])
    delays: list[float] = field(default_factory=list)  # seconds before answering, per request
    secret: str = ""
    requests: list[Received] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/goldset"

    def _handle(self, handler: BaseHTTPRequestHandler) -> int:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            payload = Webhook(self.secret).verify(body, headers)
            verified = True
        except (WebhookVerificationError, ValueError):
            payload, verified = None, False
        with self.arrived:
            self.requests.append(Received(handler.path, headers, body, verified, payload))
            count = len(self.requests)
            self.arrived.notify_all()
        if count <= len(self.delays):
            threading.Event().wait(self.delays[count - 1])
        return self.statuses[min(count, len(self.statuses)) - 1]

    def wait_for(self, count: int, *, deadline_s: float = 30.0) -> list[Received]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.requests) >= count, timeout=deadline_s)
        return self.requests


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def receiver():
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            status = state._handle(self)
            answer = json.dumps({"status": status}).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    state.port = _free_port()
    server = ThreadingHTTPServer(("127.0.0.1", state.port), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def no_outside_connections(monkeypatch):
    """Record every connection attempt and fail those to an address other than 127.0.0.1, so a
    refusal test proves the refusal came before any traffic (``assert attempts == []``)."""
    attempts: list = []
    real_connect = socket.socket.connect

    def guarded(sock, address):
        host = address[0] if isinstance(address, tuple) else address
        attempts.append(address)
        if host != "127.0.0.1":
            raise AssertionError(f"a test tried to connect to {address}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    return attempts
