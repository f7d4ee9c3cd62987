"""Progress callbacks: an upload reports the bytes sent, a wait reports the job's percent at each
poll (sync and async). A transport playing the server's successive answers stands in for the
network; the live server's uploads and downloads report progress in test_client_operations."""

import json

import httpx
from goldset_client import AsyncGoldsetClient, GoldsetClient, Progress

from tests.client._loop import run_in_own_loop


def job(status, progress, **extra):
    return {"id": 5, "kind": "answers", "status": status, "progress": progress, "summary": {},
            "message": "", **extra}  # fmt: skip


def server():
    """Answers the upload with a queued job, then the polls with 40 %, then done."""
    polls = iter([job("running", 40), job("succeeded", 100)])

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            request.read()
            return httpx.Response(202, json=job("queued", 0))
        return httpx.Response(200, json=next(polls))

    return httpx.MockTransport(handler)


def test_an_upload_and_its_wait_report_bytes_then_percent():
    seen: list[Progress] = []
    records = [{"question_id": f"q{i}", "answer": "x" * 100} for i in range(2000)]
    size = len("".join(json.dumps(r) + "\n" for r in records).encode())
    with GoldsetClient("http://gs.test", "t", poll_interval=0, transport=server()) as gs:
        done = gs.push_answers(records, progress=seen.append)
    assert done.status == "succeeded"
    uploads = [p for p in seen if p.stage == "upload"]
    assert len(uploads) > 1 and uploads[-1] == Progress("upload", size, size)
    assert [p.done for p in uploads] == sorted(p.done for p in uploads)
    assert [p for p in seen if p.stage == "import"] == [
        Progress("import", 40, 100),
        Progress("import", 100, 100),
    ]


def test_the_async_wait_reports_the_same_percentages():
    seen: list[Progress] = []

    async def run():
        async with AsyncGoldsetClient("http://gs.test", "t", poll_interval=0,
                                      transport=server()) as gs:  # fmt: skip
            return await gs.push_answers(b'{"a": 1}\n', progress=seen.append)

    assert run_in_own_loop(run()).status == "succeeded"
    assert [p.done for p in seen if p.stage == "import"] == [40, 100]
    assert [p.stage for p in seen][0] == "upload"
