"""Registration points through which higher layers plug into the platform layer.

The platform layer never imports `knowledge`, `findings` or `chat`; they register here from their
AppConfig.ready(): health checks (shown on /healthz) and sample-data loaders (run by `demo_seed`).
"""

from __future__ import annotations

from collections.abc import Callable
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
