"""Reads of the knowledge app. Every tenant-scoped read starts from knowledge.access."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime

from django.contrib.postgres.search import SearchQuery
from django.core.exceptions import ValidationError
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet

from groundwork.authority import Authority
from groundwork.models import GroupMembership, Membership, Principal
from groundwork.services import principal_parse

from .access import access_q, readable_chunks, readable_documents
from .hooks import access_upstream
from .models import Chunk, Document, DocumentAcl, DocumentGrant, DocumentLink, Source, SourceAcl, Visibility


def sources_list(authority: Authority) -> QuerySet[Source]:
    """The caller's own sources plus the platform corpus's (read-only to tenants)."""
    return Source.objects.filter(tenant_id__in=authority.corpus_tenant_ids).order_by("name")


def source_get(authority: Authority, source_id: int) -> Source | None:
    return sources_list(authority).filter(pk=source_id).first()


def source_writable(authority: Authority, source_id: int) -> Source | None:
    """A source the caller may write into: its own tenant's, and only for admins."""
    if not authority.is_admin:
        return None
    return Source.objects.filter(pk=source_id, tenant_id=authority.tenant_id).first()


def documents_list(
    authority: Authority, *, source_id: int | None = None, query: str | None = None,
    updated_after: datetime | None = None, updated_before: datetime | None = None,
) -> QuerySet[Document]:
    qs = readable_documents(authority).select_related("source", "author")
    if source_id is not None:
        qs = qs.filter(source_id=source_id)
    if query:
        qs = qs.filter(Q(title__icontains=query) | Q(external_id__icontains=query))
    if updated_after is not None:
        qs = qs.filter(updated_at__gte=updated_after)
    if updated_before is not None:
        qs = qs.filter(updated_at__lt=updated_before)
    qs = qs.annotate(
        chunk_count=Count("chunks", distinct=True),
        embedded_count=Count("chunks", filter=Q(chunks__embedding_space__isnull=False), distinct=True),
    )
    if authority.is_admin:
        qs = qs.prefetch_related(Prefetch("acl_principals", queryset=Principal.objects.order_by("kind", "key")))
    return qs.defer("text").order_by("-updated_at", "id")


def document_get(authority: Authority, document_id: int) -> Document | None:
    return documents_list(authority).filter(pk=document_id).first()


def document_text_get(authority: Authority, document_id: int) -> str | None:
    return readable_documents(authority).filter(pk=document_id).values_list("text", flat=True).first()


def document_writable(authority: Authority, document_id: int) -> Document | None:
    """Admins change documents of their own tenant that they can read; missing, foreign and unreadable
    all look the same."""
    if not authority.is_admin:
        return None
    return readable_documents(authority).filter(pk=document_id, tenant_id=authority.tenant_id).first()


def document_chunks(authority: Authority, document_id: int) -> QuerySet[Chunk] | None:
    if not readable_documents(authority).filter(pk=document_id).exists():
        return None
    return readable_chunks(authority).filter(document_id=document_id).order_by("ordinal").defer("embedding")


# --- the Documents page and the record viewer ---------------------------------------------------------------


@dataclass(frozen=True)
class DocumentFilters:
    text: str | None = None  # title, or the chunks' full text (websearch syntax)
    source_id: int | None = None
    kind: str | None = None  # the source's kind
    format: str | None = None
    updated_from: datetime | None = None  # inclusive
    updated_before: datetime | None = None  # exclusive

    @property
    def active(self) -> bool:
        return any(value is not None for value in vars(self).values())


def documents_browse(authority: Authority, filters: DocumentFilters | None = None) -> QuerySet[Document]:
    """Readable documents for the Documents page, newest first. The full-text match runs over readable
    chunks only, so a restricted chunk never decides whether a title is listed."""
    f = filters or DocumentFilters()
    qs = readable_documents(authority).select_related("source")
    if f.source_id is not None:
        qs = qs.filter(source_id=f.source_id)
    if f.kind:
        qs = qs.filter(source__kind=f.kind)
    if f.format:
        qs = qs.filter(format=f.format)
    if f.updated_from is not None:
        qs = qs.filter(updated_at__gte=f.updated_from)
    if f.updated_before is not None:
        qs = qs.filter(updated_at__lt=f.updated_before)
    if f.text:
        matching_chunks = readable_chunks(authority).filter(
            document_id=OuterRef("pk"), search=SearchQuery(f.text, search_type="websearch", config="english"))
        qs = qs.filter(Q(title__icontains=f.text) | Exists(matching_chunks))
    return qs.defer("text", "metadata").order_by("-updated_at", "-id")


