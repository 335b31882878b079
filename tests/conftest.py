"""Shared seed for every test: two tenants, the platform corpus, an admin, an analyst, a group member
and an outsider, so each test can assert exactly who sees what.

- tenant `acme`: admin (in group `hr`), analyst (in `leadership`), member (in `engineering`)
- tenant `globex`: outsider (its admin; no rights in acme at all)
- the platform corpus: the one `is_platform` tenant every tenant reads
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from django.contrib.auth import get_user_model
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from groundwork import celery_app
from groundwork.authority import Authority
from groundwork.models import Principal, Tenant
from groundwork.selectors import authority_for_service, authority_for_user, platform_tenant
from groundwork.services import api_key_issue_delegated, group_member_add, membership_set, principal_ensure

# No wall-clock deadline per example: on a loaded machine (CI, or a bench running beside the suite) a pure
# function's example can take over hypothesis's default 200 ms and fail a correct test. Speed is measured by
# `make bench`, never by a timed test.
hypothesis_settings.register_profile("groundwork", deadline=None)
hypothesis_settings.load_profile("groundwork")


def pytest_collection_modifyitems(items):
    # The worker tests share the Redis broker's queues (and start worker processes that take connections): under
    # pytest-xdist one worker runs them one after another (scripts/run_suite.py, `--dist loadgroup`).
    for item in items:
        if item.get_closest_marker("worker"):
            item.add_marker(pytest.mark.xdist_group("system"))


@pytest.fixture(autouse=True, scope="session")
def _inline_tasks():
    # Tests run tasks inline unless a test starts a real worker itself; off-request tasks too (a background thread
    # would not see the test's transaction), unless a test turns TASKS_OFF_REQUEST back on.
    from django.test import override_settings

    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    with override_settings(TASKS_OFF_REQUEST=False):
        yield


@pytest.fixture(autouse=True, scope="session")
def _tests_system_scope():
    # Row-level security (groundwork/rls.py): test code seeds and inspects every tenant's rows directly, like a
    # management command, in the named system scope `tests` (threads a test starts inherit it). Requests
    # through the test client or a live server start with no scope and bind the caller's, as in production.
    from groundwork.rls import process_default_scope_set

    process_default_scope_set("tests")
    yield
    process_default_scope_set(None)


@pytest.fixture(autouse=True, scope="session")
def _channel_workers_closed(django_db_setup):
    # Searches outside a transaction run the vector channel on a worker thread with its own connection;
    # close those before the test database is dropped (set up after it, so torn down before it).
    yield
    from knowledge.retrieval.search import channel_workers_close

    channel_workers_close()


@pytest.fixture(autouse=True, scope="session")
def _no_background_analyze(django_db_setup, django_db_blocker):
    # Autovacuum would ANALYZE the chunks whenever enough rows changed — at a moment that depends on the machine's
    # speed — and change the planner's choices (which index a search walks) from one test to the next. Off for that
    # table here; production keeps autovacuum. (Word statistics do not come from ANALYZE: they are counted per
    # tenant, knowledge.retrieval.statistics, and a test's tenants are counted only when it asks.)
    from django.db import connection
    from django.db.backends.base.creation import TEST_DATABASE_PREFIX

    from groundwork.rls import owner_session

    # pytest-django sets up a test database only when a collected test needs one; otherwise this is the
    # development database, left alone. A table's settings are its owner's to change (groundwork/rls.py).
    if connection.settings_dict["NAME"].startswith(TEST_DATABASE_PREFIX):
        with django_db_blocker.unblock(), owner_session(), connection.cursor() as cursor:
            cursor.execute("ALTER TABLE knowledge_chunk SET (autovacuum_enabled = false)")
    yield


@pytest.fixture(autouse=True)
def _corpus_statistics_fresh():
    # BM25 and the refusal gate weigh terms by corpus statistics cached per process for minutes: a test would
    # otherwise see whichever earlier test's statistics were read last, at a moment that depends on how fast the
    # machine ran the suite (a CI run refused a question a local run answered). Each test reads them afresh.
    from knowledge.retrieval.statistics import corpus_stats_forget

    corpus_stats_forget()
    yield


@dataclass
class World:
    acme: Tenant
    globex: Tenant
    platform: Tenant
    admin: object
    analyst: object
    member: object
    outsider: object
    groups: dict[str, Principal] = field(default_factory=dict)

    def authority(self, user, tenant: Tenant | None = None) -> Authority:
        return authority_for_user(user=user, tenant_slug=(tenant or self.acme).slug)

    def service(self, tenant: Tenant | None = None, name: str = "test-job", role: str = "admin") -> Authority:
        return authority_for_service(tenant=tenant or self.acme, service_name=name, role=role)

    def client(self, user, tenant: Tenant | None = None) -> APIClient:
        """An API client authenticated by a delegated key of `user` in `tenant` (default acme)."""
        issued = api_key_issue_delegated(tenant=tenant or self.acme, owner=user, name=f"test-{user.username}")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}")
        return client

    def group(self, name: str, tenant: Tenant | None = None) -> Principal:
        return principal_ensure(tenant=tenant or self.acme, kind=Principal.Kind.GROUP, raw=name)


def _user(username: str):
    # No password: hashing one costs ~0.3 s per user; tests sign in with force_login or API keys.
    return get_user_model().objects.create_user(username=username, email=f"{username}@example.test", password=None)


def operator_signed_in(client, user):
    """`client` signed in as `user`, made a platform operator (an active superuser)."""
    user.is_staff = user.is_superuser = True
    user.save(update_fields=["is_staff", "is_superuser"])
    client.force_login(user)
    return client


@pytest.fixture
def world(db) -> World:
    acme = Tenant.objects.create(slug="acme", name="Acme Corp")
    globex = Tenant.objects.create(slug="globex", name="Globex Inc")
    platform = platform_tenant()
    admin, analyst, member, outsider = (_user(n) for n in ("admin", "analyst", "member", "outsider"))
    membership_set(user=admin, tenant=acme, role="admin")
    membership_set(user=analyst, tenant=acme, role="analyst")
    membership_set(user=member, tenant=acme, role="member")
    membership_set(user=outsider, tenant=globex, role="admin")
    w = World(acme=acme, globex=globex, platform=platform, admin=admin, analyst=analyst, member=member,
              outsider=outsider)
    for name, user in (("hr", admin), ("leadership", analyst), ("engineering", member)):
        group = w.group(name)
        group_member_add(group=group, member=principal_ensure(tenant=acme, kind="user", raw=str(user.pk)))
        w.groups[name] = group
    w.groups["globex-hr"] = w.group("hr", globex)
    group_member_add(group=w.groups["globex-hr"],
                     member=principal_ensure(tenant=globex, kind="user", raw=str(outsider.pk)))
    return w
from tests.browser import browser  # noqa: E402,F401
from tests.fake_openai import fake_openai  # noqa: E402,F401
