"""`ssrf_reached`: internal services a live connector reached (goal 0), with CONNECTOR_ALLOWED_HOSTS empty.

Internal services are loopback HTTP servers that record every request (on 127.0.0.1, and on ::1 where the machine
has it); every connection a connector opens is recorded too (benchmarks/connectors/egress_net.py), so targets no server
here plays (169.254.169.254, 10.0.0.1, …) count when a connection to them is even attempted. A scratch tenant's
admin points a GitHub live connector at each target, in the odd spellings (decimal, hex and octal IPv4, IPv4
inside IPv6, trailing dots, Unicode look-alikes, internal names), three ways:
- saved through the API (`PUT /api/v1/sources/<id>/connector`): must be a 4xx (`ssrf_saved` counts the 2xx);
- written straight into the table (a connector saved before the check, or when its name resolved elsewhere) and
  synced: the sync's own connect-time check must refuse it;
- behind redirects: a public source (a public address the simulated network carries to a loopback redirector)
  that redirects to the target at once or after a hop on its own host; and a name that resolves to a public
  address when saved and to loopback when the sync connects (DNS rebinding).
A case counts as reached when an internal server got a request or a connection to a non-public address was
opened. `ssrf_port_oracle`: distinct run messages for a closed port and an open non-HTTP port of a public
source, minus one (goal 0: a run's error is no port scanner).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from pathlib import Path

from django.test.utils import override_settings
from django.urls import reverse

from benchmarks.connectors.egress_net import RecordingServer, ipv6_loopback_available, simulated_network
from connectors.crypto import credentials_encrypt
from connectors.models import Connector
from connectors.services import sync_run_start
from connectors.sources.egress import address_refusal
from connectors.sync import sync_run_execute
from knowledge.models import Source

from ._world import probe_world

PUBLIC = "93.184.215.14"  # a public address the simulated network carries to a loopback server
LOOPBACK_SPELLINGS = ["127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0x7f.1",
                      "017700000001", "0177.0.0.1", "0177.1", "127.000.000.001", "127.0.0.1.", "localhost",
                      "localhost.", "LocalHost", "db.localhost", "ⓛocalhost", "１２７.0.0.1", "[::ffff:127.0.0.1]",
                      "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:7f00:1]", "[64:ff9b::7f00:1]", "0.0.0.0", "0"]
ELSEWHERE = ["169.254.169.254", "[::ffff:169.254.169.254]", "10.0.0.1", "192.168.0.1", "172.16.0.1",
             "100.100.100.200", "192.0.0.192", "168.63.129.16", "metadata.google.internal",
             "metadata.google.internal.", "metadata", "[fd00:ec2::254]", "[fe80::a9fe:a9fe]", "intranet"]


def _internal(address: str) -> bool:
    try:
        return address_refusal(ipaddress.ip_address(address.split("%", 1)[0])) is not None
    except ValueError:
        return True  # not an address at all: the connector asked for something it should not have


def measure(out_dir: Path, quick: bool) -> dict:
    spellings = LOOPBACK_SPELLINGS[::2] if quick else LOOPBACK_SPELLINGS
    elsewhere = ELSEWHERE[::2] if quick else ELSEWHERE
    servers: list[RecordingServer] = []
    reached: list[str] = []
    saved: list[str] = []
    cases = 0
    with probe_world() as world, override_settings(CONNECTOR_ALLOWED_HOSTS=[], CONNECTORS_API_ALLOW_HTTP=True,
                                                   ALLOWED_HOSTS=["testserver"]):
        try:
            internal = RecordingServer()
            servers.append(internal)
            internal_v6 = RecordingServer(host="::1") if ipv6_loopback_available() else None
            servers += [internal_v6] if internal_v6 else []
            admin = world.client("admin")
            authority = world.authority("admin")
            source = Source.objects.create(tenant=world.a, kind="tickets", name=f"SSRF probe {world.tag}")
            credentials = credentials_encrypt({"token": "probe"})

            def hits() -> int:
                return sum(len(server.hits) for server in servers if server is internal or server is internal_v6)

            def sync() -> str:
                run = sync_run_start(authority=authority, source=source)
                sync_run_execute(run_id=run.pk)
                run.refresh_from_db()
                return run.message

            def case(label: str, action) -> None:
                nonlocal cases
                cases += 1
                before = hits()
                with simulated_network(routes={PUBLIC: "127.0.0.1"},
                                       names={"rebind.probe.test": [[PUBLIC], ["127.0.0.1"]]}) as net:
                    action()
                if hits() > before or any(_internal(host) for host, _port in net.connections):
                    reached.append(label)

            def put(url: str):
                return admin.put(reverse("api:source-connector", kwargs={"source_id": source.pk}), {
                    "kind": "github_api", "settings": {"base_url": url, "repo": "acme/tools"},
                    "credentials": {"token": "probe"}}, content_type="application/json")

            def saved_then_synced(url: str, *, internal_target: bool = False) -> str:
                Connector.objects.filter(source=source).delete()
                response = put(url)
                if response.status_code >= 300:
                    return response.content.decode()
                if internal_target:
                    saved.append(url)
                return sync()

            def unchecked_then_synced(url: str) -> None:
                Connector.objects.filter(source=source).delete()
                Connector.objects.create(tenant=world.a, source=source, kind="github_api", credentials_encrypted=
                                         credentials, settings={"base_url": url, "repo": "acme/tools"})
                sync()

            targets = [f"http://{s}:{internal.port}" for s in spellings]
            targets += [f"http://[::1]:{internal_v6.port}"] if internal_v6 else []
            targets += [f"http://{host}" for host in elsewhere]
            for url in targets:
                case(f"save {url}", lambda url=url: saved_then_synced(url, internal_target=True))
                case(f"sync {url}", lambda url=url: unchecked_then_synced(url))
            for url in targets[:: 3 if quick else 1]:
                direct = RecordingServer(redirect_to=url + "/repos/acme/tools")
                hop = RecordingServer(redirect_to={"/repos/acme/tools": "/hop", "/hop": url + "/repos/acme/tools"})
                servers += [direct, hop]
                for redirector in (direct, hop):
                    case(f"redirect {redirector.port} -> {url}",
                         lambda r=redirector: saved_then_synced(f"http://{PUBLIC}:{r.port}"))
            case("dns rebinding", lambda: saved_then_synced(f"http://rebind.probe.test:{internal.port}"))
            oracle = _port_messages(saved_then_synced)
        finally:
            for server in servers:
                server.close()
    return {"ssrf_reached": len(reached), "ssrf_cases": cases, "ssrf_saved": len(saved),
            "ssrf_port_oracle": len(oracle) - 1, "ssrf_port_messages": sorted(oracle),
            "ssrf_reached_examples": reached[:10]}


def _port_messages(saved_then_synced) -> set[str]:
    """The run messages of a public source's closed port and of an open port that speaks no HTTP."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def banner() -> None:
        try:
            conn, _ = listener.accept()
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")
            conn.close()
        except OSError:
            pass

    messages = set()
    try:
        for port, serve in ((closed_port, None), (listener.getsockname()[1], banner)):
            if serve:
                threading.Thread(target=serve, daemon=True).start()
            with simulated_network(routes={PUBLIC: "127.0.0.1"}):
                messages.add(saved_then_synced(f"http://{PUBLIC}:{port}"))
    finally:
        listener.close()
    return messages
