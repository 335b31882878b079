"""The tenant-scoped admin: one site, one mixin, used by every ModelAdmin of every app.

Who gets in (`TenantAdminSite.has_permission`, also checked by its login form):
- a platform operator (an active superuser) sees and edits everything;
- a *tenant admin* — an active user holding an `admin` Membership in at least one tenant — sees only the rows
  of the tenants they administer;
- nobody else, whatever their `is_staff` says.
`groundwork.services.membership_set` / `membership_remove` keep `is_staff` in step with holding an admin
membership so Django's own staff checks agree, but the rule itself is the membership: a stale `is_staff`
grants nothing.

Every ModelAdmin inherits `TenantScopedAdmin` (knowledge, findings and chat import it: layers point left).
It names the path from its model to the tenant (`tenant_path`, e.g. "tenant", "conversation__tenant") and
scopes, for tenant admins: the changelist and every object URL (change, delete, history all fetch through
`get_queryset`, so another tenant's row answers "does not exist"), permissions (by membership, not Django's
model permissions), foreign-key and many-to-many choices (`get_field_queryset`), list filters (only related
rows of the scoped changelist), autocomplete (it reads the remote admin's `get_queryset`) and actions (they
act on the scoped changelist). A model with no tenant is `platform_only` (hidden) or `tenant_admin_readonly`.
A ModelAdmin registered without the mixin (a third-party app's) is made platform-only by the site's
`register`, so a new admin fails closed.
"""

from __future__ import annotations

import functools
import logging

from django import forms
from django.contrib import admin
from django.contrib.admin.filters import RelatedFieldListFilter, RelatedOnlyFieldListFilter
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import get_fields_from_path, unquote
from django.contrib.admin.views.autocomplete import AutocompleteJsonView
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db.models import Model, QuerySet
from django.http import Http404, HttpResponseRedirect
from django.urls import path

from .authority import Authority
from .models import GroupMembership, Membership, Principal, Tenant
from .rls import DatabaseScope, request_scope_set, system_scope

logger = logging.getLogger(__name__)

_CACHE_ATTR = "_groundwork_administered_tenant_ids"
# A `tenant_path` for platform-wide rows every tenant admin may read (the findings ontology).
SHARED_ROWS = "*"


def administered_tenant_ids(user) -> frozenset[int]:
    """Ids of the tenants `user` holds an admin membership in (empty for anonymous or inactive users)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return frozenset()
    with system_scope("authentication:admin-memberships"):
        return frozenset(Membership.objects.filter(user=user, role=Membership.Role.ADMIN).values_list(
            "tenant_id", flat=True))


def is_platform_operator(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_superuser)


def request_tenant_ids(request) -> frozenset[int] | None:
    """The tenants this request's user administers; None means all of them (a platform operator)."""
    if is_platform_operator(request.user):
        return None
    cached = getattr(request, _CACHE_ATTR, None)
    if cached is None:
        cached = administered_tenant_ids(request.user)
        setattr(request, _CACHE_ATTR, cached)
    return cached


def admin_database_scope(request) -> DatabaseScope | None:
    """The row-level security scope of an admin page (groundwork/rls.py): the platform operator works across
    tenants in the named system scope `operator:<user id>`; a tenant admin reads the tenants they administer
    and the platform corpus, and writes only the tenants they administer; anyone else gets no rows."""
    from .selectors import platform_tenant

    user = request.user
    if is_platform_operator(user):
        # The audit line for every cross-tenant admin request.
        logger.info("operator %s in system scope: %s %s", user.pk, request.method, request.path)
        return DatabaseScope(system_reason=f"operator:{user.pk}")
    ids = request_tenant_ids(request) if user.is_authenticated else None
    if not ids:
        return None
    administered = tuple(sorted(ids))
    return DatabaseScope(read_tenant_ids=tuple(sorted({*administered, platform_tenant().pk})),
                         write_tenant_ids=administered)


