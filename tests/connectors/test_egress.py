"""Where a live connector may connect (connectors/sources/egress.py): internal targets refused in every spelling
when the connector is saved (a 400 with the reason) and again for every connection a sync opens (DNS rebinding),
the connection pinned to the address checked, redirects kept on the source's host and never down to http, one
message for every unreachable source, CONNECTOR_ALLOWED_HOSTS for on-premises servers. No internet: internal
services are loopback servers that record whether they were reached; a public source is a loopback server a
simulated route stands for (benchmarks/connectors/egress_net.py)."""

from __future__ import annotations

import ipaddress
import socket
import threading

import pytest
import requests
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.connectors.egress_net import RecordingServer, ipv6_loopback_available, simulated_network
from connectors.crypto import credentials_encrypt
from connectors.models import Connector
from connectors.services import connector_configure
from connectors.sources.base import ConnectorError
from connectors.sources.egress import EgressRefused, address_refusal, host_check
from connectors.sources.http import UNREACHABLE, ApiClient
from knowledge.models import Source

from .conftest import sync

pytestmark = pytest.mark.django_db

PUBLIC = "93.184.215.14"  # plays a public source; simulated_network carries it to loopback


@pytest.fixture
def live(settings):
    settings.CONNECTORS_API_ALLOW_HTTP = True
    settings.CONNECTOR_ALLOWED_HOSTS = []
    servers = []
    yield servers
    for server in servers:
        server.close()


@pytest.fixture
def wiki(world) -> Source:
    return Source.objects.create(tenant=world.acme, kind="tickets", name="GitHub")


def _put(world, source, base_url):
    return world.client(world.admin).put(reverse("api:source-connector", kwargs={"source_id": source.pk}), {
        "kind": "github_api", "settings": {"base_url": base_url, "repo": "acme/tools"},
        "credentials": {"token": "t"}}, format="json")


def _connector_unchecked(world, source, base_url) -> Connector:
    """A connector whose base_url was never checked (written before this check existed, or resolving elsewhere
    then): only the sync's own checks stand between it and the target."""
    return Connector.objects.create(tenant=world.acme, source=source, kind="github_api",
                                    settings={"base_url": base_url, "repo": "acme/tools"},
                                    credentials_encrypted=credentials_encrypt({"token": "t"}))


INTERNAL = ["https://169.254.169.254", "https://localhost", "https://[::1]", "https://0x7f000001", "https://10.0.0.1",
            "https://metadata.google.internal", "https://metadata.google.internal.", "https://LOCALHOST.",
            "https://2130706433", "https://017700000001", "https://0177.0.0.1", "https://127.1", "https://0",
            "https://[::ffff:127.0.0.1]", "https://[::ffff:a9fe:a9fe]", "https://[64:ff9b::a9fe:a9fe]",
            "https://[2002:a9fe:a9fe::]", "https://[fd00:ec2::254]", "https://[fe80::1]", "https://192.168.1.1",
            "https://172.16.0.1", "https://100.100.100.200", "https://192.0.0.192", "https://224.0.0.1",
            "https://0.0.0.0", "https://intranet", "https://db.localhost", "https://ⓛocalhost",
            "https://１２７.0.0.1"]


@pytest.mark.parametrize("base_url", INTERNAL)
def test_internal_targets_are_refused_when_saved_with_the_reason(world, wiki, live, base_url):
    response = _put(world, wiki, base_url)
    assert response.status_code == 400, response.content
    assert "connectors reach public addresses only" in response.content.decode()
    assert not Connector.objects.filter(source=wiki).exists()


def test_a_name_is_resolved_when_saved_and_unresolvable_reads_like_internal(world, wiki, live):
    with simulated_network(names={"api.public.test": [[PUBLIC]], "jenkins.corp.test": [["10.1.2.3"]]}):
        assert _put(world, wiki, "https://api.public.test").status_code == 200
        internal = _put(world, wiki, "https://jenkins.corp.test")
        missing = _put(world, wiki, "https://no-such-host.corp.test")
    # The same words whether DNS knows the name inside our network or not at all: no map of internal names.
    assert internal.status_code == missing.status_code == 400
    assert "jenkins.corp.test does not resolve to a public address" in internal.content.decode()
    assert internal.content.decode().replace("jenkins", "no-such-host") == missing.content.decode()


