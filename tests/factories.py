"""factory_boy factories for every model tests build; one place, used by all test packages."""

import hashlib
from decimal import Decimal

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from goldset.models import Block, BlockVersion, Document, Domain
from workbench.roles import Role

TEST_PASSWORD = "correct-horse-battery-staple"


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


class DomainFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Domain
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"domain_{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("_", " ").title())


class DocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Document

    document_id = factory.Sequence(lambda n: f"doc-{n:05d}")
    title = factory.Sequence(lambda n: f"Policy document {n}")
    domain = factory.SubFactory(DomainFactory)
    authority = Decimal("0.800")


class BlockFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Block

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
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Customer {n}")
    slug = factory.Sequence(lambda n: f"customer-{n}")


class CustomerPermissionFactory(factory.django.DjangoModelFactory):
    """An active grant (no revocation)."""

    class Meta:
        model = CustomerPermission

    customer = factory.SubFactory(CustomerFactory)
    granted_by = factory.SubFactory(UserFactory, role=Role.ADMIN)
    note = "signed data-use addendum"
