from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from findings.models import Claim
from findings.services import ExtractionFailed
from findings.tasks import document_extract_task

pytestmark = pytest.mark.django_db


def _run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("extract_findings", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_extract_findings_backfills_existing_documents(world, docs):
    docs.doc("hos", "On 2025-01-15 Priya Nair became Head of Support.")
    assert not Claim.objects.filter(tenant=world.acme).exists()  # on-commit extraction never ran here
    out, _ = _run("--tenant", "acme")  # no broker in tests: the queued tasks run inline
    assert "1 documents queued for extraction" in out
    claim = Claim.objects.get(tenant=world.acme, subject__name="Priya Nair")
    assert claim.predicate.name == "role" and claim.object_value == "Head of Support"
    _run("--tenant", "acme")  # audited chunks are skipped: nothing new
    assert Claim.objects.filter(tenant=world.acme).count() == 1


def test_extract_findings_queues_without_waiting_for_a_result(world, docs, monkeypatch):
    """With a real broker and no result backend, `.delay(...).get()` would fail: the command only queues."""
    first, _ = docs.doc("a", "On 2025-01-15 Priya Nair became Head of Support.")
    second, _ = docs.doc("b", "On 2025-02-01 Omar Haddad became Head of Sales.")
    queued = []
    monkeypatch.setattr(document_extract_task, "delay", lambda *args: queued.append(args))  # returns no result
    out, _ = _run("--tenant", "acme", "--force")
    assert queued == [(first.pk, True), (second.pk, True)]
    assert "2 documents queued for extraction" in out
    assert not Claim.objects.exists()


def test_extract_findings_inline_runs_the_service_here_and_reports(world, docs, monkeypatch):
    docs.doc("hos", "On 2025-01-15 Priya Nair became Head of Support.")
    monkeypatch.setattr(document_extract_task, "delay", lambda *args: pytest.fail("--inline must not queue"))
    out, _ = _run("--tenant", "acme", "--inline")
    assert "1 documents, 1 chunks extracted, 0 failed" in out
    assert Claim.objects.get(tenant=world.acme, subject__name="Priya Nair").object_value == "Head of Support"
    out, _ = _run("--tenant", "acme", "--inline")
    assert "1 documents, 0 chunks extracted, 0 failed" in out  # audited: skipped
    out, _ = _run("--tenant", "acme", "--inline", "--force")
    assert "1 chunks extracted" in out and Claim.objects.filter(tenant=world.acme).count() == 1


def test_extract_findings_inline_reports_failed_chunks(world, docs, monkeypatch):
    docs.doc("hos", "On 2025-01-15 Priya Nair became Head of Support.")

    def failing(*, chunk_id):
        raise ExtractionFailed(f"chunk {chunk_id}: the model answered nonsense")

    monkeypatch.setattr("findings.management.commands.extract_findings.chunk_extract", failing)
    out, err = _run("--tenant", "acme", "--inline")
    assert "0 chunks extracted, 1 failed (run again to retry them)" in out
    assert "the model answered nonsense" in err and not Claim.objects.exists()


def test_extract_findings_refuses_an_unknown_tenant_and_a_missing_extractor(world, settings):
    with pytest.raises(CommandError, match="no tenant 'nope'"):
        _run("--tenant", "nope")
    settings.FINDINGS_EXTRACTOR = "none"
    with pytest.raises(CommandError, match="FINDINGS_EXTRACTOR=none"):
        _run()