@pytest.mark.parametrize("spelling", ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "017700000001",
                                      "0x7f.0.0.1", "127.0.0.1.", "localhost", "localhost.", "[::ffff:127.0.0.1]"])
def test_a_sync_refuses_internal_targets_saved_before_the_check(world, wiki, live, spelling):
    internal = RecordingServer()
    live.append(internal)
    _connector_unchecked(world, wiki, f"http://{spelling}:{internal.port}")
    run = sync(world, wiki)
    assert run.status == "failed" and "connectors reach public addresses only" in run.message
    assert not internal.reached


def test_dns_rebinding_after_the_save_is_refused_at_connect_time(world, wiki, live):
    internal = RecordingServer()
    live.append(internal)
    # Public when saved, loopback when the sync connects.
    with simulated_network(names={"rebind.public.test": [[PUBLIC], ["127.0.0.1"]]}) as net:
        assert _put(world, wiki, f"http://rebind.public.test:{internal.port}").status_code == 200
        run = sync(world, wiki)
    assert run.status == "failed" and "does not resolve to a public address" in run.message
    assert not internal.reached and net.connections == []


def test_the_connection_goes_to_the_address_checked_with_the_host_name_kept(world, wiki, live, settings):
    settings.CONNECTOR_ALLOWED_HOSTS = ["127.0.0.1/32"]  # an on-premises server on this network
    server = RecordingServer(body={"id": 1})
    live.append(server)
    # The system resolver does not know the name: only the checked answer can have been used to connect.
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("wiki.onprem.test", 80)
    with simulated_network(names={"wiki.onprem.test": [["127.0.0.1"]]}) as net:
        client = ApiClient(f"http://wiki.onprem.test:{server.port}")
        assert client.json("/repos/acme/tools") == {"id": 1}
    assert server.hits == [("/repos/acme/tools", f"wiki.onprem.test:{server.port}")]
    assert net.connections == [("127.0.0.1", server.port)]


def _public_redirector(live, location: str) -> RecordingServer:
    redirector = RecordingServer(redirect_to=location)
    live.append(redirector)
    return redirector


@pytest.mark.parametrize("target", ["http://127.0.0.1:{port}/", "http://localhost:{port}/", "http://0x7f000001:{port}/",
                                    "http://[::ffff:127.0.0.1]:{port}/", "http://169.254.169.254/latest/meta-data/",
                                    "http://{public}:1/elsewhere"])
def test_redirects_to_another_host_are_not_followed(world, wiki, live, target):
    internal = RecordingServer()
    live.append(internal)
    redirector = _public_redirector(live, target.format(port=internal.port, public=PUBLIC))
    with simulated_network(routes={PUBLIC: "127.0.0.1"}) as net:
        assert _put(world, wiki, f"http://{PUBLIC}:{redirector.port}").status_code == 200
        run = sync(world, wiki)
    assert run.status == "failed" and run.message == "the source redirected to another host; refused"
    assert redirector.reached and not internal.reached
    assert net.connections == [(PUBLIC, redirector.port)]


def test_a_redirect_on_the_same_host_is_followed_and_checked_again(world, wiki, live, settings):
    settings.CONNECTOR_ALLOWED_HOSTS = ["127.0.0.1"]
    target = RecordingServer(body={"ok": True})
    live.append(target)
    hops = RecordingServer(redirect_to=f"http://127.0.0.1:{target.port}/repos/acme/tools")
    live.append(hops)
    client = ApiClient(f"http://127.0.0.1:{target.port}")
    assert client.json(f"http://127.0.0.1:{target.port}/x") == {"ok": True}
    # A second hop to the redirector's own port is another host (another port): refused.
    client = ApiClient(f"http://127.0.0.1:{hops.port}")
    with pytest.raises(ConnectorError, match="another host"):
        client.get("/repos/acme/tools")
    assert not target.hits[1:]


