"""One download path for a gold version's files (``serve_version_file``), used by the page and
the API: the same bytes under the same filename, the audit event and the X-Checksum-SHA256
header name the checksum of the bytes sent, and both surfaces answer with the same status codes
(404 no such file, 500 failed integrity)."""

import hashlib

import pytest
from django.db import connection
from django.urls import reverse

from goldset.models import GoldVersionFileChunk
from tests.goldset.web.test_blinded_downloads import frozen  # noqa: F401 (a fixture)
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db

SURFACES = ("exports:download", "api:version_download")


def _get(client, surface, version, fmt):
    return client.get(reverse(surface, args=[version.number, fmt]))


def _events(user):
    return list(
        AuditEvent.objects.filter(actor=user, verb="gold_version_downloaded").order_by("id")
    )


@pytest.mark.parametrize("who", ["lead", "admin_user"])
@pytest.mark.parametrize("fmt", ["adjudication", "gold_jsonl", "manifest"])
def test_page_and_api_send_the_same_file_audited_with_the_checksum_of_what_was_sent(
    request,
    client_for,
    frozen,  # noqa: F811 (the imported fixture)
    who,
    fmt,
):
    user = request.getfixturevalue(who)
    client = client_for(user)
    sent = {}
    for surface in SURFACES:
        response = _get(client, surface, frozen, fmt)
        assert response.status_code == 200
        body = b"".join(response.streaming_content)
        digest = hashlib.sha256(body).hexdigest()
        assert response["X-Checksum-SHA256"] == digest
        assert int(response["Content-Length"]) == len(body)
        sent[surface] = (body, response["Content-Disposition"])
    (page_body, page_name), (api_body, api_name) = sent.values()
    assert page_body == api_body and page_name == api_name
    events = _events(user)
    assert [e.detail["via"] for e in events] == ["page", "api"]
    assert {e.detail["sha256"] for e in events} == {hashlib.sha256(page_body).hexdigest()}
    blinded = who == "lead" and fmt != "manifest"
    # the blinded variant is named so; the file as stored is not
    assert ("blinded-" in page_name) is blinded
    assert all(e.detail["fields"] == ("role" if blinded else "all") for e in events)
    stored = frozen.files.get(format=fmt, redacted=False)
    assert (events[0].detail["sha256"] == stored.sha256) is not blinded


def test_no_such_format_is_a_404_on_both_surfaces(client_for, lead, frozen):  # noqa: F811
    client = client_for(lead)
    for surface in SURFACES:
        assert _get(client, surface, frozen, "nope").status_code == 404
    assert _events(lead) == []


def test_a_tampered_file_is_refused_the_same_way_on_both_surfaces(
    client_for,
    admin_user,
    frozen,  # noqa: F811
):
    chunk = GoldVersionFileChunk.objects.get(file__version=frozen, file__format="gold_jsonl")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "UPDATE goldset_goldversionfilechunk SET data = %s WHERE id = %s", [b"{}\n", chunk.pk]
        )
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL session_replication_role = origin")
    client = client_for(admin_user)
    for surface in SURFACES:
        response = _get(client, surface, frozen, "gold_jsonl")
        assert response.status_code == 500 and "Content-Disposition" not in response
        assert "integrity check" in response.content.decode()
    assert _events(admin_user) == []
