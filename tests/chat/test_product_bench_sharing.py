"""The sharing part of the product bench at quick size: a grant survives the connector's permission sync, and the
Documents search's nDCG@10 over the labelled demo queries is measured (a floor well under what it scores, so a
search that stops ranking fails here), with the scratch tenant and its people removed afterwards."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from benchmarks.chat.product import sharing
from groundwork.models import Tenant

pytestmark = pytest.mark.django_db


def test_ndcg_is_the_textbook_figure():
    assert sharing.ndcg_at(["a", "b"], {"a": 2, "b": 1}) == 1.0
    assert sharing.ndcg_at(["b", "a"], {"a": 2, "b": 1}) == pytest.approx((1 + 3 / 1.58496) / (3 + 1 / 1.58496),
                                                                          rel=1e-4)
    assert sharing.ndcg_at(["x"] * 10 + ["a"], {"a": 2}) == 0.0  # past the cut


def test_the_labels_are_a_labelled_set_of_thirty_queries_over_the_demo():
    from knowledge.sample_corpus import DATA

    queries = json.loads(sharing.LABELS.read_text())["queries"]
    documents = {d["external_id"]: d for d in json.loads((DATA / "kestrel.json").read_text())["documents"]}
    assert len(queries) >= 30
    for entry in queries:
        assert entry["relevant"] and set(entry["relevant"].values()) <= {1, 2}
        for external_id in entry["relevant"]:
            assert documents[external_id].get("visibility", "workspace") == "workspace", external_id


def test_measure_at_quick_size(tmp_path, world):
    before = set(Tenant.objects.values_list("pk", flat=True))
    users_before = get_user_model().objects.count()
    figures, notes = sharing.measure(tmp_path, quick=True)
    assert figures["grant_survives_sync"] == 1, notes
    assert 0.6 <= figures["search_ndcg@10"] <= 1.0, (figures, notes)
    assert any(note.startswith("search_ndcg@10: 12 labelled queries") for note in notes)
    assert set(Tenant.objects.values_list("pk", flat=True)) == before
    assert get_user_model().objects.count() == users_before
