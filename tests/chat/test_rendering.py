from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.http import HttpResponse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chat.rendering import ALLOWED_TAGS, content_security_policy, render_answer_html, with_csp
from tests.chat.factories import SECURITY_DIR, attack_lines, evidence

LABEL_MAP = {"S1": evidence(), "S2": evidence()}
FORBIDDEN_MARKUP = re.compile(r"<\s*/?\s*(script|img|iframe|object|embed|svg|style|link|meta|form|math|base)\b", re.I)
BAD_URL = re.compile(r"^\s*(javascript|data|vbscript|file):|^\s*//", re.I)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    handle_startendtag = handle_starttag


def assert_harmless(html: str) -> None:
    assert FORBIDDEN_MARKUP.search(html) is None, html
    # Text may mention "onerror=" (escaped, inert); inside a tag it would be live.
    assert not re.search(r"<[^>]*\son\w+\s*=", html, re.I), html
    assert not re.search(r"<[^>]*(javascript|vbscript|data):", html, re.I), html
    collector = _Collector()
    collector.feed(html)
    for tag, attrs in collector.tags:
        assert tag in ALLOWED_TAGS, html
        for name, value in attrs:
            assert not name.startswith("on"), html
            assert name not in {"src", "srcset", "style", "action", "formaction", "background", "poster"}, html
            if name == "href":
                assert value is not None and not BAD_URL.match(value), html
                assert re.match(r"(https?://|mailto:|#cite-S\d+$)", value, re.I), html
        if tag == "a":
            assert ("rel", "noopener noreferrer nofollow") in attrs, html
    # No markup string survives as live markup; any "<" in the output is a tag we allowed.
    for raw_tag in re.findall(r"<\s*([a-zA-Z][\w-]*)", html):
        assert raw_tag.lower() in ALLOWED_TAGS, html


def exfil_records() -> list[str]:
    lines = (SECURITY_DIR / "markdown_exfil.txt").read_text(encoding="utf-8").splitlines()
    records = [line for line in lines if line.strip()]
    # The reference-style pair only works as a unit (image line, blank, definition).
    records.append("\n".join(lines[1:4]))
    records.append("\n".join(lines))
    return records


@pytest.mark.parametrize("payload", attack_lines("xss_payloads.txt"))
def test_xss_payloads_render_harmless(payload):
    for text in (payload, f"Answer [S1]. {payload}", f"- item\n- {payload}\n\n> {payload}", f"`{payload}`"):
        assert_harmless(render_answer_html(text, LABEL_MAP))


@pytest.mark.parametrize("record", exfil_records())
def test_exfiltration_records_render_without_images_or_foreign_loads(record):
    html = render_answer_html(record, LABEL_MAP)
    assert_harmless(html)
    assert "<img" not in html and "src=" not in html


def test_fake_citation_link_does_not_point_anywhere():
    html = render_answer_html("[S1](https://attacker.example/fake-citation)", LABEL_MAP)
    assert 'href="https://attacker.example' not in html
    assert '<a class="cite" href="#cite-S1" data-label="S1"' in html


def test_reference_definition_cannot_hijack_a_label():
    html = render_answer_html("Costs rose [S1].\n\n[S1]: https://attacker.example/x", LABEL_MAP)
    assert 'href="https://attacker.example' not in html


def test_labels_become_internal_links_only_when_issued():
    html = render_answer_html("Frozen [S1][S2]. Funded [S1, S9]. Ghost [S7].", {"S1": evidence(), "S2": evidence()})
    assert html == (
        '<p>Frozen <a class="cite" href="#cite-S1" data-label="S1" rel="noopener noreferrer nofollow">[S1]</a>'
        '<a class="cite" href="#cite-S2" data-label="S2" rel="noopener noreferrer nofollow">[S2]</a>. '
        'Funded <a class="cite" href="#cite-S1" data-label="S1" rel="noopener noreferrer nofollow">[S1]</a>. '
        "Ghost.</p>"
    )


def test_allowed_markdown_survives():
    html = render_answer_html(
        "### Plan\n\n**bold** *em* `code`\n\n- a\n- b\n\n> quote\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        "[docs](https://docs.example/x) [mail](mailto:a@example.com)",
        {},
    )
    for fragment in ("<h3>Plan</h3>", "<strong>bold</strong>", "<em>em</em>", "<code>code</code>", "<li>a</li>",
                     "<blockquote>", "<table>", "<td>1</td>",
                     '<a href="https://docs.example/x" rel="noopener noreferrer nofollow">docs</a>',
                     '<a href="mailto:a@example.com" rel="noopener noreferrer nofollow">mail</a>'):  # fmt: skip
        assert fragment in html, html


def test_top_level_headings_are_demoted():
    assert render_answer_html("# Big\n\n## Less", {}) == "<h3>Big</h3>\n<h3>Less</h3>"


@pytest.mark.parametrize(
    "target",
    ["javascript:alert(1)", "//attacker.example/x", "/relative", "data:text/html,x", "vbscript:x", "ftp://h/x"],
)
def test_links_keep_only_http_https_and_mailto(target):
    html = render_answer_html(f"[x]({target})", {})
    assert "href" not in html


def test_raw_cite_class_cannot_be_abused():
    html = render_answer_html('<a class="evil cite" href="/x" data-label="javascript:1">y</a>', {})
    assert "class" not in html and "href" not in html and "data-label" not in html


markup = st.lists(
    st.one_of(
        st.sampled_from(
            ["<", ">", "</", "/>", "=", '"', "'", "`", "(", ")", "[", "]", "!", "\n", " ", "&", "#", ";", ":",
             "script", "img", "svg", "iframe", "a", "src", "href", "onerror", "onload", "javascript", "data",
             "vbscript", "http://x.example", "//x.example", "[S1]", "[S9]", "![x](", "](", "&#106;", "&colon;",
             "\x00", "\t", "JaVaScRiPt", "style", "<img src=x onerror=alert(1)>", "<!--", "-->", "```"]
        ),
        st.text(max_size=5),
    ),
    max_size=40,
).map("".join)  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markup)
def test_fuzzed_markdown_and_html_render_harmless(text):
    assert_harmless(render_answer_html(text, LABEL_MAP))


def test_content_security_policy_is_strict():
    policy = dict(part.split(" ", 1) for part in content_security_policy().split("; "))
    assert policy["default-src"] == "'self'"
    assert policy["img-src"] == "'self'"
    assert policy["script-src"] == "'self'"
    assert policy["object-src"] == "'none'"
    assert policy["base-uri"] == "'none'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["form-action"] == "'self'"
    assert policy["connect-src"] == "'self'"


def test_with_csp_sets_the_header_on_sync_and_async_views():
    import asyncio

    @with_csp
    def page(request):
        return HttpResponse("ok")

    @with_csp
    async def async_page(request):
        return HttpResponse("ok")

    assert page(None)["Content-Security-Policy"] == content_security_policy()
    assert asyncio.run(async_page(None))["Content-Security-Policy"] == content_security_policy()
    assert page.__name__ == "page"
