from rest_framework.permissions import BasePermission

from .authority import Authority


class HasAuthority(BasePermission):
    """Every API endpoint needs an authority; there is no anonymous tenant data."""

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, Authority)


class _RoleAtLeast(BasePermission):
    role = "member"
    message = "This needs a higher role in the tenant."

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, Authority) and request.auth.has_role(self.role)


class IsTenantAdmin(_RoleAtLeast):
    role = "admin"
    message = "Only a tenant admin may do this."


class IsAnalyst(_RoleAtLeast):
    role = "analyst"
    message = "Only an analyst or admin may do this."