def document_formats(authority: Authority) -> list[str]:
    """The formats present among readable documents (for the format filter)."""
    return sorted(readable_documents(authority).order_by().values_list("format", flat=True).distinct())


def documents_exist(authority: Authority) -> bool:
    return readable_documents(authority).exists()


@dataclass(frozen=True)
class DocumentView:
    document: Document
    chunks: list[Chunk]
    acl: list[Principal] | None  # the ACL principals for admins of the document's tenant; else None


def document_view(authority: Authority, document_id: int) -> DocumentView | None:
    """One readable document with its text, chunk spans and — for tenant admins — its ACL; None when
    missing or not readable (the same answer)."""
    document = (readable_documents(authority).select_related("source", "author", "author__user")
                .filter(pk=document_id).first())
    if document is None:
        return None
    chunks = list(readable_chunks(authority).filter(document_id=document.pk).order_by("ordinal")
                  .only("id", "ordinal", "start", "end", "location", "heading_path"))
    acl = None
    # Admins see who may read their own tenant's records; the platform corpus's ACL is not theirs to see.
    if authority.is_admin and document.tenant_id == authority.tenant_id:
        acl = list(document.acl_principals.select_related("user").order_by("kind", "key"))
    return DocumentView(document=document, chunks=chunks, acl=acl)


def document_links_readable(authority: Authority, document_ids: list[int], *, limit: int = 100
                            ) -> QuerySet[DocumentLink]:
    """Resolved record links out of or into these documents whose both ends the caller may read."""
    both = Q(access_q(authority, prefix="source__")) & Q(access_q(authority, prefix="target__"))
    return (DocumentLink.objects.filter(Q(source_id__in=document_ids) | Q(target_id__in=document_ids))
            .filter(target__isnull=False).filter(both).select_related("source", "target")
            .order_by("source_id", "target_id", "id")[:limit])


# --- The sharing panel: who reads a document, and why ------------------------------------------------------------

PRINCIPAL_KIND_LABELS = {
    Principal.Kind.USER: "Person",
    Principal.Kind.GROUP: "Group",
    Principal.Kind.PROVIDER_GROUP: "Group (from a provider)",
    Principal.Kind.EMAIL: "E-mail address",
    Principal.Kind.SERVICE: "Service",
}
_GROUP_KINDS = (Principal.Kind.GROUP, Principal.Kind.PROVIDER_GROUP)
_MEMBERS_SHOWN = 8


@dataclass(frozen=True)
class Reader:
    principal: Principal
    kind_label: str
    why: str  # "source default", "connector", "set on this document", "grant"
    detail: str  # the why, spelled out
    removable: bool
    members: list[str]  # a group's members as people read them (the first few)
    member_count: int


@dataclass(frozen=True)
class Sharing:
    workspace: bool  # everyone in the workspace reads it, whatever the readers below
    readers: list[Reader]
    upstream: str | None  # where a connector's access comes from, when one manages the source


def _members(group_ids: list[int]) -> dict[int, list[Principal]]:
    members: dict[int, list[Principal]] = {}
    links = (GroupMembership.objects.filter(group_id__in=group_ids).select_related("member__user")
             .order_by("group_id", "member__kind", "member__key"))
    for link in links:
        members.setdefault(link.group_id, []).append(link.member)
    return members


def document_sharing(authority: Authority, document: Document) -> Sharing | None:
    """Who reads `document` and why, for its tenant's admins (None for anyone else: the platform corpus's
    access and other tenants' are not theirs to see). `document` comes from `document_view` (readable)."""
    if not authority.is_admin or document.tenant_id != authority.tenant_id:
        return None
    upstream = access_upstream(document.source_id)
    own = list(DocumentAcl.objects.filter(document_id=document.pk).select_related("principal__user")
               .order_by("principal__kind", "principal__key"))
    grants = list(DocumentGrant.objects.filter(document_id=document.pk)
                  .select_related("principal__user", "granted_by").order_by("created_at", "pk"))
    groups = _members([entry.principal_id for entry in [*own, *grants] if entry.principal.kind in _GROUP_KINDS])
    readers: list[Reader] = []
    for entry in own:
        if document.acl_inherited:
            why, detail = "source default", f"the default access of the source {document.source.name}"
        elif upstream:
            why, detail = "connector", f"{upstream}, mirrored by the connector's permission sync"
        else:
            why, detail = "set on this document", "the document's own access list"
        readers.append(_reader(entry.principal, why, detail, removable=why == "set on this document",
                               groups=groups))
    for grant in grants:
        by = grant.granted_by
        who = (by.get_full_name() or by.get_username()) if by is not None else "an admin"
        detail = f"granted by {who} on {grant.created_at:%Y-%m-%d}" + (f" ({grant.reason})" if grant.reason else "")
        readers.append(_reader(grant.principal, "grant", detail, removable=True, groups=groups))
    return Sharing(workspace=document.visibility == Visibility.WORKSPACE, readers=readers, upstream=upstream)