def test_a_redirect_from_https_down_to_http_is_refused(monkeypatch):
    client = ApiClient("https://api.public.test")
    hop = requests.Response()
    hop.status_code, hop.url = 301, "https://api.public.test/repos/acme/tools"
    hop.headers["Location"] = "http://api.public.test/repos/acme/tools"
    monkeypatch.setattr(client.session, "get", lambda *args, **kwargs: hop)
    with pytest.raises(ConnectorError, match="from https to plain http"):
        client.get("/repos/acme/tools")


def test_open_and_closed_ports_read_the_same(world, wiki, live, settings):
    """An allowed host's port that refuses, one that speaks no HTTP and one that hangs up all fail the run with
    the same message: a run's error is no port scanner."""
    settings.CONNECTOR_ALLOWED_HOSTS = ["127.0.0.1"]
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        messages = set()
        for port in (closed_port, listener.getsockname()[1]):
            Connector.objects.filter(source=wiki).delete()
            connector_configure(authority=world.authority(world.admin), source=wiki, kind="github_api",
                                settings={"base_url": f"http://127.0.0.1:{port}", "repo": "acme/tools"},
                                credentials={"token": "t"})
            if port != closed_port:
                # Answer garbage to whoever connects, then hang up.
                def serve():
                    conn, _ = listener.accept()
                    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
                    conn.close()

                threading.Thread(target=serve, daemon=True).start()
            run = sync(world, wiki)
            assert run.status == "failed"
            messages.add(run.message)
    finally:
        listener.close()
    assert messages == {UNREACHABLE}


def test_allowed_hosts_admit_names_domains_and_networks(settings):
    settings.CONNECTOR_ALLOWED_HOSTS = ["wiki.corp.internal", ".git.lan", "10.20.0.0/16", "[fd00::5]"]
    for host in ("wiki.corp.internal", "WIKI.corp.internal.", "git.lan", "a.git.lan", "10.20.3.4", "fd00::5"):
        host_check(host)
    for host in ("other.corp.internal", "10.21.0.1", "fd00::6", "evilgit.lan"):
        with pytest.raises(EgressRefused):
            host_check(host)


@pytest.mark.skipif(not ipv6_loopback_available(), reason="no IPv6 loopback here")
def test_ipv6_loopback_is_refused_at_connect_time(world, wiki, live):
    internal = RecordingServer(host="::1")
    live.append(internal)
    _connector_unchecked(world, wiki, f"http://[::1]:{internal.port}")
    assert sync(world, wiki).status == "failed" and not internal.reached


_BLOCKED_V4 = [ipaddress.ip_network(n) for n in ("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",
                                                  "169.254.0.0/16", "100.64.0.0/10", "0.0.0.0/8", "224.0.0.0/4",
                                                  "240.0.0.0/4")]


@given(st.sampled_from(_BLOCKED_V4).flatmap(
    lambda net: st.integers(int(net.network_address), int(net.broadcast_address))))
def test_every_spelling_of_an_internal_ipv4_address_is_refused(value):
    address = ipaddress.IPv4Address(value)
    a, b, c, d = address.packed
    spellings = [str(address), str(value), hex(value), f"0{value:o}", f"{a}.{b}.{(c << 8) | d}",
                 f"{a}.{(b << 16) | (c << 8) | d}", f"{hex(a)}.{hex(b)}.{hex(c)}.{hex(d)}", f"{address}.",
                 f"::ffff:{address}", f"64:ff9b::{address}"]
    for spelling in spellings:
        with pytest.raises(EgressRefused):
            host_check(spelling)
    assert address_refusal(address) is not None


def test_changing_only_credentials_does_not_resolve_the_stored_host_again(world, wiki, live):
    with simulated_network(names={"api.public.test": [[PUBLIC]]}):
        assert _put(world, wiki, "https://api.public.test").status_code == 200
    # The name does not resolve now (no network here): new credentials are still taken.
    response = world.client(world.admin).put(reverse("api:source-connector", kwargs={"source_id": wiki.pk}),
                                             {"credentials": {"token": "rotated"}}, format="json")
    assert response.status_code == 200, response.content
