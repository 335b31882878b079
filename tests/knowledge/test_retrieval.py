"""Who sees what through retrieval: every channel and tier, filters, ties, the two empties."""

import os
import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.embedders import embedder_reset
from knowledge.embedding import chunks_embed, space_activate
from knowledge.models import Chunk, Document
from knowledge.retrieval import RetrievalUnavailable, SearchFilters, hybrid_search
from knowledge.retrieval.grep import GrepRefused, grep_search
from knowledge.retrieval.hints import hidden_relevant
from knowledge.retrieval.lookup import ground, ground_evidence
from knowledge.retrieval.vector import vector_search
from tests.fake_openai import wrong_width_embedder
from tests.knowledge.conftest import ingest

pytestmark = pytest.mark.django_db

CANARIES = ("CANARY-HR-7731", "CANARY-GLOBEX-1142")


@pytest.fixture
def embedded(corpus):
    chunks_embed()
    return corpus


def _docs(result):
    return {h.document_id for h in result.hits}


@pytest.mark.parametrize("channels", [("lexical",), ("vector",), ("lexical", "vector")])
def test_every_channel_applies_tenant_and_acl(world, embedded, channels):
    c = embedded
    query = "laptop workforce plan robotics certificate leased"
    member = _docs(hybrid_search(world.authority(world.member), query, k=20, channels=channels))
    admin = _docs(hybrid_search(world.authority(world.admin), query, k=20, channels=channels))
    outsider = _docs(hybrid_search(world.authority(world.outsider, world.globex), query, k=20, channels=channels))
    assert member <= {c.acme_public.pk, c.acme_eng.pk, c.platform_doc.pk} and c.acme_eng.pk in member
    assert admin <= {c.acme_public.pk, c.acme_hr.pk, c.platform_doc.pk} and c.acme_hr.pk in admin
    assert outsider <= {c.globex_doc.pk, c.platform_doc.pk} and c.globex_doc.pk in outsider


@pytest.mark.parametrize("route", ["exact", "hnsw"])
def test_both_vector_routes_apply_tenant_and_acl(world, embedded, route):
    c = embedded
    query = "laptop workforce plan robotics certificate leased"

    def docs(authority):
        return _docs(hybrid_search(authority, query, k=20, channels=("vector",), vector_route=route))

    member, admin = docs(world.authority(world.member)), docs(world.authority(world.admin))
    outsider = docs(world.authority(world.outsider, world.globex))
    assert member <= {c.acme_public.pk, c.acme_eng.pk, c.platform_doc.pk} and c.acme_eng.pk in member
    assert admin <= {c.acme_public.pk, c.acme_hr.pk, c.platform_doc.pk} and c.acme_hr.pk in admin
    assert outsider <= {c.globex_doc.pk, c.platform_doc.pk} and c.globex_doc.pk in outsider


def test_class_index_covers_the_exact_scan_while_a_btree_tuple_can_hold_the_vector():
    from knowledge.sql import CLASS_INDEX, class_index_create

    def definition():
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [CLASS_INDEX])
            return cursor.fetchone()[0]

    assert "(embedding_space_id, access_class_id) INCLUDE (tenant_id, document_id, id, embedding_half)" in definition()
    class_index_create(connection, 1536)  # 3 KB half vectors: left out rather than failing every insert
    assert "INCLUDE (tenant_id, document_id, id) WHERE" in definition()


def test_exact_scan_returns_every_readable_candidate_when_the_planner_favours_the_hnsw_index(world, embedded):
    """The exact route's re-rank once joined the candidates back to the chunk table ordered by distance; the
    planner could walk the HNSW index for that side, which yields only ef_search neighbours, and candidates
    outside them vanished. Pushed towards index orderings (and a one-neighbour HNSW walk), it still returns
    every chunk the member may read."""
    from knowledge.access import chunk_access_params, chunk_access_sql
    from knowledge.models import EmbeddingSpace

    member = world.authority(world.member)
    params = chunk_access_params(member)
    space_id = EmbeddingSpace.objects.get(is_active=True).pk
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM knowledge_chunk c WHERE c.embedding IS NOT NULL AND "
                       + chunk_access_sql("c").as_string(cursor.connection), params)
        readable = cursor.fetchone()[0]
        cursor.execute("SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off; SET LOCAL hnsw.ef_search = 1")
    query = Chunk.objects.filter(embedding__isnull=False).values_list("embedding", flat=True).first()
    hits, route = vector_search(vector=list(query), space_id=space_id, access_params=params, filters_clause=None,
                                filter_params={}, limit=readable + 5, route="exact")
    assert route == "exact" and readable > 1 and len(hits) == readable


