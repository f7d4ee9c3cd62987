"""TREC qrels of a frozen gold version (``qid 0 docid rel``): stored at freeze time beside the
other formats with its checksum in the manifest, downloaded from the version page and the API
under the same access rule as the other files (leads and admins; annotators 403), audited, and
holding exactly the judgements scoring jobs read from the gold JSONL."""

import hashlib
import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from goldset.models import ExportFormat
from goldset.services.exports import qrels_line, read_verified_bytes, trec_id
from goldset.services.freeze import store_frozen_version
from scoring.io import read_qrels
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    default_project,
    gold_row_for,
    make_gold_corpus,
)
from workbench.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def version(admin_user):
    versions = make_gold_corpus(4)
    frozen = store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(versions)],
        actor=admin_user,
    )
    frozen.blocks = [bv.block.block_id for bv in versions]
    return frozen


def _qrels_file(version):
    return version.files.get(format=ExportFormat.TREC_QRELS)


def _judgements(qrels):
    return sorted(
        zip(qrels.query_id.tolist(), qrels.doc_id.tolist(), qrels.relevance.tolist(), strict=True)
    )


def test_a_freeze_stores_the_qrels_with_its_checksum_in_the_manifest(version):
    stored = _qrels_file(version)
    body = read_verified_bytes(stored)
    assert body.decode().splitlines() == [f"Q-{i} 0 {b} 1" for i, b in enumerate(version.blocks)]
    assert stored.filename == "goldset-v1-qrels.txt" and not stored.redacted
    listed = {f["format"]: f for f in version.manifest["files"]}
    assert listed["trec_qrels"]["sha256"] == hashlib.sha256(body).hexdigest() == stored.sha256


def test_the_qrels_hold_the_judgements_scoring_jobs_read(version):
    gold = read_verified_bytes(version.files.get(format=ExportFormat.GOLD_JSONL))
    qrels = read_verified_bytes(_qrels_file(version))
    from_gold = read_qrels(io.StringIO(gold.decode()), fmt="gold")
    from_trec = read_qrels(io.StringIO(qrels.decode()), fmt="trec")
    assert _judgements(from_trec) == _judgements(from_gold)
    assert len(_judgements(from_trec)) == 4


def test_whitespace_in_an_id_is_percent_encoded_and_nothing_else_changes():
    assert trec_id("blk a\tb") == "blk%20a%09b"
    assert trec_id("AC-2(1)@v3_é") == "AC-2(1)@v3_é"
    row = {"id": "Q 1", "expected_block": {"block_id": "ac-2 part"}}
    assert qrels_line(row) == b"Q%201 0 ac-2%20part 1\n"
    assert len(qrels_line(row).split()) == 4


def test_a_block_id_with_a_space_still_gives_four_columns(admin_user):
    bv = BlockVersionFactory(block=BlockFactory(block_id="sec 3.1 backups"))
    frozen = store_frozen_version(
        project=default_project(), rows=[gold_row_for(bv, triple_id="Q-x")], actor=admin_user
    )
    line = read_verified_bytes(_qrels_file(frozen)).decode()
    assert line == "Q-x 0 sec%203.1%20backups 1\n"


def test_the_version_page_offers_the_qrels_to_leads_and_admins(
    client_for, lead, admin_user, version
):
    url = reverse("exports:download", args=[1, "trec_qrels"])
    for user in (lead, admin_user):
        page = client_for(user).get(reverse("exports:version", args=[1])).content.decode()
        assert f'href="{url}"' in page and "TREC qrels" in page
        assert _qrels_file(version).sha256 in page


def test_the_page_download_answers_each_role(
    client, client_for, annotator, lead, admin_user, version
):
    url = reverse("exports:download", args=[1, "trec_qrels"])
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert client_for(annotator).get(url).status_code == 403
    stored = _qrels_file(version)
    for user in (lead, admin_user):
        response = client_for(user).get(url)
        assert response.status_code == 200
        body = b"".join(response.streaming_content)
        assert hashlib.sha256(body).hexdigest() == stored.sha256  # the frozen bytes, unchanged
        assert response["Content-Type"].startswith("text/plain")
        assert 'filename="goldset-v1-qrels.txt"' in response["Content-Disposition"]
        assert b"ann1" not in body and b"author" not in body  # no person in the file
    events = AuditEvent.objects.filter(verb="gold_version_downloaded", detail__format="trec_qrels")
    assert events.count() == 2
    assert {e.detail["sha256"] for e in events} == {stored.sha256}


def test_the_api_download_answers_each_role_with_its_checksum(
    client, client_for, annotator, lead, admin_user, version
):
    url = reverse("api:version_download", args=[1, "trec_qrels"])
    assert client.get(url).status_code == 401
    assert client_for(annotator).get(url).status_code == 403
    for user in (lead, admin_user):
        response = client_for(user).get(url)
        assert response.status_code == 200
        body = b"".join(response.streaming_content)
        assert response["X-Checksum-SHA256"] == hashlib.sha256(body).hexdigest()
        assert response["X-Checksum-SHA256"] == _qrels_file(version).sha256
        assert body.decode().splitlines()[0] == f"Q-0 0 {version.blocks[0]} 1"


def test_an_unknown_version_is_404_on_page_and_api(client_for, lead, version):
    assert (
        client_for(lead).get(reverse("exports:download", args=[9, "trec_qrels"])).status_code == 404
    )
    response = client_for(lead).get(reverse("api:version_download", args=[9, "trec_qrels"]))
    assert response.status_code == 404


def test_the_export_command_writes_the_qrels(version, tmp_path):
    out = tmp_path / "qrels.txt"
    call_command("export_gold", "--version", "1", "--format", "trec_qrels", "--output", str(out))
    assert hashlib.sha256(out.read_bytes()).hexdigest() == _qrels_file(version).sha256
