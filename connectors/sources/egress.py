"""Where a live connector may connect: public addresses only, unless the operator allows a host.

A tenant admin names a live connector's base_url and the sync worker calls it from inside our network, so without
a check that address could be the cloud's metadata service (169.254.169.254), a database on loopback or any
host of the private network (server-side request forgery). Hence:

- Every address a host resolves to must be public: not loopback, private (RFC 1918, unique local), link-local,
  shared (CGNAT), multicast, reserved, unspecified, nor a known metadata address. An IPv6 address that carries
  an IPv4 one (IPv4-mapped, 6to4, Teredo, NAT64) is judged by that one too. IPv4 literals are read the way the
  C resolver reads them (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`); a trailing dot changes nothing.
- Names that only mean something inside a network are refused without a lookup: `localhost`, `*.localhost`,
  `*.internal` (metadata.google.internal), `*.local`, `*.localdomain`, `*.home.arpa`, reverse-DNS names, and
  names without a dot (the resolver's search domains turn them into internal names).
- CONNECTOR_ALLOWED_HOSTS lists the exceptions (an on-premises Confluence or GitHub Enterprise): host names
  ("wiki.corp.example", ".corp.example" for a domain and its subdomains) and networks ("10.20.0.0/16").
- The check runs when a connector is saved (a 400 naming the problem) and again for every connection a sync
  opens, which then connects to the very address that was checked (PinnedAdapter): a name whose DNS answer
  changes between the check and the connection (DNS rebinding) cannot switch the target.
- A name that does not resolve and one that resolves to a refused address get the same answer, and every failed
  connection the same message (http.py): what a sync reports tells nothing of the internal network, neither
  which names exist there nor which ports are open.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from urllib.parse import urlsplit

from django.conf import settings
from requests.adapters import HTTPAdapter

from .base import ConnectorError

logger = logging.getLogger(__name__)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_SETTING = "CONNECTOR_ALLOWED_HOSTS"
_EXCEPTIONS = f"connectors reach public addresses only ({ALLOWED_SETTING} lists the exceptions)"

# Internal-only names (RFC 6761, 6762, 8375 and the clouds' metadata names).
_INTERNAL_NAMES = frozenset({"localhost", "metadata", "metadata.goog", "instance-data", "localhost.localdomain"})
_INTERNAL_SUFFIXES = (".localhost", ".internal", ".local", ".localdomain", ".home.arpa", ".in-addr.arpa",
                      ".ip6.arpa", ".intranet", ".corp", ".lan")
# Public-looking addresses that are no public service: the IETF protocol block (Oracle Cloud's metadata at
# 192.0.0.192), the old 6to4 relay anycast, Azure's host endpoint, and NAT64 prefixes (judged by the IPv4 inside).
_REFUSED_NETWORKS = (ipaddress.ip_network("192.0.0.0/24"), ipaddress.ip_network("192.88.99.0/24"),
                     ipaddress.ip_network("168.63.129.16/32"), ipaddress.ip_network("64:ff9b:1::/48"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class EgressRefused(ConnectorError):
    """The connector may not connect there (the message names the host and why, never what DNS said)."""


def host_normalise(host: str) -> str:
    """The host as the resolver will read it: lower case, IDNA (so look-alike Unicode spellings map to what
    they stand for), without the trailing dot(s) of a fully qualified name. Raises EgressRefused."""
    text = (host or "").strip().strip("[]").rstrip(".").lower()
    if not text:
        raise EgressRefused("base_url has no host")
    if ":" in text:  # an IPv6 literal
        return text
    try:
        return text.encode("idna").decode("ascii").rstrip(".")
    except UnicodeError as exc:
        raise EgressRefused(f"base_url's host {host!r} is not a valid host name") from exc


def address_literal(host: str) -> Address | None:
    """The address a literal host names, in any spelling the C resolver accepts; None for a name."""
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])  # an IPv6 zone ("%eth0") selects an interface only
    except ValueError:
        pass
    if ":" in host:
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))  # decimal, hex, octal and short forms
    except OSError:
        return None


def _refusal_of(address: Address) -> str | None:
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    if address.is_multicast:
        return "a multicast address"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_private or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local):
        return "a private-network address"
    if address.is_reserved or not address.is_global or any(address in net for net in _REFUSED_NETWORKS
                                                            if net.version == address.version):
        return "a reserved or non-public address"
    return None


def address_refusal(address: Address) -> str | None:
    """Why a connector may not connect to `address` ("a loopback address"), or None when it is public. An
    IPv6 address that carries an IPv4 one is refused when either is."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
        if address in _NAT64:
            inner.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        for embedded in inner:
            if embedded is not None and (reason := _refusal_of(embedded)):
                return f"{reason} inside an IPv6 address"
    return _refusal_of(address)


