import json

import pytest
from django.core.management import CommandError, call_command

from goldset.models import QualityTrackerEntry, SpotCheckDraw, Triple, TripleState, WorkingSlice
from goldset.selectors.curation import list_author_flag_rates
from tests.factories import BlockVersionFactory
from tests.goldset.project_support import default_project
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def _row(v, **meta):
    return {
        "id": meta.pop("id", "cli-1"),
        "question": "How long are backups kept?",
        "expected_block": {"block_id": v.block.block_id, "version": v.version, "sha256": v.sha256},
        "expected_answer": "35 days.",
        "metadata": {
            "domain": v.block.document.domain.slug,
            "task_type": "factual_qa",
            "source": "public_rfp",
            "added_by": "author",
            **meta,
        },
    }


def test_import_triples_command_imports_a_good_file(tmp_path, make_user, capsys):
    make_user(Role.ANNOTATOR, username="author")
    v = BlockVersionFactory()
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_row(v)) + "\n")
    call_command("import_triples", str(path), actor="author")
    assert json.loads(capsys.readouterr().out) == {
        "created": 1,
        "by_tier": {"tier_b": 1},
        "on_behalf": False,
    }
    assert Triple.objects.get().external_id == "cli-1"


def test_import_triples_command_rejects_a_bad_file_with_line_numbers(tmp_path, make_user):
    make_user(Role.ANNOTATOR, username="author")
    v = BlockVersionFactory()
    path = tmp_path / "t.jsonl"
    path.write_text(
        json.dumps(_row(v)) + "\n" + json.dumps(_row(v, id="cli-2", difficulty="extreme"))
    )
    with pytest.raises(CommandError, match="line 2: metadata.difficulty: got 'extreme'"):
        call_command("import_triples", str(path), actor="author")
    assert not Triple.objects.exists()


def test_seed_demo_has_triples_in_every_state_and_is_idempotent(tmp_path):
    call_command("seed_demo", password="demo-pass-123", credentials_file=tmp_path / "c.txt")
    states = set(Triple.objects.values_list("state", flat=True))
    assert states == set(TripleState.values)
    assert QualityTrackerEntry.objects.exists()
    assert SpotCheckDraw.objects.get().selected_revision_ids
    assert WorkingSlice.objects.get().triple_ids
    assert [
        r.username
        for r in list_author_flag_rates(project=default_project())
        if r.calibration_needed
    ] == ["ann6"]
    count = Triple.objects.count()
    call_command("seed_demo", credentials_file=tmp_path / "c.txt")
    assert Triple.objects.count() == count