def test_half_precision_copy_follows_the_embedding(world, embedded):
    """Postgres generates it, so it can never drift from the embedding; exact distances come from the full one."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FILTER (WHERE embedding IS NOT NULL), "
                       "count(*) FILTER (WHERE embedding_half IS NOT NULL), "
                       "max(abs((embedding <=> embedding) - (embedding_half <=> embedding::halfvec))) "
                       "FROM knowledge_chunk")
        full, half, drift = cursor.fetchone()
        assert full == half > 0 and drift < 1e-3
        cursor.execute("UPDATE knowledge_chunk SET embedding = NULL WHERE id = (SELECT min(id) FROM knowledge_chunk "
                       "WHERE embedding IS NOT NULL) RETURNING embedding_half")
        assert cursor.fetchone()[0] is None


def test_user_filters_never_widen_access(world, embedded):
    c = embedded
    member = world.authority(world.member)
    for filters in (SearchFilters(document_ids=(c.acme_hr.pk, c.globex_doc.pk)),
                    SearchFilters(source_ids=(c.globex_wiki.pk,)),
                    SearchFilters(document_ids=(c.acme_hr.pk,), source_ids=(c.acme_wiki.pk,))):
        result = hybrid_search(member, "workforce plan laptops leased", k=10, filters=filters)
        assert result.hits == []
    narrowed = hybrid_search(member, "laptop", k=10, filters=SearchFilters(source_ids=(c.acme_wiki.pk,)))
    assert _docs(narrowed) <= {c.acme_public.pk, c.acme_eng.pk} and narrowed.hits


def test_metadata_and_date_filters_are_anded(world, corpus):
    ingest(world, corpus.acme_wiki, external_id="m1", title="Printer", body="The printer on floor two jams.",
           metadata={"team": "ops"})
    ingest(world, corpus.acme_wiki, external_id="m2", title="Printer B", body="The printer on floor three jams.",
           metadata={"team": "it"})
    member = world.authority(world.member)
    hits = hybrid_search(member, "printer jams", k=10, channels=("lexical",),
                         filters=SearchFilters(metadata={"team": "ops"})).hits
    assert [h.title for h in hits] == ["Printer"]


def test_tenant_hit_wins_a_tie_with_platform(world, corpus):
    text = "Quarterly zebrafish telemetry calibration procedure."
    ingest(world, corpus.platform_ref, external_id="tie-p", title="Zebrafish", body=text)
    ingest(world, corpus.acme_wiki, external_id="tie-t", title="Zebrafish", body=text)
    hits = hybrid_search(world.authority(world.member), "zebrafish telemetry", k=5, channels=("lexical",)).hits
    assert [h.corpus for h in hits[:2]] == ["tenant", "platform"]
    assert hits[0].lexical_score == hits[1].lexical_score


def test_per_document_cap_keeps_other_documents_visible(world, corpus):
    body = "\n\n".join(f"Section {i}: the quokka budget grew again this quarter." for i in range(40))
    ingest(world, corpus.acme_wiki, external_id="dup", title="Quokka budget", body=body)
    ingest(world, corpus.acme_wiki, external_id="other", title="Other", body="A short note on the quokka budget.")
    from django.test import override_settings

    with override_settings(CHUNK_TOKEN_BUDGET=20):
        ingest(world, corpus.acme_wiki, external_id="dup2", title="Quokka budget 2", body=body)
    hits = hybrid_search(world.authority(world.member), "quokka budget", k=10, channels=("lexical",),
                         per_document_cap=2).hits
    per_doc = {}
    for h in hits:
        per_doc[h.document_id] = per_doc.get(h.document_id, 0) + 1
    assert max(per_doc.values()) <= 2 and len(per_doc) == 3


def test_hits_carry_record_level_provenance(world, embedded):
    hit = hybrid_search(world.authority(world.member), "laptop on day one", k=3).hits[0]
    assert hit.document_id == embedded.acme_public.pk and hit.record_url == "https://wiki.acme.test/laptops"
    assert set(hit.channels) == {"lexical", "vector"} and hit.lexical_rank == 1 and hit.vector_rank is not None
    doc = Document.objects.get(pk=hit.document_id)
    assert doc.text[hit.start:hit.end] == hit.text and hit.corpus == "tenant"


def test_fts_only_when_embedder_is_none(world, corpus, settings):
    settings.EMBEDDER = "none"
    embedder_reset()
    try:
        result = hybrid_search(world.authority(world.member), "laptop", k=5)
        assert result.vector == "no_embedder" and result.hits
        assert all(h.channels == ("lexical",) for h in result.hits)
        assert ground_evidence(world.authority(world.member), "laptop")  # not "unavailable"
    finally:
        embedder_reset()


def test_two_empties_are_distinguished(world, embedded, fake_openai, settings):
    member = world.authority(world.member)
    assert ground_evidence(member, "xylophone quasar nebula") == []  # searched, nothing relevant
    from groundwork.models import Tenant

    empty = Tenant.objects.create(slug="empty", name="Empty")
    Document.objects.filter(tenant=world.platform).delete()
    with pytest.raises(RetrievalUnavailable) as no_corpus:
        ground_evidence(world.service(empty), "anything")
    assert no_corpus.value.cause == "no_corpus"
    # where semantic evidence is required, a configured embedder that answers with the wrong width makes
    # retrieval unavailable, not empty (by default it falls back to full text: tests/knowledge/test_embedder_down.py)
    with wrong_width_embedder(settings, fake_openai), pytest.raises(RetrievalUnavailable) as wrong:
        ground_evidence(member, "laptop")
    assert wrong.value.cause in ("wrong_dimension", "embedding_error")


def test_search_api_maps_empties_to_200_and_503(world, embedded):
    client = world.client(world.member)
    ok = client.post("/api/v1/search", {"query": "laptop day one", "k": 3}, format="json")
    assert ok.status_code == 200 and ok.json()["hits"][0]["record_url"] == "https://wiki.acme.test/laptops"
    from groundwork.models import Tenant
    from groundwork.services import membership_set

    lonely = Tenant.objects.create(slug="lonely", name="Lonely")
    membership_set(user=world.member, tenant=lonely)
    response = world.client(world.member, lonely).post("/api/v1/search", {"query": "laptop"}, format="json")
    # the platform corpus is readable, so this tenant is searchable: 200
    assert response.status_code == 200
    Document.objects.filter(tenant=world.platform).delete()
    gone = world.client(world.member, lonely).post("/api/v1/search", {"query": "laptop"}, format="json")
    assert gone.status_code == 503 and gone.json()["cause"] == "no_corpus"
    bad = client.post("/api/v1/search", {"query": "", "k": 500}, format="json")
    assert bad.status_code == 400


def test_search_api_query_budget(world, embedded):
    client = world.client(world.member)
    client.post("/api/v1/search", {"query": "laptop"}, format="json")
    with CaptureQueriesContext(connection) as queries:
        response = client.post("/api/v1/search", {"query": "laptop policy certificate"}, format="json")
    assert response.status_code == 200
    assert len(queries) <= 16, [q["sql"][:80] for q in queries]


def test_search_never_returns_hidden_canaries_in_any_byte(world, embedded):
    client = world.client(world.member)
    for query in ("workforce plan robotics team", "CANARY-HR-7731", "Globex laptops leased", "CANARY-GLOBEX-1142"):
        body = client.post("/api/v1/search", {"query": query, "k": 20}, format="json").content.decode()
        body = body.replace(query, "")  # the query is echoed back; everything else must be clean
        assert not any(canary in body for canary in CANARIES)


def test_memo_tier_answers_without_search_and_is_scoped(world, embedded):
    admin = world.authority(world.admin)
    first = ground(admin, name="plan", fingerprint="fp-1", query="workforce plan robotics")
    assert first.tier == "hybrid" and any("CANARY-HR-7731" in r["text"] for r in first.results)
    with CaptureQueriesContext(connection) as queries:
        again = ground(admin, name="plan", fingerprint="fp-1", query="workforce plan robotics")
    assert again.tier == "memo" and again.cached and again.results == first.results
    assert not any("knowledge_chunk c" in q["sql"] and "ts_rank" in q["sql"] for q in queries)
    # the same request from someone with other rights, or another tenant, never sees the memo
    member = ground(world.authority(world.member), name="plan", fingerprint="fp-1", query="workforce plan robotics")
    outsider = ground(world.authority(world.outsider, world.globex), name="plan", fingerprint="fp-1",
                      query="workforce plan robotics")
    for response in (member, outsider):
        assert response.tier != "memo" and not any("CANARY-HR" in r.get("text", "") for r in response.results)
    # revoking the admin's access invalidates the memo on serve
    from groundwork.services import group_member_remove, principal_ensure

    group_member_remove(group=world.groups["hr"],
                        member=principal_ensure(tenant=world.acme, kind="user", raw=str(world.admin.pk)))
    after = ground(world.authority(world.admin), name="plan", fingerprint="fp-1", query="workforce plan robotics")
    assert after.tier != "memo" and not any("CANARY-HR" in r.get("text", "") for r in after.results)


def test_ground_falls_through_to_grep_then_nothing(world, corpus, settings, tmp_path):
    settings.GROUNDING_GREP_ROOT = None
    assert ground(world.authority(world.member), name="n", fingerprint=None, query="flamingo").tier == "none"
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "notes.md").write_text("The flamingo room is on floor 3.\nNothing else.\n")
    (tmp_path / "globex").mkdir()
    (tmp_path / "globex" / "secret.md").write_text("Globex flamingo secret CANARY-GLOBEX-1142\n")
    settings.GROUNDING_GREP_ROOT = str(tmp_path)
    response = ground(world.authority(world.member), name="n2", fingerprint=None, query="flamingo room")
    assert response.tier == "grep" and response.results[0]["path"] == "notes.md"
    assert "CANARY" not in str(response.results)
    outsider = ground(world.authority(world.outsider, world.globex), name="n2", fingerprint=None, query="flamingo")
    assert outsider.tier == "grep" and all(r["path"] == "secret.md" for r in outsider.results)


def test_grep_sandbox_refuses_escapes_and_treats_query_literally(settings, tmp_path):
    root = tmp_path / "root"
    (root / "acme" / "docs").mkdir(parents=True)
    (root / "acme" / "docs" / "a.txt").write_text("alpha beta\n.* literal dot star\n$(rm -rf /) literal\n")
    (root / "acme" / "big.txt").write_text("alpha " * 2000)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.txt").write_text("alpha LEAKED\n")
    os.symlink(outside, root / "acme" / "linked-dir")
    os.symlink(outside / "leak.txt", root / "acme" / "linked.txt")
    settings.GROUNDING_GREP_ROOT = str(root)
    hits = grep_search(tenant_slugs=["acme"], query="alpha", max_file_bytes=1024)
    assert [h.path for h in hits] == ["docs/a.txt"]  # big file capped, symlinks never followed
    assert not any("LEAKED" in h.line for h in hits)
    for subdir in ("../outside", "/etc", "docs/../../outside", "linked-dir"):
        with pytest.raises(GrepRefused):
            grep_search(tenant_slugs=["acme"], query="alpha", subdir=subdir)
    assert [h.line for h in grep_search(tenant_slugs=["acme"], query=".*")] == []  # too short: no keyword
    literal = grep_search(tenant_slugs=["acme"], query="$(rm -rf /) literal")
    assert literal and all("literal" in h.line for h in literal)
    assert len(grep_search(tenant_slugs=["acme"], query="alpha beta", max_matches=1)) == 1


def test_hidden_record_hint_is_content_free(world, embedded, shared_topics):
    hints = hidden_relevant(world.authority(world.member), "workforce plan reduces robotics team", k=5)
    assert len(hints) == 1
    hint = hints[0]
    assert (hint.source_kind, hint.source_name, hint.author_email) == ("wiki", "Acme wiki", "admin@example.test")
    assert set(vars(hint)) == {"source_kind", "source_name", "author_email"}
    # the admin can read it: nothing is hidden from them; another tenant's records never hint
    assert hidden_relevant(world.authority(world.admin), "workforce plan reduces robotics team", k=5) == []
    assert hidden_relevant(world.authority(world.outsider, world.globex), "workforce plan robotics", k=5) == []


def test_hint_omits_contact_when_author_is_not_a_user(world, corpus):
    ingest(world, corpus.acme_wiki, external_id="anon", title="Severance terms",
           body="Severance pay is twelve weeks of salary for every employee.",
           visibility="restricted", acl=("group:hr",), author="email:ghost@nowhere.test")
    ingest(world, corpus.acme_wiki, external_id="payroll", title="Payroll",
           body="Every employee is paid a monthly salary, timesheets are due each week, and severance pay "
                "follows the employment contract.")
    hints = hidden_relevant(world.authority(world.member), "weeks of severance pay for an employee", k=5)
    assert [(h.source_name, h.author_email) for h in hints] == [("Acme wiki", None)]


def _exact_scan_state(space_id: int, document_id: int) -> dict:
    """What the exact scan reads (its class rows, the chunks' classes), for the message of a failed comparison:
    the exact scan once returned no row in CI where the HNSW scan returned ten, not reproduced since."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT d.access_class_id, d.acl, d.visibility FROM knowledge_document d WHERE d.id = %s",
                       [document_id])
        document = cursor.fetchone()
        cursor.execute("SELECT access_class_id, count(*), count(embedding_half), min(embedding_space_id), "
                       "max(embedding_space_id) FROM knowledge_chunk WHERE document_id = %s GROUP BY 1",
                       [document_id])
        chunks = cursor.fetchall()
        cursor.execute("SELECT id, tenant_id, visibility, acl FROM knowledge_accessclass ORDER BY id")
        classes = cursor.fetchall()
        cursor.execute("SELECT indexrelid::regclass::text, indisvalid, indisready FROM pg_index "
                       "WHERE indrelid = 'knowledge_chunk'::regclass")
        indexes = cursor.fetchall()
    return {"space": space_id, "document": document, "chunks": chunks, "classes": classes, "indexes": indexes}


