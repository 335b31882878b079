"""The security bench's post-revoke probe: 0 leaking reads with the re-check, and it counts them without it."""

import pytest

from benchmarks.chat.security import post_revoke

pytestmark = pytest.mark.django_db


def test_probe_finds_no_read_after_revoke(tmp_path):
    figures = post_revoke.measure(tmp_path, quick=True)
    assert figures["post_revoke_reads"] == 0
    assert figures["post_revoke_answers"] == 8 and figures["post_revoke_reads_checked"] == 32
    assert figures["post_revoke_kept_readable"] == 1.0  # withdrawing everything is no answer either


def test_probe_counts_reads_when_nothing_is_rechecked(tmp_path, monkeypatch):
    monkeypatch.setattr("chat.api.answers_withdrawn", lambda authority, messages: set())
    figures = post_revoke.measure(tmp_path, quick=True)
    # the answers and conversation APIs leak each revoked answer; the cache and other tenants still do not
    assert figures["post_revoke_reads_answer"] == figures["post_revoke_reads_conversation"] == 8
    assert figures["post_revoke_reads_re_ask"] == figures["post_revoke_reads_other_tenant"] == 0
