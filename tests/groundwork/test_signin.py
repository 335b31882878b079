"""Sign-in for every member of a tenant on our own pages: login, throttling, logout, password change and reset."""

import io
import re

import pytest
from django.contrib.auth import SESSION_KEY
from django.core import mail
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery 42"


@pytest.fixture(autouse=True)
def _fast_hashing(settings):
    # Real hashing costs ~0.3 s per check; the flow under test is the same with a fast hasher.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.AXES_FAILURE_LIMIT = 3


def _with_password(user, password=PASSWORD):
    user.set_password(password)
    user.save(update_fields=["password"])
    return user


def _sign_in(client, username, password, **extra):
    return client.post("/accounts/login/", {"username": username, "password": password, **extra})


def test_login_page_is_ours_and_settings_point_to_it(client, settings):
    assert settings.LOGIN_URL == "/accounts/login/"
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h1>Sign in</h1>" in html and 'href="#content"' in html
    assert '<label for="id_username"' in html and '<label for="id_password"' in html
    assert "Content-Security-Policy" in response.headers


def test_a_member_signs_in_through_the_form_and_lands_on_their_ask_page(client, world):
    _with_password(world.member)
    response = _sign_in(client, "member", PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/"
    landing = client.get("/")
    assert landing.status_code == 302 and landing["Location"] == "/t/acme/chat/"
    assert client.get("/t/acme/chat/").status_code == 200
    assert client.session[SESSION_KEY] == str(world.member.pk)


def test_next_is_honoured_after_sign_in(client, world):
    _with_password(world.admin)
    response = _sign_in(client, "admin", PASSWORD, next="/t/acme/manage/")
    assert response.status_code == 302 and response["Location"] == "/t/acme/manage/"


def test_a_wrong_password_says_so_clearly_and_signs_nobody_in(client, world):
    _with_password(world.member)
    response = _sign_in(client, "member", "not the password")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'role="alert"' in html and "Please enter a correct username and password" in html
    assert SESSION_KEY not in client.session


def test_repeated_failures_lock_the_account_from_that_address_but_not_others(world):
    _with_password(world.member)
    _with_password(world.analyst)
    attacker = Client()
    statuses = [_sign_in(attacker, "member", f"guess-{i}").status_code for i in range(3)]
    assert statuses[:2] == [200, 200]
    assert statuses[2] == 429  # the third failure reaches the limit
    locked = _sign_in(attacker, "member", PASSWORD)  # even the right password is refused now
    assert locked.status_code == 429
    html = locked.content.decode()
    assert "Too many failed sign-in attempts" in html and "Groundwork" in html
    assert "after 3 wrong passwords. Try again in 15 minutes." in html
    assert SESSION_KEY not in attacker.session
    # Another person signing in from the same address is not locked out.
    colleague = Client()
    assert _sign_in(colleague, "analyst", PASSWORD).status_code == 302
    assert colleague.session[SESSION_KEY] == str(world.analyst.pk)


def test_a_successful_sign_in_resets_the_failure_count(world):
    _with_password(world.member)
    client = Client()
    for i in range(2):
        assert _sign_in(client, "member", f"guess-{i}").status_code == 200
    assert _sign_in(client, "member", PASSWORD).status_code == 302
    client.logout()
    for i in range(2):  # two more failures do not lock: the count started again
        assert _sign_in(client, "member", f"again-{i}").status_code == 200
    assert _sign_in(client, "member", PASSWORD).status_code == 302


def test_the_admin_login_is_throttled_too_and_still_works_for_staff(world):
    world.admin.is_staff = True
    world.admin.save(update_fields=["is_staff"])
    _with_password(world.admin)
    client = Client()
    assert client.post("/admin/login/", {"username": "admin", "password": PASSWORD}).status_code == 302
    assert client.get("/admin/").status_code == 200
    attacker = Client()
    codes = [attacker.post("/admin/login/", {"username": "admin", "password": f"x{i}"}).status_code for i in range(3)]
    assert codes[-1] == 429


def test_force_login_and_api_keys_keep_working(client, world):
    client.force_login(world.member)
    assert client.get("/t/acme/chat/").status_code == 200
    assert world.client(world.member).get("/api/v1/me").json()["tenant"] == "acme"


def test_logout_is_a_post_from_the_user_menu(client, world):
    client.force_login(world.member)
    page = client.get("/t/acme/manage/")  # any shell page shows the user menu (this one is a 403)
    html = page.content.decode()
    assert re.search(r'<form method="post" action="/accounts/logout/"', html)
    assert "Change password" in html
    assert client.get("/accounts/logout/").status_code == 405  # a link cannot sign anyone out
    assert SESSION_KEY in client.session
    response = client.post("/accounts/logout/")
    assert response.status_code == 200 and "You are signed out" in response.content.decode()
    assert SESSION_KEY not in client.session
    assert client.get("/t/acme/chat/")["Location"].startswith("/accounts/login/")


def test_password_change(client, world):
    _with_password(world.member)
    client.force_login(world.member)
    form = client.get("/accounts/password_change/")
    assert form.status_code == 200 and "Change your password" in form.content.decode()
    wrong = client.post("/accounts/password_change/", {
        "old_password": "nope", "new_password1": "a fresh passphrase 77", "new_password2": "a fresh passphrase 77"})
    assert wrong.status_code == 200 and "Your old password was entered incorrectly" in wrong.content.decode()
    done = client.post("/accounts/password_change/", {
        "old_password": PASSWORD, "new_password1": "a fresh passphrase 77", "new_password2": "a fresh passphrase 77"})
    assert done.status_code == 302 and done["Location"] == "/accounts/password_change/done/"
    world.member.refresh_from_db()
    assert world.member.check_password("a fresh passphrase 77")


def test_password_change_needs_sign_in(client):
    response = client.get("/accounts/password_change/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_password_reset_sends_a_working_link_and_completes(client, world):
    _with_password(world.member)
    response = client.post("/accounts/password_reset/", {"email": "member@example.test"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password_reset/done/"
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["member@example.test"] and "Reset your Groundwork password" in message.subject
    link = re.search(r"https?://testserver(/accounts/reset/[^\s]+/)", message.body).group(1)
    opened = client.get(link)
    assert opened.status_code == 302  # Django swaps the token for a session-held one
    form_url = opened["Location"]
    form = client.get(form_url)
    assert form.status_code == 200 and "Choose a new password" in form.content.decode()
    done = client.post(form_url, {"new_password1": "reset passphrase 99", "new_password2": "reset passphrase 99"})
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    world.member.refresh_from_db()
    assert world.member.check_password("reset passphrase 99")
    # The link works once.
    again = client.get(link, follow=True)
    assert "This link no longer works" in again.content.decode()
    # And the new password signs in on our page.
    assert _sign_in(Client(), "member", "reset passphrase 99").status_code == 302


def test_password_reset_for_an_unknown_address_sends_nothing_and_says_the_same(client, world):
    response = client.post("/accounts/password_reset/", {"email": "nobody@example.test"})
    assert response.status_code == 302 and response["Location"] == "/accounts/password_reset/done/"
    assert mail.outbox == []


def test_password_reset_is_throttled_per_address_whether_or_not_it_has_an_account(world, settings):
    """Seven asks for one address in a second sent seven e-mails. Now PASSWORD_RESET_PER_ADDRESS are answered as
    always, then 429 with when to try again — for an address with an account and one without alike."""
    _with_password(world.member)
    settings.PASSWORD_RESET_PER_ADDRESS, settings.PASSWORD_RESET_PER_CLIENT = 3, 100
    answers = {}
    for address in ("member@example.test", "nobody@example.test"):
        client = Client(REMOTE_ADDR="203.0.113.5")
        answers[address] = [client.post("/accounts/password_reset/", {"email": address}).status_code
                            for _ in range(7)]
    assert answers == {"member@example.test": [302] * 3 + [429] * 4, "nobody@example.test": [302] * 3 + [429] * 4}
    assert len(mail.outbox) == 3
    refused = Client().post("/accounts/password_reset/", {"email": "MEMBER@example.test "})
    assert refused.status_code == 429 and "try again in 60 minutes" in refused.content.decode()
    assert 3500 <= int(refused["Retry-After"]) <= 3600


def test_password_reset_is_throttled_per_client(world, settings):
    settings.PASSWORD_RESET_PER_ADDRESS, settings.PASSWORD_RESET_PER_CLIENT = 100, 5
    sprayer = Client(REMOTE_ADDR="198.51.100.7")
    codes = [sprayer.post("/accounts/password_reset/", {"email": f"guess{i}@example.test"}).status_code
             for i in range(7)]
    assert codes == [302] * 5 + [429] * 2
    assert Client(REMOTE_ADDR="198.51.100.8").post("/accounts/password_reset/",
                                                  {"email": "guess9@example.test"}).status_code == 302


def test_a_mail_server_that_is_down_answers_like_an_unknown_address(client, world, settings):
    """Otherwise the 500 — only where an account exists, for no mail is sent elsewhere — told which do."""
    _with_password(world.member)
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 9, 2  # nothing listens
    known = Client(raise_request_exception=False).post("/accounts/password_reset/", {"email": "member@example.test"})
    unknown = Client(raise_request_exception=False).post("/accounts/password_reset/",
                                                         {"email": "nobody@example.test"})
    assert (known.status_code, known["Location"]) == (unknown.status_code, unknown["Location"]) == (
        302, "/accounts/password_reset/done/")


def test_demo_users_sign_in_on_our_page_with_the_demo_password(client, monkeypatch):
    from django.core.management import call_command

    from groundwork import hooks

    monkeypatch.setattr(hooks, "_sample_loaders", {})  # the users are what matters here, not the sample data
    call_command("demo_seed", stdout=io.StringIO())
    response = _sign_in(client, "member", "groundwork-demo")
    assert response.status_code == 302
    assert client.get("/")["Location"] == "/t/kestrel/chat/"


def test_the_throttled_address_trusts_only_our_own_proxies(settings):
    from django.test import RequestFactory

    from groundwork.throttling import client_ip

    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.9")
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_ip(request) == "10.0.0.2"
    settings.TRUSTED_PROXY_COUNT = 1
    assert client_ip(request) == "203.0.113.9"  # "6.6.6.6" was written by the client: ignored
    settings.TRUSTED_PROXY_COUNT = 3
    assert client_ip(request) == "10.0.0.2"
    settings.TRUSTED_PROXY_COUNT = 1
    for hop, seen in (("203.0.113.9:4711", "203.0.113.9"), ("[2001:db8::1]:443", "2001:db8::1"),
                      ("2001:db8::1", "2001:db8::1"), ("not-an-address", "10.0.0.2"), ("1.2.3.4:x", "10.0.0.2")):
        request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=hop)
        assert client_ip(request) == seen, hop


def test_a_forwarded_entry_that_is_no_address_is_a_failed_sign_in_not_a_500(client, settings, world):
    settings.TRUSTED_PROXY_COUNT = 1
    response = client.post("/accounts/login/", {"username": "member", "password": "wrong"},
                           HTTP_X_FORWARDED_FOR="<script>")
    assert response.status_code == 200 and b"Please enter a correct" in response.content
