"""The Documents page and the in-app record viewer.

Any member of the tenant may use both: what they list and show is decided by the access path
(knowledge.access), like the API. Who may open them at all is groundwork.page_access's rule; a document that
is missing, another tenant's or not readable -> 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST

from groundwork.authority import Authority
from groundwork.page_access import page_found, tenant_page

from . import selectors
from .chunking import heading_outline
from .links import document_viewer_url
from .models import Chunk, Source, Visibility
from .rendering import chars_parse, document_blocks, external_url
from .services import document_grant_add, document_reader_remove
from .uploads import sources_uploadable

PAGE_SIZE = 25
# The page shows documents, which are untrusted: nothing may load or run from anywhere but our own origin.
CONTENT_SECURITY_POLICY = ("default-src 'self'; img-src 'self'; script-src 'self'; style-src 'self'; "
                           "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'; "
                           "connect-src 'self'")
_METADATA_SHOWN = 12


def _with_csp(response: HttpResponse) -> HttpResponse:
    response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    return response


def _day(raw: str, label: str, errors: list[str]) -> date | None:
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        errors.append(f"“{label}” must be a date written YYYY-MM-DD (got “{raw[:40]}”).")
        return None


def filters_parse(params) -> tuple[selectors.DocumentFilters, list[str]]:
    """The page's query string -> filters, plus one message per bad value (that filter is then ignored)."""
    errors: list[str] = []
    # Postgres text cannot hold NUL; a query string can.
    text = (params.get("q") or "").replace("\x00", "").strip()[:200] or None
    source_id = None
    raw_source = (params.get("source") or "").strip()
    if raw_source:
        if raw_source.isdigit() and len(raw_source) < 19:
            source_id = int(raw_source)
        else:
            errors.append(f"“Source” must be one of the listed sources (got “{raw_source[:40]}”).")
    kind = (params.get("kind") or "").strip() or None
    if kind is not None and kind not in Source.Kind.values:
        errors.append(f"“Kind” must be one of: {', '.join(Source.Kind.values)} (got “{kind[:40]}”).")
        kind = None
    fmt = (params.get("format") or "").strip() or None
    if fmt is not None and not (len(fmt) <= 20 and fmt.replace("_", "").replace("-", "").isalnum()):
        errors.append(f"“File type” is not a known format (got “{fmt[:40]}”).")
        fmt = None
    day_from = _day((params.get("updated_from") or "").strip(), "Updated from", errors)
    day_to = _day((params.get("updated_to") or "").strip(), "Updated to", errors)
    if day_from and day_to and day_from > day_to:
        errors.append("“Updated from” is after “Updated to”.")
        day_from = day_to = None
    filters = selectors.DocumentFilters(
        text=text, source_id=source_id, kind=kind, format=fmt,
        updated_from=datetime.combine(day_from, time.min, tzinfo=UTC) if day_from else None,
        # The last representable day has no next day: it bounds nothing.
        updated_before=(datetime.combine(day_to + timedelta(days=1), time.min, tzinfo=UTC)
                        if day_to and day_to < date.max else None),
    )
    return filters, errors


def _upload_url(tenant_slug: str) -> str | None:
    try:
        return reverse("pages:upload", kwargs={"tenant_slug": tenant_slug})
    except NoReverseMatch:
        return None


@tenant_page()
def documents_page(request: HttpRequest, authority: Authority) -> HttpResponse:
    tenant_slug = authority.tenant_slug
    filters, errors = filters_parse(request.GET)
    # With search text the page ranks by relevance (the hybrid search) and says why each document matched;
    # without, it lists the readable documents newest first.
    search = selectors.documents_search(authority, filters) if filters.text else None
    listing = search.matches if search is not None else selectors.documents_browse(authority, filters)
    page = Paginator(listing, PAGE_SIZE).get_page(request.GET.get("page"))
    anything = bool(page.object_list) or selectors.documents_exist(authority)
    keep = request.GET.copy()
    keep.pop("page", None)
    rows = []
    for item in page.object_list:
        doc = item.document if search is not None else item
        rows.append({"document": doc, "url": document_viewer_url(tenant_slug, doc.pk),
                     "corpus": "platform" if doc.tenant_id == authority.platform_tenant_id else "tenant",
                     "restricted": doc.visibility != Visibility.WORKSPACE,
                     "match": item if search is not None else None})
    return _with_csp(render(request, "knowledge/documents.html", {
        "search": search,
        "tenant_slug": tenant_slug, "page": page, "rows": rows, "params": request.GET, "errors": errors,
        "filter_query": keep.urlencode(), "filtered": filters.active or bool(errors), "anything": anything,
        "sources": selectors.sources_list(authority).select_related("tenant"),
        "kinds": Source.Kind.choices, "formats": selectors.document_formats(authority),
        # Anyone who may upload somewhere sees the way in: admins, and members where a source takes their uploads.
        "upload_url": (_upload_url(tenant_slug) if authority.is_admin or sources_uploadable(authority).exists()
                       else None),
        "platform_tenant_id": authority.platform_tenant_id,
    }, status=400 if errors else 200))


