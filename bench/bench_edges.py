"""Issue 24, API edges: how long bad request bodies hold a gunicorn thread, and what the atomic
rate limit costs per request.

    DATABASE_URL=... REDIS_URL=redis://127.0.0.1:6393/0 SECRET_KEY=x \\
        python bench/bench_edges.py [--stall-timeout 5]

1. gunicorn (gthread, 1 worker, 2 threads, as in docker-compose.yml) serves the workbench; a client
   announces ``Content-Length: 2147483648`` on ``POST /api/v1/imports/`` and sends 15 bytes: the
   time until the server has answered and closed the connection (issue 24: over 90 s).
2. The same client announces 1,000 bytes on the login form and sends 15: the time until the
   server ends the request (``REQUEST_BODY_TIMEOUT_SECONDS``, set here to ``--stall-timeout``).
3. ``hit_rate_limit`` on Redis: microseconds per call, one thread and 8 threads, and how many of
   650 concurrent calls pass a limit of 600.
Prints the load average beside each figure: the machine is shared, so expect noise.
"""

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.waiting import wait_until  # noqa: E402


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}/{fifteen:.1f}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answer_time(port: int, head: str, body: bytes) -> tuple[float, bytes]:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(600)
    started = time.perf_counter()
    sock.sendall(head.encode() + b"\r\n" + body)
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    sock.close()
    return time.perf_counter() - started, b"".join(chunks)[:12]


def bench_gunicorn(stall_timeout: float) -> None:
    port = free_port()
    env = {**os.environ, "REQUEST_BODY_TIMEOUT_SECONDS": str(stall_timeout)}
    env.setdefault("SECURE_SSL_REDIRECT", "false")
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "gunicorn", "workbench.wsgi:application",
            "--bind", f"127.0.0.1:{port}", "--worker-class", "gthread",
            "--workers", "1", "--threads", "2", "--timeout", "600",
        ],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(lambda: _listening(port), timeout=60, what=f"gunicorn on port {port}")
        multipart = "Content-Type: multipart/form-data; boundary=x\r\n"
        huge = f"POST /api/v1/imports/ HTTP/1.1\r\nHost: 127.0.0.1\r\n{multipart}Content-Length: 2147483648\r\n"
        answer_time(port, huge, b"--x\r\n0123456789")  # warm the worker
        times = [answer_time(port, huge, b"--x\r\n0123456789") for _ in range(5)]
        print(
            f"2 GiB announced, 15 bytes sent: answered {times[0][1]!r}, closed after "
            f"{min(t for t, _ in times):.3f}-{max(t for t, _ in times):.3f} s (5 runs; {load()})"
        )
        stalled = (
            "POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"{multipart}Content-Length: 1000\r\nCookie: csrftoken={'a' * 32}\r\n"
        )
        seconds, status = answer_time(port, stalled, b"--x\r\n0123456789")
        print(
            f"1000 bytes announced, 15 sent, then nothing: answered {status!r} after {seconds:.2f} s "
            f"(REQUEST_BODY_TIMEOUT_SECONDS={stall_timeout}; {load()})"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def bench_rate_limit() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "workbench.settings")
    django.setup()
    from workbench.services.rate_limits import hit_rate_limit

    n = 5000
    started = time.perf_counter()
    for _ in range(n):
        hit_rate_limit(key=f"bench-{os.getpid()}-single", limit=10**9, window_seconds=60)
    single = (time.perf_counter() - started) / n * 1e6
    print(f"hit_rate_limit on Redis, 1 thread: {single:.0f} µs per call ({n} calls; {load()})")

    passed, barrier, lock = [], threading.Barrier(8), threading.Lock()
    key = f"bench-{os.getpid()}-650"

    def run(count):
        barrier.wait()
        mine = [
            hit_rate_limit(key=key, limit=600, window_seconds=3600).allowed for _ in range(count)
        ]
        with lock:
            passed.extend(mine)

    threads = [threading.Thread(target=run, args=(82 if i < 2 else 81,)) for i in range(8)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    print(
        f"650 calls from 8 threads against 600/window: {passed.count(True)} passed, "
        f"{passed.count(False)} refused, in {elapsed:.2f} s ({load()})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stall-timeout", type=float, default=5.0)
    args = parser.parse_args()
    bench_gunicorn(args.stall_timeout)
    bench_rate_limit()
