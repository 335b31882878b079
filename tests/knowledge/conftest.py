from dataclasses import dataclass

import pytest

from knowledge.models import Document, Source
from knowledge.services import DocumentInput, document_ingest


@dataclass
class Corpus:
    acme_wiki: Source
    globex_wiki: Source
    platform_ref: Source
    acme_public: Document
    acme_hr: Document
    acme_eng: Document
    globex_doc: Document
    platform_doc: Document


def ingest(world, source, tenant=None, **fields) -> Document:
    authority = world.service(tenant or source.tenant, name="fixture-loader", role="admin")
    defaults = {"format": "text"}
    result = document_ingest(authority=authority, source=source, item=DocumentInput(**{**defaults, **fields}))
    return Document.objects.get(pk=result.document_id)


@pytest.fixture
def corpus(world) -> Corpus:
    acme_wiki = Source.objects.create(tenant=world.acme, kind="wiki", name="Acme wiki", base_url="https://wiki.acme.test/")
    globex_wiki = Source.objects.create(tenant=world.globex, kind="wiki", name="Globex wiki")
    platform_ref = Source.objects.create(tenant=world.platform, kind="wiki", name="Reference")
    return Corpus(
        acme_wiki=acme_wiki, globex_wiki=globex_wiki, platform_ref=platform_ref,
        acme_public=ingest(world, acme_wiki, external_id="pub", title="Laptop policy",
                           body="Every engineer receives a laptop on day one. Replacements take five days.",
                           record_url="https://wiki.acme.test/laptops", author="email:admin@example.test"),
        acme_hr=ingest(world, acme_wiki, external_id="hr", title="Q4 workforce plan",
                       body="CANARY-HR-7731 The workforce plan reduces the robotics team by four people.",
                       visibility="restricted", acl=("group:hr",), author="email:admin@example.test"),
        acme_eng=ingest(world, acme_wiki, external_id="eng", title="Incident review",
                        body="The deploy pipeline failed because the laptop fleet certificate expired.",
                        visibility="restricted", acl=("group:engineering",)),
        globex_doc=ingest(world, globex_wiki, external_id="g1", title="Globex laptops",
                          body="CANARY-GLOBEX-1142 Globex laptops are leased for three years."),
        platform_doc=ingest(world, platform_ref, external_id="p1", title="Citation guide",
                            body="Every answer cites the record it came from, including laptop policies."),
    )


@pytest.fixture
def shared_topics(world, corpus) -> Document:
    """A record every acme member reads that speaks of the hidden HR plan's topic (plans, the robotics team, the
    workforce) without its content. The hint probe searches only by words the tenant's shared records hold
    (knowledge.retrieval.hints): with this record a question about that topic may get a hint; without it the
    plan's words are hidden-only, and a hint on them would confirm a guess."""
    return ingest(world, corpus.acme_wiki, external_id="calendar", title="Planning calendar",
                  body="Quarterly planning: every team drafts its plan in March. The robotics team demo day is in May. "
                       "Workforce questions go to the people team.")


class EmbedderSwitch:
    """Points the process-wide embedder at another configuration for one test, then back."""

    def __init__(self, settings, fake_openai) -> None:
        self.settings = settings
        self.fake = fake_openai

    def __call__(self, kind: str, *, dimension: int | None = None, batch_size: int | None = None):
        from knowledge import embedding
        from knowledge.embedders import embedder_get, embedder_reset

        self.settings.EMBEDDER = kind
        if kind == "openai":
            self.settings.EMBEDDING_URL = self.fake.url
            self.settings.EMBEDDING_MODEL = "fake-embed"
            self.settings.MODEL_EMBEDDING_DIM = dimension  # None: learnt from the first response
        if batch_size is not None:
            self.settings.EMBEDDING_BATCH_SIZE = batch_size
        embedder_reset()
        embedding._probe_result = None
        return embedder_get()


@pytest.fixture
def use_embedder(settings, fake_openai):
    from knowledge import embedding
    from knowledge.embedders import embedder_reset

    yield EmbedderSwitch(settings, fake_openai)
    # `settings` restores the values; the cached embedder and probe must follow them.
    embedder_reset()
    embedding._probe_result = None


INDEX_DIM = 384  # the vector column as migrated


@pytest.fixture
def remote_embedder(settings, fake_openai):
    """A working OpenAI-compatible embedder (the local fake), as wide as the index."""
    from knowledge import embedding
    from knowledge.embedders import embedder_reset

    settings.EMBEDDER, settings.EMBEDDING_URL, settings.EMBEDDING_MODEL = "openai", fake_openai.url, "fake-embed"
    settings.MODEL_EMBEDDING_DIM = INDEX_DIM
    settings.EMBEDDING_TIMEOUT = 0.3
    fake_openai.embedding_dim = INDEX_DIM
    embedder_reset()
    embedding._probe_result = None
    yield fake_openai
    embedder_reset()
    embedding._probe_result = None


@pytest.fixture
def remote_corpus(remote_embedder, corpus) -> Corpus:
    """The corpus, embedded by the remote embedder while it works (after-commit tasks do not run in a test)."""
    from knowledge.embedding import chunks_embed

    chunks_embed()
    return corpus


@pytest.fixture
def no_embedder(settings):
    """Full text alone (EMBEDDER=none) for one test; the cached embedder follows the setting both ways."""
    from knowledge.embedders import embedder_reset

    settings.EMBEDDER = "none"
    embedder_reset()
    yield
    embedder_reset()


@pytest.fixture
def upload_source(world) -> Source:
    return Source.objects.create(tenant=world.acme, kind="upload", name="Shared drive")
