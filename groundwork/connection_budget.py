"""How many PostgreSQL connections the running processes may hold, and whether that fits the server.

Read by settings (the pool size) and by the production server's config (gunicorn_config), so both compute
the same numbers from the same environment; it imports nothing from Django's app registry.

Every process that talks to the database holds at most:

- a web worker (gunicorn, `WEB_THREADS` request threads): one pool of `DATABASE_POOL_MAX_SIZE`, by default
  `WEB_THREADS + RETRIEVAL_PARALLEL_WORKERS`. Each request thread holds one connection; a search's vector
  channel borrows a second one on a retrieval thread (knowledge/retrieval/search.py), and those draw from the
  same pool. Sized so, a request never waits for a connection while the server is healthy: a wait (and after
  `DATABASE_POOL_TIMEOUT`, a 503) means the database is slow or gone, not that we ran short.
- a Celery worker process: one task at a time, plus at most one retrieval thread: 2.

    WEB_CONCURRENCY × DATABASE_POOL_MAX_SIZE + CELERY_WORKER_CONCURRENCY × 2 + DATABASE_CONNECTION_RESERVE
        ≤ max_connections

The reserve covers `manage.py` commands, migrations, a psql session and PostgreSQL's own superuser slots.
"""

from __future__ import annotations

from dataclasses import dataclass

from .env import env_int

CELERY_CONNECTIONS_PER_PROCESS = 2


@dataclass(frozen=True)
class ConnectionBudget:
    web_workers: int
    web_threads: int
    retrieval_workers: int
    pool_max_size: int
    celery_processes: int
    reserve: int

    @property
    def total(self) -> int:
        return (self.web_workers * self.pool_max_size + self.celery_processes * CELERY_CONNECTIONS_PER_PROCESS
                + self.reserve)

    def formula(self) -> str:
        return (f"{self.web_workers} web workers × {self.pool_max_size} pooled + {self.celery_processes} Celery "
                f"processes × {CELERY_CONNECTIONS_PER_PROCESS} + {self.reserve} reserved = {self.total}")

    def problem(self, max_connections: int) -> str | None:
        """A sentence saying what to change when the budget does not fit the server, else None."""
        if self.total <= max_connections:
            return None
        return (f"connection budget {self.formula()} exceeds the database's max_connections ({max_connections}): "
                f"lower WEB_CONCURRENCY, WEB_THREADS, DATABASE_POOL_MAX_SIZE or CELERY_WORKER_CONCURRENCY, "
                f"or raise max_connections")


def connection_budget() -> ConnectionBudget:
    web_threads = env_int("WEB_THREADS", 8, minimum=1)
    retrieval_workers = env_int("RETRIEVAL_PARALLEL_WORKERS", 4, minimum=1)
    return ConnectionBudget(
        web_workers=env_int("WEB_CONCURRENCY", 2, minimum=1),
        web_threads=web_threads,
        retrieval_workers=retrieval_workers,
        pool_max_size=env_int("DATABASE_POOL_MAX_SIZE", web_threads + retrieval_workers, minimum=1),
        celery_processes=env_int("CELERY_WORKER_CONCURRENCY", 2, minimum=1),
        reserve=env_int("DATABASE_CONNECTION_RESERVE", 10, minimum=0),
    )