def admin_authority(request, tenant: Tenant) -> Authority:
    """The authority an admin write into `tenant` runs under: the tenant admin's own (so services check it like
    an API call), or for a platform operator the named service job `admin` with the admin role."""
    from .selectors import AuthorityDenied, authority_for_service, authority_for_user

    if is_platform_operator(request.user):
        return authority_for_service(tenant=tenant, service_name="admin", role="admin")
    try:
        authority = authority_for_user(user=request.user, tenant_slug=tenant.slug)
    except AuthorityDenied as exc:
        raise PermissionDenied("you do not administer this tenant") from exc
    if not authority.is_admin:
        raise PermissionDenied("you do not administer this tenant")
    return authority


# Paths to the tenant for models that have no admin of their own but appear as FK / M2M choices. The apps
# above fill it from their admin modules (tenant_path_set): the platform layer names none of their models.
_unregistered_tenant_paths: dict[type[Model], str] = {}


def tenant_path_set(model: type[Model], tenant_path: str) -> None:
    """How rows of `model`, which has no ModelAdmin of its own, reach their tenant (see tenant_path_for)."""
    _unregistered_tenant_paths[model] = tenant_path


def tenant_path_for(model: type[Model], site: admin.AdminSite | None = None) -> str | None:
    """How rows of `model` reach their tenant ("" for Tenant itself); None when they belong to no tenant."""
    if model is Tenant:
        return "pk"
    site = site or admin.site
    model_admin = site._registry.get(model)
    if isinstance(model_admin, TenantScopedAdmin) and model_admin.tenant_path is not None:
        return model_admin.tenant_path
    if model is get_user_model():
        return "memberships__tenant"
    return _unregistered_tenant_paths.get(model)


def queryset_scope(queryset: QuerySet, tenant_ids: frozenset[int] | None, tenant_path: str | None) -> QuerySet:
    """Only the rows of `tenant_ids` (None: all rows). A subquery on the primary key keeps multi-valued paths
    (a user's memberships) from duplicating rows."""
    if tenant_ids is None or tenant_path == SHARED_ROWS:
        return queryset
    if tenant_path is None:
        return queryset.none()
    if tenant_path == "pk":
        return queryset.filter(pk__in=tenant_ids)
    if "__" not in tenant_path:
        return queryset.filter(**{f"{tenant_path}_id__in": tenant_ids})
    inner = queryset.model._default_manager.filter(**{f"{tenant_path}__in": tenant_ids}).values("pk")
    return queryset.filter(pk__in=inner)


def object_tenant_ids(obj: Model, tenant_path: str | None) -> set[int]:
    """The tenant ids an object belongs to along `tenant_path` (several for a user)."""
    if tenant_path is None:
        return set()
    if tenant_path == "pk":
        return {obj.pk}
    model = type(obj)
    return set(model._default_manager.filter(pk=obj.pk).values_list(f"{tenant_path}__id", flat=True)) - {None}