def _reader(principal: Principal, why: str, detail: str, *, removable: bool,
            groups: dict[int, list[Principal]]) -> Reader:
    members = groups.get(principal.pk, [])
    return Reader(principal=principal, kind_label=PRINCIPAL_KIND_LABELS.get(principal.kind, principal.kind),
                  why=why, detail=detail, removable=removable,
                  members=[m.label for m in members[:_MEMBERS_SHOWN]], member_count=len(members))


@dataclass(frozen=True)
class PrincipalChoice:
    spec: str  # what a grant takes: user:<id>, group:<name>, email:<address>, provider:group
    kind: str
    kind_label: str
    label: str


def principals_search(authority: Authority, query: str, *, limit: int = 15) -> list[PrincipalChoice]:
    """Readers an admin may add, for the sharing panel's search: the tenant's people (its members), its groups,
    and the e-mail principals that already read something or belong to a group — an address that only ever
    appeared as an author or a mail header is no reader. A query that is itself an e-mail address is offered
    as one, so an admin can share with someone by address. Admins of the tenant only; others get nothing."""
    if not authority.is_admin:
        return []
    text = (query or "").replace("\x00", "").strip()[:100]
    if not text:
        return []
    members = Membership.objects.filter(tenant_id=authority.tenant_id, user_id=OuterRef("user_id"),
                                        user__is_active=True)
    reading = (Exists(DocumentAcl.objects.filter(principal_id=OuterRef("pk")))
               | Exists(DocumentGrant.objects.filter(principal_id=OuterRef("pk")))
               | Exists(SourceAcl.objects.filter(principal_id=OuterRef("pk")))
               | Exists(GroupMembership.objects.filter(member_id=OuterRef("pk"))))
    matches = (Q(key__icontains=text) | Q(display_name__icontains=text) | Q(user__username__icontains=text)
               | Q(user__email__icontains=text) | Q(user__first_name__icontains=text)
               | Q(user__last_name__icontains=text))
    qs = (Principal.objects.filter(tenant_id=authority.tenant_id).filter(matches)
          .filter((Q(kind=Principal.Kind.USER) & Exists(members)) | Q(kind__in=_GROUP_KINDS)
                  | (Q(kind=Principal.Kind.EMAIL) & reading))
          .select_related("user").order_by("kind", "key")[:limit])
    choices = [PrincipalChoice(spec=_spec(p), kind=p.kind, kind_label=PRINCIPAL_KIND_LABELS[p.kind], label=p.label)
               for p in qs]
    # People who have not signed in yet have no principal: find them through their membership.
    found_users = {c.spec for c in choices if c.kind == Principal.Kind.USER}
    if len(choices) < limit:
        people = (Membership.objects.filter(tenant_id=authority.tenant_id, user__is_active=True)
                  .filter(Q(user__username__icontains=text) | Q(user__email__icontains=text)
                          | Q(user__first_name__icontains=text) | Q(user__last_name__icontains=text))
                  .select_related("user").order_by("user__username")[:limit])
        for membership in people:
            user = membership.user
            spec = f"user:{user.pk}"
            if spec in found_users or len(choices) >= limit:
                continue
            name = user.get_full_name() or user.get_username()
            choices.append(PrincipalChoice(spec=spec, kind=Principal.Kind.USER, kind_label="Person",
                                           label=f"{name} <{user.email}>" if user.email else name))
    if "@" in text and not any(c.kind == Principal.Kind.EMAIL and c.label == text.lower() for c in choices):
        try:
            kind, key = principal_parse(text if text.lower().startswith("email:") else f"email:{text}")
        except ValidationError:
            kind = None
        if kind == Principal.Kind.EMAIL:
            choices.append(PrincipalChoice(spec=f"email:{key}", kind=kind, kind_label="E-mail address",
                                           label=key))
    order = {Principal.Kind.USER: 0, Principal.Kind.GROUP: 1, Principal.Kind.PROVIDER_GROUP: 1,
             Principal.Kind.EMAIL: 2}
    return sorted(choices, key=lambda c: (order.get(c.kind, 3), c.label.lower()))


def _spec(principal: Principal) -> str:
    if principal.kind == Principal.Kind.PROVIDER_GROUP:
        return principal.key
    return f"{principal.kind}:{principal.key}"


# --- The Documents page's search: relevance, a snippet with the matched words, and why it matched ----------------

