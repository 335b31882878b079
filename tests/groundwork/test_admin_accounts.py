"""The admin's account pages: who may sign in to the admin, and what a tenant admin may do with accounts —
invite into their own tenant only, never learn which usernames exist elsewhere (moved from
test_admin_scoping.py, which keeps the row-by-row tenant scoping)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from groundwork.models import Membership, Tenant
from groundwork.services import membership_set
from knowledge.models import Document
from tests.groundwork.admin_pages import admin_url as _url

pytestmark = pytest.mark.django_db

User = get_user_model()


def test_login_form_admits_tenant_admins_not_members(world):
    for user, allowed in ((world.admin, True), (world.member, False)):
        user.set_password("pw-for-tests-only")
        user.save()
        client = Client()
        response = client.post("/admin/login/?next=/admin/", {"username": user.username,
                                                               "password": "pw-for-tests-only"})
        assert (response.status_code == 302) is allowed
        index = client.get("/admin/")
        assert (index.status_code == 200) is allowed
        if allowed:
            page = index.content.decode()
            assert "You administer Acme Corp; you see only their records and members." in page
            assert _url(Tenant, "changelist") not in page and _url(Document, "changelist") in page


def test_tenant_admin_invites_a_user_into_their_tenant_only(world, tenant_admin, mailoutbox,
                                                           django_capture_on_commit_callbacks):
    page = tenant_admin.get(_url(User, "add"))
    assert set(page.context["adminform"].form.fields) == {"email", "tenant", "role"}  # no username, no password
    assert set(page.context["adminform"].form.fields["tenant"].queryset) == {world.acme}
    data = {"email": "newbie@example.test", "role": "analyst"}
    response = tenant_admin.post(_url(User, "add"), {**data, "tenant": world.globex.pk})
    assert response.status_code == 200 and not User.objects.filter(email="newbie@example.test").exists()
    response = tenant_admin.post(_url(User, "add"), {**data, "tenant": ""})
    assert response.status_code == 200 and not User.objects.filter(email="newbie@example.test").exists()
    with django_capture_on_commit_callbacks(execute=True):
        response = tenant_admin.post(_url(User, "add"), {**data, "tenant": world.acme.pk, "is_superuser": "on",
                                                         "username": "chosen", "password1": "x"})
    assert response.status_code == 302
    newbie = User.objects.get(email="newbie@example.test")
    assert newbie.username.startswith("newbie-") and not newbie.has_usable_password()
    assert not newbie.is_superuser and not newbie.is_staff
    assert list(Membership.objects.filter(user=newbie).values_list("tenant__slug", "role")) == [("acme", "analyst")]
    assert tenant_admin.get(_url(User, "change", newbie.pk)).status_code == 200
    # The invitation names the username and a link that lets them choose a password.
    [mail] = mailoutbox
    assert mail.to == ["newbie@example.test"] and newbie.username in mail.body
    link = next(line for line in mail.body.splitlines() if "/accounts/reset/" in line)
    choose = Client().get(link.split("testserver", 1)[1], follow=True)
    assert choose.status_code == 200 and "new_password1" in choose.content.decode()
    # Their own tenant's members are theirs to know about.
    again = tenant_admin.post(_url(User, "add"), {**data, "tenant": world.acme.pk})
    assert again.status_code == 200 and "is a member of Acme Corp already" in again.content.decode()


def test_adding_a_user_never_tells_a_tenant_admin_which_usernames_exist(world, tenant_admin):
    """Another tenant's user, the platform operator and nobody at all read the same: a new account, a generated
    username, no error. The operator's own form still takes a username."""
    User.objects.create_superuser("root", "root@example.test", None)
    pages = []
    for local in ("outsider", "root", "nobody-at-all"):  # globex's admin, the operator, no account
        response = tenant_admin.post(_url(User, "add"), {"email": f"{local}@new.test", "tenant": world.acme.pk,
                                                         "role": "member"}, follow=True)
        assert response.status_code == 200 and "already exists" not in response.content.decode()
        added = User.objects.get(email=f"{local}@new.test")
        assert added.username.startswith(f"{local}-")
        said = [str(m).replace(added.username, "NAME").replace(local, "LOCAL").replace(f"/{added.pk}/", "/ID/")
                for m in response.context["messages"]]
        pages.append(([code for _, code in response.redirect_chain], said))
    assert pages[0] == pages[1] == pages[2] and len(pages[0][1]) == 2, pages  # added; invitation on its way
    # Renaming an account to a taken name would tell the same: the username is read-only to a tenant admin.
    tenant_admin.post(_url(User, "change", world.member.pk), {
        "username": "outsider", "email": "member@example.test", "is_active": "on",
        "date_joined_0": "2025-01-01", "date_joined_1": "00:00:00"})
    world.member.refresh_from_db()
    assert world.member.username == "member"


def test_the_invitation_is_sent_again_only_for_the_admins_own_accounts(world, tenant_admin, mailoutbox,
                                                                        django_capture_on_commit_callbacks):
    dual = User.objects.create_user("dual", "dual@example.test", None)
    membership_set(user=dual, tenant=world.acme, role="member")
    membership_set(user=dual, tenant=world.globex, role="member")  # not all theirs
    with django_capture_on_commit_callbacks(execute=True):
        response = tenant_admin.post(_url(User, "changelist"), {"action": "invite_again",
                                                                "_selected_action": [world.member.pk, dual.pk]})
    assert response.status_code == 302
    assert [mail.to for mail in mailoutbox] == [["member@example.test"]]


def test_the_operator_still_names_usernames(world, operator):
    page = operator.get(_url(User, "add"))
    assert "username" in page.context["adminform"].form.fields
    taken = operator.post(_url(User, "add"), {"username": "outsider", "email": "", "usable_password": "false",
                                              "tenant": "", "role": "member"})
    assert taken.status_code == 200 and "already exists" in taken.content.decode()
