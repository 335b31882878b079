import pytest
from django.core.management import call_command

from groundwork.models import ApiKey, Membership

pytestmark = pytest.mark.django_db


def test_demo_seed_is_safe_to_run_twice(capsys):
    call_command("demo_seed")
    first = capsys.readouterr().out
    call_command("demo_seed")
    second = capsys.readouterr().out
    assert "gw_" in first and "gw_" not in second
    assert ApiKey.objects.filter(name="demo").count() == 1
    roles = set(Membership.objects.filter(tenant__slug="kestrel").values_list("user__username", "role"))
    assert roles == {("admin", "admin"), ("analyst", "analyst"), ("member", "member")}
