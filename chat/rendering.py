"""Answer text to safe HTML.

The answer is untrusted: the model may copy hostile Markdown or HTML out of a retrieved document. Markdown
is converted first and everything is then cleaned by nh3 against a short allow-list. No images of any kind
are allowed (a remote image is an exfiltration channel that fires without a click), links keep only
http, https and mailto targets, and [Sn] labels become internal citation links only when we issued them.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Callable, Collection, Mapping
from inspect import iscoroutinefunction
from typing import Any, TypeVar

import markdown

from chat.citations import GROUP_RE, labels_in_group, strip_invalid_labels
from chat.evidence import Evidence
from knowledge.rendering import SAFE_HREF, html_clean

ALLOWED_TAGS = frozenset(
    {
        "p", "br", "strong", "em", "code", "pre", "ul", "ol", "li", "blockquote",
        "h3", "h4", "h5", "h6", "a",
        "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {"a": {"href", "title", "class", "data-label"}}
_CITE_HREF = re.compile(r"#cite-S\d+\Z")
_LABEL = re.compile(r"S\d+\Z")


def _attribute_filter(tag: str, attribute: str, value: str) -> str | None:
    if tag != "a":
        return None
    if attribute == "href":
        # An allow-list on the final value: this also drops relative and protocol-relative ("//host")
        # targets, which the scheme list alone would let through.
        return value if SAFE_HREF.match(value) or _CITE_HREF.match(value) else None
    if attribute == "class":
        return "cite" if value == "cite" else None
    if attribute == "data-label":
        return value if _LABEL.match(value) else None
    return value


def citation_link(label: str) -> str:
    return f'<a class="cite" href="#cite-{label}" data-label="{label}">[{label}]</a>'


def render_answer_html(
    markdown_text: str, label_map: Mapping[str, Evidence], *, allowed_links: Collection[str] | None = None
) -> str:
    """Markdown answer -> sanitised HTML with [Sn] citation links for labels in `label_map`.

    With `allowed_links`, an outside link survives only when its exact URL is in it (answers pass the
    record URLs of their sources): a link copied out of a hostile document loses its target and stays text.
    """
    text, _ = strip_invalid_labels(markdown_text, label_map.keys())
    # Valid groups are swapped for inert alphanumeric tokens so Markdown cannot read them as links or
    # reference definitions ("[S1](https://evil)", "[S1]: https://evil"); they come back as our own links.
    token = "gwcite" + secrets.token_hex(8)
    groups: list[str] = []

    def park(match: re.Match[str]) -> str:
        groups.append(match.group(0))
        return f"{token}x{len(groups) - 1}x"

    text = GROUP_RE.sub(park, text)
    html = markdown.markdown(text, extensions=["tables", "fenced_code", "sane_lists"], output_format="html")

    def unpark(match: re.Match[str]) -> str:
        labels = labels_in_group(groups[int(match.group(1))])
        return "".join(citation_link(label) for label in labels if label in label_map)

    html = re.sub(rf"{token}x(\d+)x", unpark, html)
    # Top-level headings would outrank the page's own; the answer gets h3 and below.
    html = re.sub(r"<(/?)h[12]>", r"<\1h3>", html)
    html = sanitise_html(html)
    if allowed_links is None:
        return html
    allowed = frozenset(allowed_links)

    def only_allowed(tag: str, attribute: str, value: str) -> str | None:
        if tag == "a" and attribute == "href" and not _CITE_HREF.match(value) and value not in allowed:
            return None
        return value

    return html_clean(
        html, tags=ALLOWED_TAGS, attribute_filter=only_allowed, link_rel=None,
        attributes={tag: set(attrs) | ({"rel"} if tag == "a" else set()) for tag, attrs in ALLOWED_ATTRIBUTES.items()},
    )


FRAGMENT_TAGS = ALLOWED_TAGS - {"a"}


def render_fragment_html(text: str) -> str:
    """A record's fragment (untrusted Markdown) as safe HTML for the evidence panel. No links at all: the
    panel links to the record itself, and a link copied out of a hostile record must not become clickable
    (nor pose as one of our citation links). Headings are demoted like the answer's."""
    html = markdown.markdown(text or "", extensions=["tables", "fenced_code", "sane_lists"], output_format="html")
    html = re.sub(r"<(/?)h[12]>", r"<\1h3>", html)
    return html_clean(html, tags=FRAGMENT_TAGS, attributes={}, link_rel=None)


def sanitise_html(html: str) -> str:
    return html_clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, attribute_filter=_attribute_filter)


# One policy for every page: the platform layer's (groundwork.middleware applies it to HTML pages).
from groundwork.middleware import CSP_DIRECTIVES, content_security_policy  # noqa: E402,F401

ViewT = TypeVar("ViewT", bound=Callable[..., Any])


def with_csp(view: ViewT) -> ViewT:
    """Set the Content-Security-Policy header on the view's response (sync or async views)."""
    policy = content_security_policy()

    if iscoroutinefunction(view):

        @functools.wraps(view)
        async def async_wrapped(*args: Any, **kwargs: Any) -> Any:
            response = await view(*args, **kwargs)
            response["Content-Security-Policy"] = policy
            return response

        return async_wrapped  # type: ignore[return-value]

    @functools.wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        response = view(*args, **kwargs)
        response["Content-Security-Policy"] = policy
        return response

    return wrapped  # type: ignore[return-value]