class TenantScopedAdmin:
    """Mix in before `admin.ModelAdmin` (or an inline). See the module docstring."""

    tenant_path: str | None = None
    platform_only: bool = False  # hidden from tenant admins entirely
    tenant_admin_readonly: bool = False  # tenant admins may look, not write

    # -- who may do what ------------------------------------------------------------------------------------

    def _tenant_ids(self, request) -> frozenset[int] | None:
        return request_tenant_ids(request)

    def _tenant_admin_allowed(self, request, obj=None) -> bool:
        ids = self._tenant_ids(request)
        if self.platform_only or self.tenant_path is None or not ids:
            return False
        if obj is None or self.tenant_path == SHARED_ROWS:
            return True
        tenants = object_tenant_ids(obj, self.tenant_path)
        return bool(tenants) and tenants <= ids

    def has_module_permission(self, request) -> bool:
        if is_platform_operator(request.user):
            return super().has_module_permission(request)
        return self._tenant_admin_allowed(request)

    def has_view_permission(self, request, obj=None) -> bool:
        if is_platform_operator(request.user):
            return super().has_view_permission(request, obj)
        return self._tenant_admin_allowed(request, obj)

    def has_add_permission(self, request, *args) -> bool:
        if is_platform_operator(request.user):
            return super().has_add_permission(request, *args)
        return not self.tenant_admin_readonly and self._tenant_admin_allowed(request)

    def has_change_permission(self, request, obj=None) -> bool:
        if is_platform_operator(request.user):
            return super().has_change_permission(request, obj)
        return not self.tenant_admin_readonly and self._tenant_admin_allowed(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        if is_platform_operator(request.user):
            return super().has_delete_permission(request, obj)
        return not self.tenant_admin_readonly and self._tenant_admin_allowed(request, obj)

    # -- what they see ---------------------------------------------------------------------------------------

    def get_queryset(self, request):
        return queryset_scope(super().get_queryset(request), self._tenant_ids(request), self.tenant_path)

    def get_changelist_instance(self, request):
        # Postgres text cannot hold NUL: a lookup with one failed the list's query (a 500). Refused as Django
        # refuses any lookup it cannot run: the list again without it (?e=1).
        if any("\x00" in key or "\x00" in value for key, values in request.GET.lists() for value in values):
            raise IncorrectLookupParameters("a NUL character in the query string")
        return super().get_changelist_instance(request)

    def get_field_queryset(self, db, db_field, request):
        """Foreign-key and many-to-many choices (and what a submitted id may be): administered tenants' rows."""
        queryset = super().get_field_queryset(db, db_field, request)
        ids = self._tenant_ids(request)
        related = db_field.remote_field.model
        if queryset is None:
            if ids is None and related is not Principal:
                return None
            queryset = related._default_manager.using(db).all()
        if related is Principal:
            queryset = queryset.select_related("user")
        return queryset_scope(queryset, ids, tenant_path_for(related, self.admin_site))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and db_field.remote_field.model is Principal:
            field.label_from_instance = principal_label
        return field

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if field is not None and db_field.remote_field.model is Principal:
            field.label_from_instance = principal_label
        return field

    def get_list_filter(self, request):
        """For tenant admins every related-field filter offers only the related rows of their changelist."""
        filters = list(super().get_list_filter(request))
        if is_platform_operator(request.user):
            return filters
        scoped = []
        for entry in filters:
            if isinstance(entry, str):
                try:
                    field = get_fields_from_path(self.model, entry)[-1]
                except FieldDoesNotExist:
                    scoped.append(entry)
                    continue
                scoped.append((entry, RelatedOnlyFieldListFilter) if field.is_relation else entry)
            elif (isinstance(entry, tuple) and isinstance(entry[1], type)
                  and issubclass(entry[1], RelatedFieldListFilter)):
                scoped.append((entry[0], RelatedOnlyFieldListFilter))
            else:
                scoped.append(entry)
        return scoped


class TenantScopedInline(TenantScopedAdmin):
    """For inlines: the parent object decides (the inline's rows are the parent's, fetched through it)."""

    def _tenant_admin_allowed(self, request, obj=None) -> bool:
        ids = self._tenant_ids(request)
        if self.platform_only or not ids:
            return False
        if obj is None:
            return True
        parent_admin = self.admin_site._registry.get(type(obj))
        path = parent_admin.tenant_path if isinstance(parent_admin, TenantScopedAdmin) else None
        tenants = object_tenant_ids(obj, path)
        return bool(tenants) and tenants <= ids

    def has_add_permission(self, request, obj) -> bool:  # inline signature: (request, obj)
        if is_platform_operator(request.user):
            return super(TenantScopedAdmin, self).has_add_permission(request, obj)
        return not self.tenant_admin_readonly and self._tenant_admin_allowed(request, obj)


def principal_label(principal: Principal) -> str:
    return principal.label


class TenantRecordAdmin(TenantScopedAdmin):
    """Rows the system writes for one tenant (gap events, conversations, usage and quality counts): reached
    through their own `tenant`, readable by the tenant's admins, and never edited by hand — every field but the
    id is shown read-only, for platform operators too."""

    tenant_path = "tenant"
    tenant_admin_readonly = True

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields if not field.auto_created]


class PlatformOnlyAdmin(TenantScopedAdmin):
    """Injected by the site into ModelAdmins registered without scoping: platform operators only."""

    platform_only = True


