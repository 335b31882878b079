"""The product bench's findings part (benchmarks/chat/product/findings.py) at quick size: it measures time travel on a
scratch copy of the demo through the API, counts repeated open claims, and leaves nothing behind."""

import pytest
from django.contrib.auth import get_user_model

from benchmarks.chat.product.findings import measure
from groundwork.models import Tenant
from tests.findings.conftest import relations  # noqa: F401
from tests.knowledge.conftest import no_embedder  # noqa: F401

pytestmark = pytest.mark.django_db


def test_quick_measure_reports_the_findings_figures_and_cleans_up(tmp_path, relations, no_embedder):  # noqa: F811
    figures, notes = measure(tmp_path, True)
    assert figures["valid_at_correct"] == 1.0, notes
    assert figures["valid_at_claims"] == 8 and figures["valid_at_asks"] >= 16
    assert figures["valid_at_replaced_claims"] == 3  # the demo's replaced versions come first, also when quick
    assert figures["open_duplicate_claims"] == 0, notes
    assert any(n.startswith("valid_at_correct: 8 state claims") for n in notes)
    assert not Tenant.objects.filter(slug__startswith="bench-findings-").exists()
    assert not get_user_model().objects.filter(username__startswith="bench-findings-").exists()
