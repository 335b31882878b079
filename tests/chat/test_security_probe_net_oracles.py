"""The `ssrf_reached`, `ssrf_port_oracle` and `existence_oracles` figures of the security bench
(benchmarks/chat/security/ssrf.py, existence_oracles.py), run quick against the test database: at their goals, with
the controls that show the probes compared something."""

import pytest

from benchmarks.chat.security import CEILINGS, existence_oracles, probe_modules, ssrf
from groundwork.models import Tenant
from tests.findings.conftest import relations  # noqa: F401 (the ontology: a transactional test may flush it)


@pytest.mark.django_db(transaction=True)
def test_ssrf_probe_reaches_nothing_internal(tmp_path):
    assert "ssrf" in probe_modules()
    figures = ssrf.measure(tmp_path, quick=True)
    assert figures["ssrf_cases"] >= 30 and figures["ssrf_saved"] == 0
    assert figures["ssrf_reached"] == CEILINGS["ssrf_reached"] == 0, figures["ssrf_reached_examples"]
    assert figures["ssrf_port_oracle"] == 0 and figures["ssrf_port_messages"] == ["the source could not be reached"]
    assert not Tenant.objects.filter(slug__startswith="probe-").exists()


@pytest.mark.django_db(transaction=True)
def test_existence_oracle_probe_finds_none(tmp_path, mailoutbox, relations):  # noqa: F811
    assert "existence_oracles" in probe_modules()
    figures = existence_oracles.measure(tmp_path, quick=True)
    assert figures["existence_oracle_checks"] >= 15
    assert figures["existence_oracles"] == CEILINGS["existence_oracles"] == 0, figures["existence_oracle_examples"]
    assert not Tenant.objects.filter(slug__startswith="probe-").exists()
