"""What a tenant admin may read of a record's *content* in the admin.

The admin is scoped by tenant (admin_scoping): a tenant admin sees every record of the tenants they administer,
so that they can repair its access — its title, source, visibility, readers and dates — and delete it. Its
content (a document's text and chunks, the statements and quotes of claims drawn from it) they see only as the
access path lets their own authority in that tenant read it: the rule the API, the record viewer and the findings
pages apply (there the record answers 404). A platform operator works in the system scope and sees everything.

The condition comes from the app that owns the record (`knowledge.access.access_q`,
`findings.selectors.readable_evidence`); this module only evaluates it, in SQL, for every tenant the request's
user administers, as one boolean column of the admin's own queryset.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

from django.db.models import BooleanField, Exists, Expression, ExpressionWrapper, Q, Value

from .admin_scoping import admin_authority, admin_database_scope, is_platform_operator, request_tenant_ids
from .authority import Authority
from .models import Tenant
from .rls import request_scope_set

_CACHE_ATTR = "_groundwork_admin_authorities"

HIDDEN = "Hidden: you cannot read this record"


def admin_authorities(request) -> tuple[Authority, ...] | None:
    """The tenant admin's own authority in each tenant they administer; None for a platform operator."""
    if is_platform_operator(request.user):
        return None
    cached = getattr(request, _CACHE_ATTR, None)
    if cached is None:
        tenants = Tenant.objects.filter(pk__in=request_tenant_ids(request) or ()).order_by("pk")
        cached = tuple(admin_authority(request, tenant) for tenant in tenants)
        # Resolving an authority binds it as the request's database scope (authority_for_user): the page goes
        # on in the admin's own scope, which spans every tenant this user administers.
        request_scope_set(admin_database_scope(request))
        setattr(request, _CACHE_ATTR, cached)
    return cached


def readable_expression(request, condition: Callable[[Authority], Q | Exists]) -> Expression:
    """A boolean column: whether the request's user may read the row's content. `condition(authority)` is the
    owning app's access predicate for one authority; a row is readable when one administered tenant's
    authority reads it (each authority reads only its own tenant and the platform corpus)."""
    authorities = admin_authorities(request)
    if authorities is None:
        return Value(True, output_field=BooleanField())
    if not authorities:
        return Value(False, output_field=BooleanField())
    readable = functools.reduce(operator.or_, (Q(condition(authority)) for authority in authorities))
    return ExpressionWrapper(readable, output_field=BooleanField())


def content_readable(obj) -> bool:
    """Whether `obj`, fetched through a queryset annotated `_readable` (readable_expression), may show its
    content. Fails closed: an object fetched some other way shows none."""
    return bool(getattr(obj, "_readable", False))
