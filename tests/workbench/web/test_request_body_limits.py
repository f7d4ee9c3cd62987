"""Issue 24: ``Content-Length: 2147483648`` with a 15-byte body on ``POST /api/v1/imports/`` held a
thread for over 90 s (the upload cap was not checked against the header and nothing timed the
body out). Now the header is checked before any byte is read (413), and under gunicorn a body
that stops arriving ends the request (408 from the API, 400 from pages)."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse
from google.rpc.status_pb2 import Status

from tests.conftest import _stop
from tests.waiting import wait_until
from workbench.services.api_tokens import create_api_token

ROOT = Path(__file__).resolve().parents[3]
PROBLEM = "application/problem+json"
HUGE = str(2 * 1024**3)  # 2147483648
BODY = b"--x\r\n0123456789"  # 15 bytes of a multipart body


def test_an_upload_announcing_more_than_the_cap_is_413_before_its_body_is_read(client, settings):
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    response = client.generic(
        "POST",
        reverse("api:imports"),
        BODY,
        content_type="multipart/form-data; boundary=x",
        CONTENT_LENGTH=HUGE,
    )
    assert response.status_code == 413 and response["Content-Type"] == PROBLEM
    assert HUGE in response.json()["detail"]


@pytest.mark.django_db
def test_pages_refuse_an_oversized_announcement_too(client_for, admin_user, settings):
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    page = client_for(admin_user)
    for url in (reverse("login"), reverse("api_tokens")):
        response = page.generic(
            "POST", url, BODY, content_type="multipart/form-data; boundary=x", CONTENT_LENGTH=HUGE
        )
        assert response.status_code == 413, url
        assert "Content Too Large" in response.content.decode()


def test_a_json_body_is_capped_at_the_in_memory_limit(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    response = client.generic(
        "POST", reverse("api:version_freeze"), b"{}", content_type="application/json",
        CONTENT_LENGTH="101",
    )  # fmt: skip
    assert response.status_code == 413 and response["Content-Type"] == PROBLEM


def test_an_upload_within_the_cap_goes_on_to_the_endpoint(client, settings):
    settings.IMPORT_MAX_UPLOAD_BYTES = 1000
    response = client.generic(
        "POST", reverse("api:imports"), BODY, content_type="multipart/form-data; boundary=x"
    )
    assert response.status_code == 401  # past the guard: the endpoint wants credentials


def test_a_content_length_that_is_not_a_byte_count_is_400(client):
    response = client.generic(
        "POST", reverse("api:imports"), BODY, content_type="multipart/form-data; boundary=x",
        CONTENT_LENGTH="-5",
    )  # fmt: skip
    assert response.status_code == 400 and response["Content-Type"] == PROBLEM


# ---------------------------------------------------------------- a real gunicorn, a slow client


@pytest.fixture
def gunicorn(postgres, transactional_db, tmp_path):
    """gunicorn serving the workbench (threads, as in docker-compose.yml) on this test's
    database (so PostgreSQL), with a 1 s body timeout and a worker timeout far beyond it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "workbench.settings",
        "SECRET_KEY": "gunicorn-test-secret",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
        "SECURE_SSL_REDIRECT": "false",
        "REQUEST_BODY_TIMEOUT_SECONDS": "1",
        "IMPORT_MAX_UPLOAD_BYTES": "100000",
    }
    env.pop("REDIS_URL", None)  # the guard needs no cache or broker
    log = tmp_path / "gunicorn.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "gunicorn", "workbench.wsgi:application",
                "--bind", f"127.0.0.1:{port}", "--worker-class", "gthread",
                "--workers", "1", "--threads", "2", "--timeout", "300",
            ],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def answering():
        if proc.poll() is not None:
            pytest.fail(f"gunicorn exited:\n{log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False

    wait_until(answering, timeout=120, what=lambda: f"gunicorn to listen:\n{log.read_text()}")
    yield port
    _stop(proc)


def _send(port: int, head: str, body: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    # a guard against a hang, not a timing: the answers below come within seconds
    sock.settimeout(120)
    sock.sendall(head.encode() + b"\r\n" + body)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    sock.close()
    return b"".join(chunks)


def _head(path: str, length: str, *, token: str = "", cookie: str = "") -> str:
    lines = [
        f"POST {path} HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: multipart/form-data; boundary=x",
        f"Content-Length: {length}",
        "Connection: close",
    ]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    if cookie:
        lines.append(f"Cookie: {cookie}")
    return "\r\n".join(lines) + "\r\n"


def test_gunicorn_answers_413_at_once_and_closes_without_draining_two_gib(gunicorn):
    answer = _read_all(_send(gunicorn, _head("/api/v1/imports/", HUGE), BODY))
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"application/problem+json" in answer


def test_gunicorn_ends_an_api_upload_whose_body_stops_arriving_with_408(gunicorn, admin_user):
    _, raw = create_api_token(user=admin_user, name="ci", scope="write")
    # 15 of the 1,000 announced bytes, then nothing: the client holds the connection open
    sock = _send(gunicorn, _head("/api/v1/triples/import/", "1000", token=raw), BODY)
    answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b"stopped arriving" in answer


def test_gunicorn_ends_a_page_form_whose_body_stops_arriving_and_keeps_serving(gunicorn):
    # with a CSRF cookie, so the CSRF check reads the form (the body) before it answers
    slow = _send(gunicorn, _head("/login/", "1000", cookie="csrftoken=" + "a" * 32), BODY)
    answer = _read_all(slow)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:300]
    health = _send(
        gunicorn, "GET /health/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n", b""
    )
    assert _read_all(health).startswith(b"HTTP/1.1 ")


@pytest.mark.parametrize("content_type", ["application/x-protobuf", "application/json"])
def test_gunicorn_answers_an_otlp_exporter_announcing_100_mb_with_a_status_at_once(
    gunicorn, content_type
):
    """Issue 28: a 100 MB traces export (above DATA_UPLOAD_MAX_MEMORY_SIZE, 50 MiB) is refused
    from its Content-Length by the request guard, before the view: the exporter gets the 413
    as OTLP/HTTP answers errors, a google.rpc.Status in its request's encoding, with
    Retry-After, and the 100 MB are neither sent in full nor read (the first 64 KiB go out)."""
    length = str(100 * 1024 * 1024)
    head = "\r\n".join(
        [
            "POST /api/v1/projects/default/otlp/v1/traces HTTP/1.1",
            "Host: 127.0.0.1",
            f"Content-Type: {content_type}",
            f"Content-Length: {length}",
            "Connection: close",
        ]
    )
    answer = _read_all(_send(gunicorn, head + "\r\n", b"\x0a" * 65536))
    status_line, rest = answer.split(b"\r\n", 1)
    headers, body = rest.split(b"\r\n\r\n", 1)
    fields = dict(line.split(b": ", 1) for line in headers.split(b"\r\n"))
    if fields.get(b"Transfer-Encoding") == b"chunked":
        body = _dechunk(body)
    assert status_line.startswith(b"HTTP/1.1 413"), answer[:300]
    assert fields[b"Retry-After"] == b"5"
    if content_type == "application/json":
        assert fields[b"Content-Type"] == PROBLEM.encode()
        problem = json.loads(body)
        code, message = problem["code"], problem["message"]
    else:
        assert fields[b"Content-Type"] == content_type.encode()
        status = Status.FromString(body)
        code, message = status.code, status.message
    assert code == 8 and length in message  # RESOURCE_EXHAUSTED, naming the size


def _dechunk(body: bytes) -> bytes:
    """A chunked transfer-encoded body's bytes."""
    out = b""
    while True:
        size, body = body.split(b"\r\n", 1)
        if not int(size, 16):
            return out
        out, body = out + body[: int(size, 16)], body[int(size, 16) + 2 :]
