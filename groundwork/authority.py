"""The caller's authority: one immutable value per request, resolved once from authentication.

It is the only thing tenant-scoped code trusts about who is asking. It is never built from a header,
a query parameter, a body field or document metadata.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

ROLE_RANK = {"member": 0, "analyst": 1, "admin": 2}


@dataclass(frozen=True, slots=True)
class Authority:
    tenant_id: int
    tenant_slug: str
    platform_tenant_id: int
    principal_ids: frozenset[int]
    kind: Literal["user", "service"]
    role: str
    user_id: int | None = None
    service_name: str | None = None
    api_key_id: int | None = None
    principal_hash: str = field(init=False)

    def __post_init__(self) -> None:
        # Stable over the *effective* principal set and tenant: two callers with the same rights
        # share a hash (and so may share cached answers); any difference in rights changes it.
        material = f"{self.tenant_id}|" + ",".join(str(pid) for pid in sorted(self.principal_ids))
        object.__setattr__(self, "principal_hash", hashlib.sha256(material.encode()).hexdigest())

    @property
    def corpus_tenant_ids(self) -> tuple[int, ...]:
        """The tenants whose records this caller may search: its own plus the platform corpus."""
        if self.tenant_id == self.platform_tenant_id:
            return (self.tenant_id,)
        return (self.tenant_id, self.platform_tenant_id)

    @property
    def is_platform(self) -> bool:
        return self.tenant_id == self.platform_tenant_id

    def has_role(self, role: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]

    @property
    def is_admin(self) -> bool:
        return self.has_role("admin")

    @property
    def is_analyst(self) -> bool:
        return self.has_role("analyst")
