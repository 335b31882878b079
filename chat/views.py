"""Chat pages: the chat itself (the answer is streamed into it by chat.js from the answers API; no inline
script or style, the page's Content-Security-Policy forbids both) and two Manage pages for tenant admins:
access requests (grant / decline) and refused questions by frequency."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_POST

from chat.rendering import with_csp
from chat.selectors import (
    access_request_access,
    access_request_payload,
    access_requests_for,
    answers_marked_unhelpful,
    conversation_access,
    conversations_search,
    gap_events_by_frequency,
)
from chat.services import (
    AccessRequestRefused,
    ConversationInvalid,
    access_request_resolve,
    conversation_delete,
    conversation_rename,
)
from chat.suggestions import question_suggestions
from groundwork.authority import Authority
from groundwork.page_access import page_found, tenant_page
from knowledge.access import tenant_has_corpus


@with_csp
@tenant_page()
@ensure_csrf_cookie
def chat_page(request, authority: Authority, conversation_id: int | None = None):
    conversation = None
    if conversation_id is not None:
        conversation = page_found(conversation_access(authority, conversation_id))
    search = " ".join(request.GET.get("q", "").split())[:200]
    corpus_empty = not tenant_has_corpus(authority)
    return render(request, "chat/chat.html", {
        "tenant_slug": authority.tenant_slug,
        "conversations": conversations_search(authority, search)[:50],
        "search": search,
        "conversation": conversation,
        "conversation_id": conversation_id or "",
        "corpus_empty": corpus_empty,
        # Only on an empty Ask page: an open conversation has its own thread to go on from.
        "suggestions": [] if conversation is not None or corpus_empty else question_suggestions(authority),
    })


@with_csp
@tenant_page()
@require_POST
def conversation_rename_page(request, authority: Authority, conversation_id: int):
    conversation = page_found(conversation_access(authority, conversation_id))
    try:
        conversation_rename(authority, conversation=conversation, title=request.POST.get("title", ""))
    except ConversationInvalid as invalid:
        messages.error(request, str(invalid))
    else:
        messages.success(request, "Conversation renamed.")
    return redirect("pages:chat-conversation", tenant_slug=authority.tenant_slug, conversation_id=conversation.pk)


@with_csp
@tenant_page()
@require_POST
def conversation_delete_page(request, authority: Authority, conversation_id: int):
    conversation = page_found(conversation_access(authority, conversation_id))
    conversation_delete(authority, conversation=conversation)
    messages.success(request, f"Deleted the conversation “{conversation.title}”.")
    return redirect("pages:chat", tenant_slug=authority.tenant_slug)


@with_csp
@tenant_page("admin")
def access_requests_page(request, authority: Authority):
    rows = [access_request_payload(authority, r) for r in access_requests_for(authority)[:200]]
    return render(request, "chat/access_requests.html", {
        "tenant_slug": authority.tenant_slug,
        "open_requests": [r for r in rows if r["status"] == "open"],
        "resolved_requests": [r for r in rows if r["status"] != "open"],
    })


@with_csp
@tenant_page("admin")
@require_POST
def access_request_resolve_page(request, authority: Authority, access_request_id: int):
    access_request = page_found(access_request_access(authority, access_request_id))
    decision = request.POST.get("decision")
    if decision not in ("grant", "decline"):
        messages.error(request, "Choose grant or decline.")
        return redirect("pages:access-requests", tenant_slug=authority.tenant_slug)
    try:
        granted = access_request_resolve(authority, access_request=access_request, grant=decision == "grant")
    except AccessRequestRefused as refused:
        messages.error(request, refused.message)
        return redirect("pages:access-requests", tenant_slug=authority.tenant_slug)
    if decision == "grant":
        messages.success(request, f"Access granted to {len(granted)} record(s).")
        left = len(set(access_request.document_ids) - set(granted))
        if left:
            messages.warning(request, f"{left} record(s) you cannot read (or that are no longer there) were left "
                                      "unchanged.")
    else:
        messages.success(request, "Request declined.")
    return redirect("pages:access-requests", tenant_slug=authority.tenant_slug)


@with_csp
@tenant_page("admin")
def gaps_page(request, authority: Authority):
    return render(request, "chat/gaps.html", {
        "tenant_slug": authority.tenant_slug,
        "gaps": gap_events_by_frequency(authority)[:200],
        "unhelpful": answers_marked_unhelpful(authority)[:200],
    })