def _allowed() -> tuple[frozenset[str], tuple[str, ...], tuple]:
    """(exact names, domain suffixes, networks) of CONNECTOR_ALLOWED_HOSTS (validated at start-up)."""
    names, suffixes, networks = set(), [], []
    for entry in getattr(settings, ALLOWED_SETTING, ()):
        entry = entry.strip().lower()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            continue
        except ValueError:
            pass
        if entry.startswith("."):
            suffixes.append(entry.rstrip("."))
        else:
            names.add(host_normalise(entry))
    return frozenset(names), tuple(suffixes), tuple(networks)


def _name_allowed(host: str) -> bool:
    names, suffixes, _ = _allowed()
    return host in names or any(host == s[1:] or host.endswith(s) for s in suffixes)


def _network_allowed(address: Address) -> bool:
    _, _, networks = _allowed()
    return any(address.version == net.version and address in net for net in networks)


def _internal_name(host: str) -> bool:
    return host in _INTERNAL_NAMES or host.endswith(_INTERNAL_SUFFIXES) or "." not in host


def host_check(host: str) -> None:
    """What can be told without a lookup: a literal address or an internal-only name the connector may not reach.
    Raises EgressRefused naming the reason (the caller typed the host: telling why reveals nothing)."""
    name = host_normalise(host)
    if _name_allowed(name):
        return
    literal = address_literal(name)
    if literal is not None:
        reason = None if _network_allowed(literal) else address_refusal(literal)
        if reason:
            raise EgressRefused(f"base_url's host {host} is {reason}; {_EXCEPTIONS}")
        return
    if _internal_name(name):
        raise EgressRefused(f"base_url's host {host} is a name only a private network resolves; {_EXCEPTIONS}")


def addresses_of(name: str, port: int) -> list[str]:
    """What the system resolver answers for `name` (empty when it cannot): the one lookup egress makes."""
    try:
        return [info[4][0] for info in socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)]
    except (OSError, UnicodeError):
        return []


def egress_resolve(host: str, port: int) -> str:
    """The address to connect to for `host`: checked by host_check, then resolved, and every address it resolves
    to public (or allowed). Raises EgressRefused; an unresolvable host and one resolving to a refused address get
    the same message."""
    host_check(host)
    name = host_normalise(host)
    literal = address_literal(name)
    if literal is not None:
        return str(literal)
    addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in addresses_of(name, port)]
    if _name_allowed(name):
        refused = []
    else:
        refused = [a for a in addresses if not _network_allowed(a) and address_refusal(a)]
    if not addresses or refused:
        if refused:
            logger.warning("connector egress refused: %s resolves to %s", name, ", ".join(map(str, refused)))
        raise EgressRefused(f"base_url's host {host} does not resolve to a public address; {_EXCEPTIONS}")
    return str(addresses[0])


def url_check(url: str) -> None:
    """egress_resolve for a URL's host and port (the save-time check of a base_url)."""
    parts = urlsplit(url)
    egress_resolve(parts.hostname or "", _port(parts))


def _port(parts) -> int:
    try:
        port = parts.port
    except ValueError as exc:
        raise EgressRefused("base_url has an invalid port") from exc
    return port or (443 if parts.scheme == "https" else 80)


class PinnedAdapter(HTTPAdapter):
    """requests' adapter that checks every connection's host with egress_resolve and connects to the address it
    checked: the pool is keyed by that address, while TLS still sends and verifies the host name (SNI, the
    certificate) and the Host header still names it."""

    def get_connection_with_tls_context(self, request, verify, proxies=None, cert=None):
        parts = urlsplit(request.url)
        address = egress_resolve(parts.hostname or "", _port(parts))
        host_params, pool_kwargs = self.build_connection_pool_key_attributes(request, verify, cert)
        if host_params["scheme"] == "https":
            name = host_normalise(parts.hostname or "")
            pool_kwargs = {**pool_kwargs, "server_hostname": name, "assert_hostname": name}
        return self.poolmanager.connection_from_host(scheme=host_params["scheme"], host=address,
                                                     port=host_params["port"], pool_kwargs=pool_kwargs)

    def add_headers(self, request, **kwargs) -> None:
        super().add_headers(request, **kwargs)
        # The connection goes to an address; the server still needs the name it serves.
        netloc = urlsplit(request.url).netloc.rpartition("@")[2]
        request.headers["Host"] = netloc