class LabelledAutocompleteJsonView(AutocompleteJsonView):
    """Autocomplete results read like the rest of the admin: principals by `Principal.label`."""

    def serialize_result(self, obj, to_field_name):
        result = super().serialize_result(obj, to_field_name)
        if isinstance(obj, Principal):
            result["text"] = obj.label
        return result

    def get_queryset(self):
        qs = super().get_queryset()
        # A group link's group field offers groups only: e-mail addresses, people and services cannot have members
        # (group_member_check refuses them on save), so offering them as "groups" only led to a refusal. Here
        # rather than limit_choices_to on the field: that is a model change, and a migration, for an admin widget.
        field = self.source_field
        if field.model is GroupMembership and field.name == "group":
            qs = qs.filter(kind__in=(Principal.Kind.GROUP, Principal.Kind.PROVIDER_GROUP))
        return qs


class TenantAdminAuthenticationForm(AdminAuthenticationForm):
    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "invalid_login": "Please enter the username and password of a platform operator or a tenant admin.",
    }

    def confirm_login_allowed(self, user) -> None:
        if not user.is_active or not (user.is_superuser or administered_tenant_ids(user)):
            raise forms.ValidationError(self.error_messages["invalid_login"], code="invalid_login",
                                        params={"username": self.username_field.verbose_name})


class TenantAdminSite(admin.AdminSite):
    site_header = "Groundwork administration"
    site_title = "Groundwork admin"
    login_form = TenantAdminAuthenticationForm

    def has_permission(self, request) -> bool:
        user = request.user
        if not user.is_active or not user.is_authenticated:
            return False
        return user.is_superuser or bool(request_tenant_ids(request))

    def register(self, model_or_iterable, admin_class=None, **options):
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, TenantScopedAdmin):
            admin_class = type(admin_class.__name__, (PlatformOnlyAdmin, admin_class), {})
        return super().register(model_or_iterable, admin_class, **options)

    def each_context(self, request):
        context = super().each_context(request)
        ids = request_tenant_ids(request) if request.user.is_authenticated else frozenset()
        context["admin_scope"] = (
            None if ids is None else list(Tenant.objects.filter(pk__in=ids).order_by("name").values_list("name",
                                                                                                        flat=True))
        )
        return context

    def admin_view(self, view, cacheable=False):
        inner = super().admin_view(view, cacheable)

        @functools.wraps(inner)
        def in_database_scope(request, *args, **kwargs):
            # Bound for the rest of the request, not a block: the admin's TemplateResponse renders (and
            # queries) after the view returns.
            request_scope_set(admin_database_scope(request))
            return inner(request, *args, **kwargs)

        return in_database_scope

    def autocomplete_view(self, request):
        return LabelledAutocompleteJsonView.as_view(admin_site=self)(request)

    def get_urls(self):
        urls = super().get_urls()
        # "View on site" (`/admin/r/<content type>/<id>/`): Django's view fetches any object of any model and
        # tells "doesn't exist" from "has no URL", which told a tenant admin which ids of the platform-wide
        # tables (users, tenants) exist. Ours answers through the model's own admin, in the admin's scope.
        return [path("r/<int:content_type_id>/<path:object_id>/", self.admin_view(self.object_on_site),
                     name="view_on_site") if getattr(url, "name", None) == "view_on_site" else url for url in urls]

    def object_on_site(self, request, content_type_id: int, object_id: str):
        """A redirect to the object's page when the request's user may view the object in this admin and it has
        one; the same 404 for every other case — missing, out of their scope, no admin, no page."""
        try:
            model = ContentType.objects.get_for_id(content_type_id).model_class()
        except ContentType.DoesNotExist:
            model = None
        model_admin = self._registry.get(model)
        obj = None
        if model_admin is not None and model_admin.has_view_or_change_permission(request):
            obj = model_admin.get_object(request, unquote(object_id))
        url = getattr(obj, "get_absolute_url", None)
        if obj is None or url is None or not model_admin.has_view_or_change_permission(request, obj):
            raise Http404("Not found.")
        return HttpResponseRedirect(url())


def verbose_names_set(model: type[Model], singular: str, plural: str) -> None:
    """Readable admin names without a model Meta change. A Meta change means a migration in an app other
    helpers are migrating in parallel; the wording is only the admin's concern. Migrations read
    `_meta.original_attrs`, which this leaves alone, so no migration is generated."""
    model._meta.verbose_name = singular
    model._meta.verbose_name_plural = plural