@dataclass(frozen=True)
class TocEntry:
    label: str
    start: int
    end: int
    url: str


def toc_entries(chunks: list[Chunk]) -> list[TocEntry]:
    """Consecutive chunks with the same location ("page 3") become one entry spanning them; documents without
    locations get their headings instead."""
    by_location = any(chunk.location for chunk in chunks)
    entries: list[TocEntry] = []
    previous = None
    for chunk in chunks:
        label = chunk.location if by_location else heading_outline(chunk.heading_path)  # the title alone: none
        if not label:
            previous = None
            continue
        if previous == label:
            last = entries[-1]
            end = max(last.end, chunk.end)
            entries[-1] = TocEntry(label=label, start=last.start, end=end, url=f"#chars={last.start}-{end}")
        else:
            entries.append(TocEntry(label=label, start=chunk.start, end=chunk.end,
                                    url=f"#chars={chunk.start}-{chunk.end}"))
        previous = label
    return entries


def _metadata_items(metadata: dict) -> list[tuple[str, str]]:
    items = []
    for key, value in sorted((metadata or {}).items()):
        if isinstance(value, bool | int | float | str) and str(value).strip():
            items.append((str(key)[:80], str(value)[:200]))
        if len(items) >= _METADATA_SHOWN:
            break
    return items


@tenant_page()
def document_page(request: HttpRequest, authority: Authority, document_id: int) -> HttpResponse:
    tenant_slug = authority.tenant_slug
    view = page_found(selectors.document_view(authority, document_id))
    document = view.document
    highlight = chars_parse(request.GET.get("chars"), len(document.text))
    sharing = selectors.document_sharing(authority, document)
    find = (request.GET.get("find") or "").strip()[:100] if sharing is not None else ""
    return _with_csp(render(request, "knowledge/document.html", {
        "sharing": sharing, "find": find,
        "principal_choices": selectors.principals_search(authority, find) if find else [],
        "tenant_slug": tenant_slug, "document": document, "highlight": highlight,
        "blocks": document_blocks(document.text, document.format, highlight=highlight),
        "is_markdown": document.format == "markdown",
        "toc": toc_entries(view.chunks), "metadata_items": _metadata_items(document.metadata),
        "corpus": "platform" if document.tenant_id == authority.platform_tenant_id else "tenant",
        "restricted": document.visibility != Visibility.WORKSPACE,
        "acl": view.acl, "is_admin": authority.is_admin, "record_url": external_url(document.record_url),
    }))


def _sharing_redirect(authority: Authority, document_id: int) -> HttpResponse:
    url = reverse("pages:document", kwargs={"tenant_slug": authority.tenant_slug, "document_id": document_id})
    return redirect(f"{url}#document-sharing")


@tenant_page("admin")
@require_POST
def document_reader_add_page(request: HttpRequest, authority: Authority, document_id: int) -> HttpResponse:
    """The sharing panel's "Add reader": a grant, which a connector's permission sync keeps."""
    document = page_found(selectors.document_writable(authority, document_id))
    try:
        grant, created = document_grant_add(authority, document=document, principal=request.POST.get("principal", ""),
                                            reason="added on the sharing panel")
    except ValidationError as exc:
        messages.error(request, "Not shared: " + "; ".join(exc.messages))
    else:
        label = grant.principal.label
        messages.success(request, f"{label} can read this document now." if created
                         else f"{label} could read this document already.")
    return _sharing_redirect(authority, document.pk)


@tenant_page("admin")
@require_POST
def document_reader_remove_page(request: HttpRequest, authority: Authority, document_id: int) -> HttpResponse:
    document = page_found(selectors.document_writable(authority, document_id))
    raw = (request.POST.get("principal_id") or "").strip()
    if not raw.isdigit() or len(raw) > 18:
        messages.error(request, "Choose a reader to remove.")
        return _sharing_redirect(authority, document.pk)
    try:
        document_reader_remove(authority, document=document, principal_id=int(raw))
    except ValidationError as exc:
        messages.error(request, "Not removed: " + "; ".join(exc.messages))
    else:
        messages.success(request, "Reader removed.")
    return _sharing_redirect(authority, document.pk)
