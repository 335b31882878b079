"""Filters for the `LOGGING` setting."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied


class ExpectedRefusalFilter(logging.Filter):
    """A page that refuses a caller (tenant_page: not a member, a role too low) raises PermissionDenied, and Django
    logs the resulting 403 with the exception's traceback. A refusal is an expected answer, not a fault: its one
    "Forbidden" line stays (who was refused where is worth seeing), the traceback goes."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], PermissionDenied):
            record.exc_info = None
            record.exc_text = None
        return True
