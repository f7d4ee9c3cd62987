"""The schema is valid for a real generator: ``openapi-python-client`` generates a client from the
live server's schema (into tmp_path, offline, without warnings), and three calls through it
work: a paginated list, a retrieve, and a scoring run posted as the JSON body the README shows
(the ``run`` field was missing from the schema; a generated client could not send it)."""

import importlib
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.core.cache import cache

from goldset.models import ImportJob
from goldset.services.freeze import store_frozen_version
from tests.factories import default_project, gold_row_for, make_gold_corpus
from workbench.roles import Role
from workbench.services.api_tokens import create_api_token

pytestmark = pytest.mark.postgres
GENERATOR = Path(sys.executable).parent / "openapi-python-client"


@pytest.fixture
def generated(live_server, tmp_path, monkeypatch):
    """The package generated from the live schema, imported."""
    schema = httpx.get(f"{live_server.url}/api/v1/schema/?format=json", timeout=60)
    assert schema.status_code == 200
    (tmp_path / "schema.json").write_bytes(schema.content)
    (tmp_path / "config.yml").write_text("post_hooks: []\n")
    package = tmp_path / "goldset_generated"
    done = subprocess.run(
        [str(GENERATOR), "generate", "--path", "schema.json", "--config", "config.yml",
         "--meta", "none", "--output-path", str(package)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module("goldset_generated")


def test_a_client_generated_from_the_live_schema_makes_three_calls(
    generated, live_server, make_user, transactional_db, settings
):
    settings.API_TOKEN_RATE = "100000/min"
    cache.clear()
    admin = make_user(Role.ADMIN, username="gen-admin")
    versions = make_gold_corpus(3)
    store_frozen_version(
        project=default_project(),
        rows=[gold_row_for(bv, triple_id=f"Q-{i}") for i, bv in enumerate(versions)],
        actor=admin,
    )
    _, token = create_api_token(user=admin, name="gen", scope="write")
    domains_list = importlib.import_module("goldset_generated.api.domains.domains_list")
    versions_retrieve = importlib.import_module("goldset_generated.api.versions.versions_retrieve")
    jobs_create = importlib.import_module("goldset_generated.api.jobs.jobs_create")
    models = importlib.import_module("goldset_generated.models")

    client = generated.AuthenticatedClient(base_url=live_server.url, token=token)
    page = domains_list.sync(client=client, page_size=1)
    assert isinstance(page, models.PaginatedDomainList) and len(page.results) == 1
    version = versions_retrieve.sync(client=client, ref="1")
    assert isinstance(version, models.GoldVersionDetail) and version.row_count == 3
    line = models.ScoringJobRequestRequestRunItem.from_dict(
        {"query_id": "Q-0", "block_id": versions[0].block.block_id, "rank": 1}
    )
    body = models.ScoringJobRequestRequest(version=1, run=[line], name="generated")
    answer = jobs_create.sync_detailed(client=client, body=body, idempotency_key="gen-1")
    assert answer.status_code == 202, answer.content
    assert isinstance(answer.parsed, models.ImportJob) and answer.parsed.kind == "run"
    assert answer.headers["Location"] == f"/api/v1/imports/{answer.parsed.id}/"
    assert ImportJob.objects.filter(pk=answer.parsed.id, kind="run").exists()
