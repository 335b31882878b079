"""Readable Markdown from the markup connectors receive: Confluence storage format (XHTML with `ac:`/`ri:`
macros) or view HTML, and Atlassian Document Format (Jira Cloud REST v3 descriptions and comments).

Links become `[label](url)` so the body stays readable and knowledge's record links (knowledge/record_links.py:
Markdown links matched to another record's URL) can follow them; a page link without an address becomes
`[[Title]]` (matched by title). `link_target(kind, value)` decides the URL of a link to another page and the
converter reports every link it made.

Also: rendered HTML from an untrusted export (Jira's XML issue export) — `html_markdown`, cleaned by nh3 first
(scripts, styles and their content, event attributes and `javascript:` addresses go) — and the links of Jira
wiki markup (`[label|https://…]`, REST v2 and CSV exports) as Markdown links — `wiki_links`."""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import urlsplit

import nh3

from knowledge.parsing import WholeDocumentHTMLParser

_BLOCKS = {"p", "div", "ul", "ol", "table", "tr", "blockquote", "pre", "br", "hr"}
_SKIPPED = {"script", "style", "ac:parameter", "ac:placeholder"}
LinkTarget = Callable[[str, str], tuple[str, str | None]]  # (kind, value) -> (url, page id or None)


class _Storage(WholeDocumentHTMLParser):
    def __init__(self, link_target: LinkTarget) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.links: list[dict] = []
        self.link_target = link_target
        self.href: list[str | None] = []  # open <a> hrefs
        self.ac_link: dict | None = None  # the open <ac:link>
        self.skip = 0

    def _emit(self, text: str) -> None:
        if self.ac_link is not None:
            self.ac_link["label"] += text
        elif not self.skip:
            self.out.append(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in _SKIPPED:
            self.skip += 1
        elif tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self._emit("\n\n" + "#" * int(tag[1]) + " ")
        elif tag == "li":
            self._emit("\n- ")
        elif tag in ("td", "th"):
            self._emit(" | ")
        elif tag in _BLOCKS:
            self._emit("\n\n" if tag != "br" else "\n")
        elif tag == "a":
            self.href.append(attrs.get("href"))
            self._emit("[")
        elif tag == "ac:link":
            self.ac_link = {"label": "", "kind": "", "value": ""}
        elif tag in ("ri:page", "ri:attachment", "ri:url") and self.ac_link is not None:
            if tag == "ri:page":
                self.ac_link.update(kind="title", value=attrs.get("ri:content-title") or "")
            elif tag == "ri:url":
                self.ac_link.update(kind="url", value=attrs.get("ri:value") or "")
            else:
                self.ac_link.update(kind="attachment", value=attrs.get("ri:filename") or "")

    def handle_endtag(self, tag):
        if tag in _SKIPPED:
            self.skip = max(0, self.skip - 1)
        elif tag == "a" and self.href:
            href = self.href.pop()
            url, page_id = self.link_target("url", href or "")
            self._emit(f"]({url})" if url else "]")
            if url:
                self.links.append({"url": url, "page_id": page_id})
        elif tag == "ac:link" and self.ac_link is not None:
            link, self.ac_link = self.ac_link, None
            label = " ".join(link["label"].split()) or link["value"]
            url, page_id = self.link_target(link["kind"], link["value"]) if link["value"] else ("", None)
            if url:
                self._emit(f"[{label}]({url})")
            elif link["kind"] == "title" and link["value"]:
                # No address for it (another space, or no site known): a wiki link, which knowledge's record
                # links resolve by title.
                title = link["value"].replace("]", "").replace("|", "")
                self._emit(f"[[{title}]]" if label == link["value"] else f"[[{title}|{label}]]")
            else:
                self._emit(label)
            if link["kind"] == "title":
                self.links.append({"title": link["value"], "url": url, "page_id": page_id})
        elif tag in _BLOCKS or tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self._emit("\n")

    def handle_data(self, data):
        self._emit(data)

    def unknown_decl(self, data):
        if data.startswith("CDATA["):
            self._emit(data[6:])


def storage_markdown(markup: str, link_target: LinkTarget) -> tuple[str, list[dict]]:
    """(Markdown, links) of Confluence storage or view markup."""
    parser = _Storage(link_target)
    parser.feed(markup or "")
    parser.close()
    lines = [" ".join(line.split()) if not line.startswith("    ") else line.rstrip()
             for line in "".join(parser.out).splitlines()]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.strip(), parser.links


def adf_text(node) -> str:
    """Plain text with paragraph breaks and [label](href) links from Atlassian Document Format (or a string)."""
    if isinstance(node, str):
        return node
    if not isinstance(node, dict):
        return ""
    kind = node.get("type")
    if kind == "text":
        text = str(node.get("text") or "")
        for mark in node.get("marks") or []:
            href = (mark.get("attrs") or {}).get("href") if isinstance(mark, dict) else None
            if isinstance(href, str) and href:
                text = f"[{text}]({href})"
        return text
    if kind == "hardBreak":
        return "\n"
    if kind == "mention":
        return "@" + str((node.get("attrs") or {}).get("text") or "").lstrip("@")
    inner = "".join(adf_text(child) for child in node.get("content") or [])
    if kind == "listItem":
        return "- " + inner.strip() + "\n"
    if kind in ("paragraph", "heading", "bulletList", "orderedList", "codeBlock", "blockquote", "table",
                "tableRow"):
        return inner.strip() + "\n\n"
    return inner


def html_markdown(html: str, site: str = "") -> str:
    """Readable Markdown of untrusted rendered HTML: nh3 drops scripts, styles and unsafe addresses first; links
    stay `[label](url)` when absolute http(s) (a site-relative `/path` is joined to `site`), others keep their
    label as text."""

    def target(kind: str, value: str) -> tuple[str, str | None]:
        if value.startswith("/") and not value.startswith("//") and site:
            value = site.rstrip("/") + value
        return (value, None) if kind == "url" and urlsplit(value).scheme in ("http", "https") else ("", None)

    cleaned = nh3.clean(html or "", url_schemes={"http", "https", "mailto"}, link_rel=None)
    return storage_markdown(cleaned, target)[0]


# [label|https://…] and [https://…]; not when already followed by "(" (a Markdown link's target).
_WIKI_LABELLED = re.compile(r"\[([^\[\]|\n]{1,500})\|((?:https?|mailto):[^\]\s|]{1,2000})\](?!\()")
_WIKI_BARE = re.compile(r"\[((?:https?):[^\]\s|]{1,2000})\](?!\()")


def wiki_links(text: str) -> str:
    """Jira wiki markup's links as Markdown links (the rest of the markup is readable as it is)."""
    return _WIKI_BARE.sub(r"\1", _WIKI_LABELLED.sub(r"[\1](\2)", text))
