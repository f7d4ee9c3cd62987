"""The client's download keeps nothing when the bytes do not match the announced sha256. The
server never sends a wrong checksum, so a transport that corrupts the body stands in for the
network (the boundary); the real server's downloads are checked end to end."""

import hashlib

import httpx
import pytest
from goldset_client import ChecksumMismatch, GoldsetClient, NotFound


def serve(body: bytes, announced: str):
    def handler(request: httpx.Request) -> httpx.Response:
        if "/download/" not in request.url.path:
            return httpx.Response(
                404,
                json={"title": "Not Found", "status": 404, "detail": "no such version"},
                headers={"Content-Type": "application/problem+json"},
            )
        return httpx.Response(
            200,
            content=body,
            headers={
                "X-Checksum-SHA256": announced,
                "Content-Disposition": 'attachment; filename="goldset-v2-gold.jsonl"',
            },
        )

    return GoldsetClient("http://goldset.test", "gst_x", transport=httpx.MockTransport(handler))


def test_a_download_that_does_not_match_its_checksum_leaves_nothing(tmp_path):
    body = b'{"id": "Q-1"}\n'
    with serve(body + b"tampered", hashlib.sha256(body).hexdigest()) as gs:
        with pytest.raises(ChecksumMismatch):
            gs.download_version(2, "gold_jsonl", tmp_path)
    assert list(tmp_path.iterdir()) == []
    with serve(body, hashlib.sha256(body).hexdigest()) as gs:
        done = gs.download_version("v2", "gold_jsonl", tmp_path)
        assert done.path == tmp_path / "goldset-v2-gold.jsonl" and done.path.read_bytes() == body
        with pytest.raises(NotFound) as missing:
            gs.get_version(9)
    assert missing.value.detail == "no such version" and missing.value.status == 404
