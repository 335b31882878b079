"""Links between records, found in a record's body: Markdown and HTML links to other records, wiki-style
`[[Page]]` links, and ticket keys (`ABC-123`) mentioned in another record.

A link is stored as a (kind, key) reference (`DocumentLink`); `knowledge.sql.links.document_links_write` matches it
to a document of the same tenant whose own keys agree:
  url    — the record's `record_url` (fragment and trailing slash ignored), or the in-app viewer URL
           (`/t/<tenant>/documents/<id>/`, kind `doc`, key the id);
  wiki   — the record's title, casefolded;
  ticket — a ticket key at the start of the record's title, or its external id.
Pure functions: no database, so the same rules serve ingest, the backfill command and the tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LINK_KINDS = ("url", "doc", "wiki", "ticket")
MAX_LINKS_PER_DOCUMENT = 200
MAX_KEY_LENGTH = 500

_MD_LINK = re.compile(r"(?<!!)\[([^\]\n]{0,300})\]\(\s*<?((?:[^)\s>\]]|\](?!\())+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HTML_LINK = re.compile(r"<a\s[^<>]*?href\s*=\s*[\"']([^\"']+)[\"'][^<>]*>((?:(?!<a\s).)*?)</a>",
                        re.IGNORECASE | re.DOTALL)
_WIKI_LINK = re.compile(r"\[\[([^\[\]|\n]{1,300})(?:\|([^\[\]\n]{0,300}))?\]\]")
# Two to ten capitals (a digit may follow the first), a dash, a number: JIRA/Linear-style keys. Not preceded by
# a letter, digit or dash, so "X-ABC-12" or a UUID fragment does not yield one.
TICKET_KEY = re.compile(r"(?<![\w-])([A-Z][A-Z0-9]{1,9}-[0-9]{1,6})(?![\w-])")
_VIEWER = re.compile(r"^/t/[\w-]+/documents/([0-9]{1,18})/?(?:[#?].*)?$")
_TAGS = re.compile(r"<[^<>]+>")


@dataclass(frozen=True)
class LinkRef:
    kind: str
    key: str
    anchor: str = ""


def url_key(url: str) -> str:
    """A URL as link keys compare it: no fragment, no trailing slash, scheme and host lower-cased."""
    url = url.strip().split("#", 1)[0].rstrip("/")
    match = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*://[^/?]+)(.*)$", url)
    if match:
        url = match.group(1).lower() + match.group(2)
    return url[:MAX_KEY_LENGTH]


def title_key(title: str) -> str:
    return " ".join(title.casefold().split())[:MAX_KEY_LENGTH]


def _target(href: str, anchor: str) -> LinkRef | None:
    href = href.strip()
    if not href or href.startswith(("#", "mailto:", "javascript:", "data:")):
        return None
    viewer = _VIEWER.match(href)
    if viewer:
        return LinkRef("doc", viewer.group(1), anchor)
    return LinkRef("url", url_key(href), anchor)


def links_extract(body: str, *, own_ticket: str | None = None) -> list[LinkRef]:
    """The record links in a body (raw Markdown, HTML or text), each (kind, key) once, in order of first
    appearance, at most MAX_LINKS_PER_DOCUMENT. `own_ticket` (the record's own key) is not a link."""
    found: dict[tuple[str, str], LinkRef] = {}

    def add(ref: LinkRef | None) -> None:
        if ref is not None and ref.key and (ref.kind, ref.key) not in found:
            found[(ref.kind, ref.key)] = LinkRef(ref.kind, ref.key, ref.anchor.strip()[:300])

    # Each pattern is tried only where the characters it cannot match without are in the body: most bodies hold
    # no link, and four scans of every body were a twentieth of an import.
    if "](" in body:
        for match in _MD_LINK.finditer(body):
            add(_target(match.group(2), match.group(1)))
    if "<" in body:
        for match in _HTML_LINK.finditer(body):
            add(_target(match.group(1), _TAGS.sub("", match.group(2))))
    if "[[" in body:
        for match in _WIKI_LINK.finditer(body):
            add(LinkRef("wiki", title_key(match.group(1)), match.group(2) or match.group(1)))
    for match in TICKET_KEY.finditer(body) if "-" in body else ():
        if match.group(1) != own_ticket:
            add(LinkRef("ticket", match.group(1), match.group(1)))
    return list(found.values())[:MAX_LINKS_PER_DOCUMENT]


def own_ticket_key(title: str, external_id: str) -> str | None:
    """The ticket key a record is known by: one at the start of its title, or its whole external id."""
    match = TICKET_KEY.match(title.strip())
    if match:
        return match.group(1)
    match = TICKET_KEY.fullmatch(external_id.strip().upper())
    return match.group(1) if match else None
