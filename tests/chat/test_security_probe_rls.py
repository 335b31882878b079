"""The `rls_leaks` figure of the security bench (benchmarks/chat/security/rls.py)."""

import pytest

from benchmarks.chat.security import probe_modules
from benchmarks.chat.security.rls import measure
from groundwork.models import Tenant


@pytest.mark.django_db(transaction=True)
def test_rls_probe_reads_real_rows_and_leaks_none(world, tmp_path):
    assert "rls" in probe_modules()
    figures = measure(tmp_path, quick=True)
    assert figures["rls_transactions"] == 200
    assert figures["rls_rows_read"] > 0 and figures["rls_misses"] == 0
    assert figures["rls_leaks"] == 0
    assert not Tenant.objects.filter(slug__startswith="rlsprobe-").exists()  # scratch tenants removed
