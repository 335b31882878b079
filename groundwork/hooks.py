"""Registration points through which higher layers plug into the platform layer.

The platform layer never imports `knowledge`, `findings` or `chat`; they register here from their
AppConfig.ready(): health checks (shown on /healthz), sample-data loaders (run by `demo_seed`) and the
sections of a tenant admin's Manage page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

HealthCheck = Callable[[], dict[str, Any]]
SampleLoader = Callable[..., None]

_health_checks: dict[str, HealthCheck] = {}
_sample_loaders: dict[str, tuple[int, SampleLoader]] = {}


def health_check_register(name: str, check: HealthCheck) -> None:
    """`check()` returns a JSON-able dict with at least `ok: bool`."""
    _health_checks[name] = check


def health_checks() -> dict[str, HealthCheck]:
    return dict(_health_checks)


def sample_loader_register(name: str, loader: SampleLoader, *, order: int = 100) -> None:
    """`loader(tenant=..., platform=..., users=..., stdout=...)` must be safe to run twice."""
    _sample_loaders[name] = (order, loader)


def sample_loaders() -> list[tuple[str, SampleLoader]]:
    return [(name, loader) for name, (_, loader) in sorted(_sample_loaders.items(), key=lambda kv: kv[1][0])]


@dataclass(frozen=True)
class ManageSection:
    """One entry of the Manage page (`/t/<tenant>/manage/`): `url_name` is a `pages:` URL that takes the
    `tenant_slug` kwarg; `role` is the least role that sees it."""

    key: str
    title: str
    description: str
    url_name: str
    order: int = 100
    role: str = "admin"


_manage_sections: dict[str, ManageSection] = {}


def manage_section_register(*, key: str, title: str, description: str, url_name: str, order: int = 100,
                            role: str = "admin") -> None:
    _manage_sections[key] = ManageSection(key=key, title=title, description=description, url_name=url_name,
                                          order=order, role=role)


def manage_sections() -> list[ManageSection]:
    return sorted(_manage_sections.values(), key=lambda section: (section.order, section.key))
