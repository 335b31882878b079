"""Signed-in admin clients for the admin's page tests (test_admin_scoping, test_admin_accounts)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client


@pytest.fixture
def tenant_admin(world) -> Client:
    client = Client()
    client.force_login(world.admin)  # acme's admin (a tenant admin through membership_set), not a superuser
    return client


@pytest.fixture
def operator(world) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.test", None))
    return client
