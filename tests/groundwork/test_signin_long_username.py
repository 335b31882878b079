"""A sign-in with a username longer than django-axes' 255-character column is a wrong sign-in like any other (200
with the form's message, then the lockout), not a DataError 500 for an anonymous caller (jazzband/django-axes
#1381), on our sign-in page and the admin's."""

import pytest
from axes.models import AccessAttempt

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _limit(settings):
    settings.AXES_FAILURE_LIMIT = 3


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_an_over_long_username_is_a_failed_sign_in_and_locks_out_like_any_other(client, path):
    username = "x" * 5000
    statuses = [client.post(path, {"username": username, "password": "nope"}).status_code for _ in range(4)]
    assert statuses[0] == 200 and statuses[-1] == 429, statuses
    attempt = AccessAttempt.objects.get()
    assert attempt.username == "x" * 255 and attempt.failures_since_start >= 3


def test_a_real_username_is_counted_unchanged(client, world):
    client.post("/accounts/login/", {"username": world.member.username, "password": "nope"})
    assert AccessAttempt.objects.get().username == world.member.username
