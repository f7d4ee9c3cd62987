"""Issue 12 from the command line: import_triples refuses a superseded pin without a reason,
naming the line and field; freeze_gold leaves superseded pins out unless --include-superseded."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from goldset.models import GoldVersion, Triple
from tests.factories import BlockVersionFactory
from tests.goldset.curation_support import block_version, review, write_triple
from workbench.roles import Role

pytestmark = pytest.mark.django_db


def _row(v, **meta):
    return {
        "id": meta.pop("id", "cli-1"),
        "question": "How long are backups kept?",
        "expected_block": {"block_id": v.block.block_id, "version": v.version},
        "expected_answer": "35 days.",
        "metadata": {
            "domain": v.block.document.domain.slug,
            "task_type": "factual_qa",
            "source": "public_rfp",
            "added_by": "author",
            **meta,
        },
    }


@pytest.fixture
def old():
    v1 = block_version()
    BlockVersionFactory(block=v1.block, version=2, text="Newer.")
    return v1


def test_import_triples_names_the_line_and_field_of_a_superseded_pin(tmp_path, make_user, old):
    make_user(Role.ANNOTATOR, username="author")
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_row(old)) + "\n")
    with pytest.raises(CommandError, match="line 1: expected_block.version: .* superseded by v2"):
        call_command("import_triples", str(path), "--actor", "author")
    assert not Triple.objects.exists()
    path.write_text(json.dumps(_row(old, superseded_reason="contract wording")) + "\n")
    call_command("import_triples", str(path), "--actor", "author", stdout=io.StringIO())
    assert Triple.objects.get().current_revision.superseded_reason == "contract wording"


def test_freeze_gold_includes_superseded_pins_only_when_asked(make_user, old):
    author = make_user(Role.ANNOTATOR, username="author")
    r1, r2 = make_user(Role.ANNOTATOR, username="r1"), make_user(Role.ANNOTATOR, username="r2")
    for version, reason in ((block_version(), ""), (old, "contract wording")):
        triple = write_triple(author, version=version, superseded_reason=reason)
        review(r1, triple)
        review(r2, triple)
    out = io.StringIO()
    call_command("freeze_gold", stdout=out)
    assert json.loads(out.getvalue())["triples"] == 1
    call_command("freeze_gold", "--include-superseded", stdout=io.StringIO())
    latest = GoldVersion.objects.order_by("-number").first()
    assert latest.row_count == 2 and latest.manifest["superseded_pins"]["included"] is True