SEARCH_DEPTH = 100  # documents ranked by relevance; the page pages through them
_OPERATORS = re.compile(r'"|(?:^|\s)-\w|\sor\s', re.IGNORECASE)


@dataclass(frozen=True)
class DocumentMatch:
    document: Document
    snippet: str  # safe HTML: the passage escaped, the matched words in <mark>
    words: bool  # the full-text channel matched it
    meaning: bool  # the vector channel found it close in meaning
    title_only: bool  # listed because its title holds the text, not ranked by the search


@dataclass(frozen=True)
class DocumentSearch:
    matches: list[DocumentMatch]
    semantic: bool  # whether the vector channel took part (else full text alone)
    unavailable: bool  # the search could not run; `matches` are the plain title and text matches, newest first


def _snippet_html(text: str) -> str:
    from django.utils.html import escape
    from django.utils.safestring import mark_safe

    from .sql import SNIPPET_START, SNIPPET_STOP

    pieces, marked = [], False
    for part in re.split(f"([{SNIPPET_START}{SNIPPET_STOP}])", text):
        if part in (SNIPPET_START, SNIPPET_STOP):
            marked = part == SNIPPET_START
            continue
        if part:
            pieces.append(f"<mark>{escape(part)}</mark>" if marked else escape(part))
    return mark_safe("".join(pieces))  # noqa: S308 - every piece of text is escaped above


def documents_search(authority: Authority, filters: DocumentFilters) -> DocumentSearch:
    """The Documents page's search for `filters.text`: readable documents ranked by the hybrid search (lexical +
    vector + registered channels, access-filtered in SQL) — the best chunk of each — with that chunk's passage
    as a snippet, narrowed by the page's other filters. Documents whose title holds the text but that the search
    did not rank follow, newest first. When retrieval is unavailable, the page's plain matching stands in."""
    from .access import chunk_access_params, chunk_access_sql
    from .retrieval import RetrievalUnavailable, SearchFilters, hybrid_search
    from .retrieval.lexical import or_query, query_lexemes
    from .sql import chunk_snippets

    text = filters.text or ""
    plain = replace(filters, text=None)
    source_ids: set[int] | None = {filters.source_id} if filters.source_id is not None else None
    if filters.kind:
        of_kind = set(sources_list(authority).filter(kind=filters.kind).values_list("pk", flat=True))
        source_ids = of_kind if source_ids is None else source_ids & of_kind
    if source_ids is not None and not source_ids:
        return DocumentSearch(matches=[], semantic=False, unavailable=False)
    search_filters = SearchFilters(source_ids=tuple(sorted(source_ids or ())), updated_after=filters.updated_from,
                                   updated_before=filters.updated_before)
    try:
        result = hybrid_search(authority, text, k=SEARCH_DEPTH, filters=search_filters, per_document_cap=1)
    except RetrievalUnavailable:
        listed = documents_browse(authority, filters)[:SEARCH_DEPTH]
        return DocumentSearch(matches=[DocumentMatch(document=d, snippet="", words=False, meaning=False,
                                                     title_only=True) for d in listed],
                              semantic=False, unavailable=True)
    hits = {hit.document_id: hit for hit in result.hits}
    # Search operators (a quoted phrase, -word, or) are the page's contract, which the search's OR of words does
    # not keep: with them, only documents that match the query as written (websearch syntax, or the title) stay.
    constraint = filters if _OPERATORS.search(text) else plain
    documents = {d.pk: d for d in documents_browse(authority, constraint).filter(pk__in=list(hits))}
    lexemes = query_lexemes(text)
    snippets = chunk_snippets([h.chunk_id for h in hits.values()], or_query=or_query(lexemes) if lexemes else "",
                              access=chunk_access_sql("c"), access_params=chunk_access_params(authority))
    matches = []
    for document_id, hit in hits.items():
        document = documents.get(document_id)
        if document is None:  # left out by a filter the search has no clause for (the file type)
            continue
        snippet = snippets.get(hit.chunk_id) or hit.text[:240]
        matches.append(DocumentMatch(document=document, snippet=_snippet_html(snippet),
                                     words=hit.lexical_rank is not None, meaning=hit.vector_rank is not None,
                                     title_only=False))
    room = SEARCH_DEPTH - len(matches)
    if room > 0:
        titled = documents_browse(authority, plain).filter(title__icontains=text).exclude(pk__in=list(hits))
        matches += [DocumentMatch(document=d, snippet="", words=True, meaning=False, title_only=True)
                    for d in titled[:room]]
    return DocumentSearch(matches=matches, semantic=result.vector == "ok", unavailable=False)
