"""The chat page. The answer is streamed into it by chat.js from the answers API; no inline script or style
(the page's Content-Security-Policy forbids both)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from chat.rendering import with_csp
from chat.selectors import conversation_access, conversations_for
from groundwork.selectors import AuthorityDenied, authority_for_user
from knowledge.access import tenant_has_corpus


@with_csp
@login_required
@ensure_csrf_cookie
def chat_page(request, tenant_slug: str, conversation_id: int | None = None):
    try:
        authority = authority_for_user(user=request.user, tenant_slug=tenant_slug)
    except AuthorityDenied as denied:
        raise Http404 from denied
    if conversation_id is not None and conversation_access(authority, conversation_id) is None:
        raise Http404
    return render(request, "chat/chat.html", {
        "tenant_slug": authority.tenant_slug,
        "conversations": conversations_for(authority)[:50],
        "conversation_id": conversation_id or "",
        "corpus_empty": not tenant_has_corpus(authority),
    })