@pytest.mark.django_db(transaction=True)
def test_iterative_scan_fills_k_under_a_one_percent_filter(world):
    """3,000 chunks, 30 (1%) readable: HNSW with iterative scans still returns k rows, matching exact."""
    from knowledge.models import Source

    rng = random.Random(7)
    source = Source.objects.create(tenant=world.acme, kind="upload", name="synthetic")
    readable = ingest(world, source, external_id="r", title="r", body="r", visibility="restricted",
                      acl=("group:engineering",))
    hidden = ingest(world, source, external_id="h", title="h", body="h", visibility="restricted", acl=("group:hr",))
    Chunk.objects.filter(document__in=[readable, hidden]).delete()
    space = space_activate(model_id="synthetic", dimension=384)
    centers = [[rng.gauss(0, 1) for _ in range(384)] for _ in range(20)]

    def vec():
        c = rng.choice(centers)
        return [x + rng.gauss(0, 0.3) for x in c]

    rows = [Chunk(document=readable if i % 100 == 0 else hidden, ordinal=i, text="t", start=0, end=1,
                  token_count=1, tenant_id=world.acme.pk, embedding=vec(), embedding_space=space)
            for i in range(3000)]
    Chunk.objects.bulk_create(rows, batch_size=500)
    member = world.authority(world.member)
    from knowledge.access import chunk_access_params

    recalls = []
    for _ in range(10):
        q = vec()
        exact, _ = vector_search(vector=q, space_id=space.pk, access_params=chunk_access_params(member),
                                 filters_clause=None, filter_params={}, limit=10, route="exact")
        hnsw, route = vector_search(vector=q, space_id=space.pk, access_params=chunk_access_params(member),
                                    filters_clause=None, filter_params={}, limit=10, route="hnsw")
        assert route == "hnsw" and len(hnsw) == 10 == len(exact), _exact_scan_state(space.pk, readable.pk)
        recalls.append(len({i for i, _ in hnsw} & {i for i, _ in exact}) / 10)
    assert sum(recalls) / len(recalls) >= 0.95
    # and the router picks the exact scan for so small a filtered set
    _, chosen = vector_search(vector=vec(), space_id=space.pk, access_params=chunk_access_params(member),
                              filters_clause=None, filter_params={}, limit=10)
    assert chosen == "exact"


