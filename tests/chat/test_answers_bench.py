"""The answer benchmark runs end to end on a tiny eval directory shaped like the real one."""

import json

import pytest

from benchmarks.chat import answers

pytestmark = pytest.mark.django_db


@pytest.fixture
def tiny_eval(tmp_path, settings):
    scifact, cranfield = tmp_path / "scifact", tmp_path / "cranfield"
    scifact.mkdir()
    cranfield.mkdir()
    docs = [
        {"_id": "1", "title": "Statins and muscle pain",
         "text": "Statin therapy is common. Statin therapy causes muscle pain in a minority of patients. "
                 "Doses vary."},
        {"_id": "2", "title": "Vitamin D and fractures",
         "text": "Vitamin D supplements do not reduce hip fractures in older adults. Trials were large."},
        *({"_id": str(i), "title": f"Filler study {i}", "text": f"Cell culture protocol number {i} uses serum."}
          for i in range(3, 12)),
    ]
    (scifact / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    claims = [
        {"id": 1, "claim": "Statin therapy causes muscle pain.", "evidence": {"1": [{"sentences": [1]}]},
         "cited_doc_ids": [1]},
        {"id": 2, "claim": "Vitamin D supplements reduce hip fractures.", "evidence": {"2": [{"sentences": [0]}]},
         "cited_doc_ids": [2]},
        {"id": 3, "claim": "Unrelated claim without evidence.", "evidence": {}, "cited_doc_ids": [3]},
    ]
    (scifact / "claims_train.jsonl").write_text("\n".join(json.dumps(c) for c in claims))
    queries = ["what is the lift of a supersonic wing panel .", "boundary layer transition on flat plates ."]
    (cranfield / "queries.jsonl").write_text("\n".join(json.dumps({"_id": str(i), "text": q})
                                                      for i, q in enumerate(queries)))
    (cranfield / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in [
        {"_id": "c1", "title": "Supersonic wing panels", "text": "The lift of a supersonic wing panel was measured in "
                                                                  "a wind tunnel. Panel flutter set in at Mach 2."},
        {"_id": "c2", "title": "Flat plate boundary layers", "text": "Boundary layer transition on flat plates "
                                                                      "depends on the free stream turbulence."},
        *({"_id": f"c{i}", "title": f"Nozzle note {i}", "text": f"Nozzle flow report {i} lists pressures."}
          for i in range(3, 12)),
    ]))
    (cranfield / "qrels").mkdir()
    (cranfield / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n0\tc1\t1\n1\tc2\t1\n")
    settings.GROUNDWORK_EVAL_DIR = tmp_path
    return tmp_path


def test_bench_measures_latency_citations_and_refusals(world, tiny_eval, settings):
    settings.ANSWER_CACHE_ENABLED = False
    latency = answers.latency_bench(documents=40, questions=3, vocabulary=answers._vocabulary(tiny_eval))
    assert latency["chunks"] == 40 and latency["questions"] == 3
    assert 0 < latency["first_source_p50_ms"] <= latency["answer_p50_ms"]
    quality = answers.collections_bench(data=tiny_eval, in_limit=None, out_limit=None, embed=False,
                                        names=("scifact", "cranfield"))
    assert quality["answer_rate_by_collection"] == {"scifact": {"asked": 2, "answer_rate": 1.0},
                                                   "cranfield": {"asked": 2, "answer_rate": 1.0}}
    assert quality["rationale_hit_rate"] == 1.0
    assert quality["refusal_by_pair"] == {"cranfield->scifact": 1.0, "scifact->cranfield": 1.0}
    assert quality["out_of_corpus_asked"] == 4
    assert quality["invalid_citations"] == 0
    from groundwork.models import Tenant

    assert not Tenant.objects.filter(slug__startswith="bench-").exists()  # scratch tenants are dropped
