import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from hypothesis import given
from hypothesis import strategies as st

from groundwork.models import Principal, Tenant
from groundwork.services import group_member_add, principal_ensure, principal_normalise, principal_parse

pytestmark = pytest.mark.django_db


def test_email_is_lowercased_and_deduplicated(world):
    a = principal_ensure(tenant=world.acme, kind="email", raw="  Dana@Example.COM ")
    b = principal_ensure(tenant=world.acme, kind="email", raw="dana@example.com")
    assert a.pk == b.pk and a.key == "dana@example.com"


def test_provider_groups_of_two_providers_never_collide(world):
    okta = principal_ensure(tenant=world.acme, kind="provider_group", raw="okta:Engineering")
    google = principal_ensure(tenant=world.acme, kind="provider_group", raw="google:engineering")
    plain = principal_ensure(tenant=world.acme, kind="group", raw="engineering")
    assert len({okta.pk, google.pk, plain.pk}) == 3
    assert okta.key == "okta:engineering"


def test_same_group_name_in_two_tenants_is_two_principals(world):
    assert world.groups["hr"].pk != world.groups["globex-hr"].pk


@pytest.mark.parametrize("kind,raw", [("email", "not-an-email"), ("provider_group", "nogroup"),
                                      ("provider_group", ":x"), ("group", "   "), ("user", "abc")])
def test_bad_principals_are_refused_with_a_message(kind, raw):
    with pytest.raises(ValidationError):
        principal_normalise(kind=kind, raw=raw)


def test_acl_entry_parsing():
    assert principal_parse("Dana@Example.com") == ("email", "dana@example.com")
    assert principal_parse("group:HR") == ("group", "hr")
    assert principal_parse("okta:Admins") == ("provider_group", "okta:admins")
    with pytest.raises(ValidationError):
        principal_parse("just words")


def test_database_refuses_unnormalised_rows(world):
    with pytest.raises(IntegrityError), transaction.atomic():
        Principal.objects.create(tenant=world.acme, kind="provider_group", key="NoColon")
    with pytest.raises(IntegrityError), transaction.atomic():
        Principal.objects.create(tenant=world.acme, kind="user", key="1")  # user kind needs a user


def test_only_one_platform_corpus(world):
    with pytest.raises(IntegrityError), transaction.atomic():
        Tenant.objects.create(slug="other-platform", name="x", is_platform=True)


@given(st.emails())
def test_email_normalisation_is_idempotent(address):
    once = principal_normalise(kind="email", raw=address)
    assert principal_normalise(kind="email", raw=once) == once == address.strip().lower()


def test_group_links_are_refused_naming_the_side_at_fault(world):
    person = principal_ensure(tenant=world.acme, kind="email", raw="dana@example.com")
    with pytest.raises(ValidationError) as not_a_group:
        group_member_add(group=person, member=world.groups["hr"])
    assert not_a_group.value.message_dict == {"group": ["Only a group or a provider group can have members."]}
    with pytest.raises(ValidationError) as other_tenant:
        group_member_add(group=world.groups["hr"], member=world.groups["globex-hr"])
    assert other_tenant.value.message_dict == {"member": ["A group and its member must belong to the same tenant."]}
    assert group_member_add(group=world.groups["hr"], member=person).member_id == person.pk