def test_one_shared_common_word_earns_no_hint(world, embedded):
    # "robotics" appears in the hidden HR plan, but the question is about something else entirely
    assert hidden_relevant(world.authority(world.member), "robotics olympiad in Mongolia", k=5) == []


@pytest.mark.django_db(transaction=True)
def test_parallel_channels_return_what_sequential_channels_return(world, settings):
    """Outside a transaction the vector channel runs on a worker connection; the result is the same."""
    from tests.knowledge.conftest import corpus as corpus_fixture

    corpus_fixture.__wrapped__(world)
    embedder_reset()  # the configured embedder, not one an earlier test cached (this test needs the vector channel)
    chunks_embed()
    member = world.authority(world.member)
    queries = ("laptop workforce plan", "robotics certificate", "leased laptops for engineering")
    settings.RETRIEVAL_PARALLEL_CHANNELS = True
    assert not connection.in_atomic_block
    parallel = [[(h.chunk_id, h.lexical_rank, h.vector_rank) for h in hybrid_search(member, q, k=10).hits]
                for q in queries]
    import threading

    assert any(t.name.startswith("retrieval") for t in threading.enumerate())  # a worker ran a channel
    settings.RETRIEVAL_PARALLEL_CHANNELS = False
    sequential = [[(h.chunk_id, h.lexical_rank, h.vector_rank) for h in hybrid_search(member, q, k=10).hits]
                  for q in queries]
    assert parallel == sequential and any(parallel)
    assert any(rank is not None for hits in parallel for _, _, rank in hits)  # the vector channel took part
