"""factory_boy factories for every model tests build; one place, used by all test packages."""

import hashlib
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from goldset.models import (
    Block,
    BlockVersion,
    Document,
    Domain,
    Project,
    ProjectMembership,
    default_project_id,
)
from workbench.roles import Role

TEST_PASSWORD = "correct-horse-battery-staple"


def default_project() -> Project:
    """The default project (the project of a test that names none)."""
    return Project.objects.get(pk=default_project_id())


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", TEST_PASSWORD)

    @factory.post_generation
    def role(self, create, extracted, **kwargs):
        if extracted:
            self.groups.add(Group.objects.get(name=Role(extracted).value))
            self.is_staff = extracted == Role.ADMIN
        self.save()
        if extracted:
            # the role is held in the default project (the project of a test that names none)
            ProjectMembership.objects.update_or_create(
                project_id=default_project_id(),
                user=self,
                defaults={"role": Role(extracted).value},
            )


class DomainFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Domain
        django_get_or_create = ("project", "slug")

    project = factory.LazyFunction(default_project)

    slug = factory.Sequence(lambda n: f"domain_{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("_", " ").title())


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Document

    project = factory.LazyAttribute(lambda o: o.domain.project)
    document_id = factory.Sequence(lambda n: f"doc-{n:05d}")
    title = factory.Sequence(lambda n: f"Policy document {n}")
    domain = factory.SubFactory(DomainFactory)
    authority = Decimal("0.800")


class BlockFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Block

    project = factory.LazyAttribute(lambda o: o.document.project)
    block_id = factory.Sequence(lambda n: f"blk-{n:05d}")
    document = factory.SubFactory(DocumentFactory)


class BlockVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = BlockVersion

    block = factory.SubFactory(BlockFactory)
    version = 1
    text = factory.Sequence(lambda n: f"Clause {n}: data is encrypted at rest with AES-256.")
    section = "Encryption"
    sha256 = factory.LazyAttribute(lambda o: hashlib.sha256(o.text.encode()).hexdigest())


# ---------------------------------------------------------------- curation (issue 4)

from goldset.models import Customer, CustomerPermission  # noqa: E402


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Customer
        django_get_or_create = ("project", "slug")

    project = factory.LazyFunction(default_project)

    name = factory.Sequence(lambda n: f"Customer {n}")
    slug = factory.Sequence(lambda n: f"customer-{n}")


class CustomerPermissionFactory(factory.django.DjangoModelFactory):
    """An active grant (no revocation)."""

    class Meta:
        model = CustomerPermission

    customer = factory.SubFactory(CustomerFactory)
    granted_by = factory.SubFactory(UserFactory, role=Role.ADMIN)
    note = "signed data-use addendum"


# ---------------------------------------------------------------- frozen gold versions (exports)


def gold_row_for(block_version, *, triple_id, question=None, answer="An expected answer.", **meta):
    """A gold JSONL row (DESIGN §9) pinned to ``block_version``, as curation's gold_row makes."""
    document = block_version.block.document
    metadata = {
        "domain": document.domain.slug,
        "difficulty": "standard",
        "task_type": "factual_qa",
        "tier": "tier_b",
        "source": "public_rfp",
        "added_by": "author",
        "added_at": "2026-01-05",
        "reviewed_by": ["ann1", "ann2"],
        "resolution": "consensus",
        **meta,
    }
    return {
        "id": triple_id,
        "question": question or f"What does {block_version.block.block_id} say?",
        "expected_block": {
            "block_id": block_version.block.block_id,
            "document_id": document.document_id,
            "version": block_version.version,
            "page_range": block_version.page_range,
            "sha256": block_version.sha256,
        },
        "expected_answer": answer,
        "metadata": metadata,
    }


def make_gold_corpus(n, *, domains=("supply_chain", "federal_it"), blocks_per_document=3):
    """``n`` block versions spread over documents and domains; returns the versions."""
    versions = []
    document = None
    for i in range(n):
        if i % blocks_per_document == 0:
            document = DocumentFactory(
                domain=DomainFactory(slug=domains[(i // blocks_per_document) % len(domains)])
            )
        versions.append(BlockVersionFactory(block=BlockFactory(document=document)))
    return versions


# ---------------------------------------------------------------- answer labeling (issue 5)

from goldset.models import (  # noqa: E402
    AnswerRecord,
    CalibrationItem,
    CalibrationResult,
    CalibrationSet,
    Question,
    Run,
    System,
    Tier,
)
from goldset.models.answers import new_public_id  # noqa: E402
from goldset.rules.labeling import queue_rank  # noqa: E402
from goldset.services.labeling import add_domain_slots  # noqa: E402


class SystemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = System
        django_get_or_create = ("project", "system_id")

    project = factory.LazyFunction(default_project)

    system_id = factory.Sequence(lambda n: f"hybrid_rrf_system_{n}")


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    project = factory.LazyAttribute(lambda o: o.system.project)
    run_id = factory.Sequence(lambda n: f"probe-run-2026-{n:04d}")
    system = factory.SubFactory(SystemFactory)


class QuestionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Question

    project = factory.LazyAttribute(lambda o: o.domain.project)
    question_id = factory.Sequence(lambda n: f"q-{n:05d}")
    domain = factory.SubFactory(DomainFactory, slug="supply_chain")
    task_family = "routing_policy"
    task_type = "rag_synthesis"
    text = factory.Sequence(lambda n: f"Can operations approve air expedite for lane {n}?")
    content_sha256 = factory.Sequence(lambda n: hashlib.sha256(str(n).encode()).hexdigest())


class AnswerRecordFactory(factory.django.DjangoModelFactory):
    """A GOLD record needing three labels unless told otherwise."""

    class Meta:
        model = AnswerRecord
        skip_postgeneration_save = True

    project = factory.LazyAttribute(lambda o: o.question.project)
    public_id = factory.LazyFunction(new_public_id)
    run = factory.SubFactory(RunFactory)
    question = factory.SubFactory(QuestionFactory)
    domain = factory.LazyAttribute(lambda o: o.question.domain)
    queue_rank = factory.LazyAttribute(lambda o: queue_rank(public_id=o.public_id))
    answer = "Do not approve under the standard routing guide alone."
    model = factory.LazyFunction(lambda: {"generator": "gpt-4o-mini-2026-02", "temperature": 0})
    tier = Tier.GOLD
    routing_rule = "task_type:rag_synthesis"
    rules_version = 1
    labels_required = 3

    @factory.post_generation
    def domain_slots(obj, create, extracted, **kwargs):
        """Production slots are counted per domain, as the import service does."""
        if create and not obj.is_calibration:
            add_domain_slots(domain_id=obj.domain_id, delta=obj.labels_required)


class CalibrationResultFactory(factory.django.DjangoModelFactory):
    """A passed calibration: the annotator is qualified for the domain."""

    class Meta:
        model = CalibrationResult

    annotator = factory.SubFactory(UserFactory, role=Role.ANNOTATOR)
    domain = factory.SubFactory(DomainFactory, slug="supply_chain")
    n_items = 6
    kappa_grounding = 0.9
    kappa_severe_safety = 1.0
    threshold = 0.7
    passed = True


class CalibrationSetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CalibrationSet
        django_get_or_create = ("domain",)

    project = factory.LazyAttribute(lambda o: o.domain.project)
    domain = factory.SubFactory(DomainFactory, slug="supply_chain")


class CalibrationItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CalibrationItem

    calibration_set = factory.SubFactory(CalibrationSetFactory)
    record = factory.LazyAttribute(
        lambda o: AnswerRecordFactory(
            is_calibration=True, question__domain=o.calibration_set.domain
        )
    )
