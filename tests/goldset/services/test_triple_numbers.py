"""Triple ids are numbered per project (issue 27: ``gt-00042`` is per project): each project
counts from 1, a number an import gave a triple by name is passed over, a bundle imported
into another installation goes on after its highest number, and the data migration starts
every project's counter past the ids its triples hold."""

import io
import json
from importlib import import_module

import pytest
from django.apps import apps

from goldset.models import Project, Source, TaskType, Triple
from goldset.services.project_bundle import export_bundle, import_bundle
from goldset.services.triples import create_triple, import_triples, take_triple_ids
from tests.factories import (
    BlockFactory,
    BlockVersionFactory,
    DocumentFactory,
    DomainFactory,
    UserFactory,
    default_project,
)

pytestmark = pytest.mark.django_db


def _version(project, tag):
    domain = DomainFactory(project=project, slug=f"dom-{tag}")
    document = DocumentFactory(project=project, domain=domain, document_id=f"doc-{tag}")
    block = BlockFactory(project=project, document=document, block_id=f"blk-{tag}")
    return BlockVersionFactory(block=block, text=f"Clause {tag}: keys rotate every ninety days.")


def _write(project, version, author, **fields):
    return create_triple(
        project=project,
        author=author,
        block_version=version,
        question="How often do keys rotate?",
        expected_answer="Every ninety days.",
        task_type=TaskType.FACTUAL_QA,
        source=Source.PUBLIC_RFP,
        **fields,
    )


def test_each_project_numbers_its_triples_from_one():
    author = UserFactory(username="numbering-author")
    a = Project.objects.create(name="Alpha", slug="alpha")
    b = Project.objects.create(name="Bravo", slug="bravo")
    va, vb = _version(a, "a"), _version(b, "b")
    first_a, second_a = _write(a, va, author), _write(a, va, author)
    first_b = _write(b, vb, author)
    assert (first_a.external_id, second_a.external_id) == ("gt-00001", "gt-00002")
    assert first_b.external_id == "gt-00001"
    b.refresh_from_db()
    assert b.last_triple_number == 1


def test_a_number_taken_by_name_is_passed_over_by_writes_and_imports():
    author = UserFactory(username="numbering-author")
    project = Project.objects.create(name="Alpha", slug="alpha")
    version = _version(project, "a")
    _write(project, version, author, external_id="gt-00002")
    assert _write(project, version, author).external_id == "gt-00001"
    assert _write(project, version, author).external_id == "gt-00003"
    lines = "\n".join(
        json.dumps(
            {
                "question": f"Question {n}?",
                "expected_answer": "Every ninety days.",
                "expected_block": {"block_id": "blk-a", "document_id": "doc-a", "version": 1},
                "metadata": {
                    "domain": "dom-a",
                    "task_type": "factual_qa",
                    "source": "public_rfp",
                    "added_by": author.username,
                },
            }
            | ({"id": "gt-00005"} if n == 0 else {})
        )
        for n in range(3)
    )
    import_triples(source=lines, actor=author, project=project)
    names = set(Triple.objects.filter(project=project).values_list("external_id", flat=True))
    assert names == {f"gt-{n:05d}" for n in range(1, 7)}


def test_take_triple_ids_never_gives_a_number_twice():
    project = Project.objects.create(name="Alpha", slug="alpha")
    drawn = take_triple_ids(project, 3) + take_triple_ids(project, 2)
    assert drawn == [f"gt-{n:05d}" for n in range(1, 6)]


def test_an_imported_bundle_goes_on_after_its_highest_number(postgres):
    author = UserFactory(username="numbering-author")
    source = Project.objects.create(name="Alpha", slug="alpha")
    version = _version(source, "a")
    for _ in range(3):
        _write(source, version, author)
    buffer = io.BytesIO()
    export_bundle(project=source, out=buffer)
    buffer.seek(0)
    copy = import_bundle(source=buffer, slug="alpha-copy").project
    copy.refresh_from_db()
    assert copy.last_triple_number == 3
    copied_version = Triple.objects.filter(project=copy).first().current_revision
    triple = _write(copy, copied_version.expected_block_version, author)
    assert triple.external_id == "gt-00004"


def test_the_migration_starts_each_counter_past_the_ids_held():
    author = UserFactory(username="numbering-author")
    project = default_project()
    version = _version(project, "d")
    _write(project, version, author, external_id="gt-00417")
    _write(project, version, author, external_id="rfp-7")
    Project.objects.filter(pk=project.pk).update(last_triple_number=0)
    migration = import_module("goldset.migrations.0038_triple_numbers")
    migration.start_counters(apps, None)
    project.refresh_from_db()
    assert project.last_triple_number == 417
