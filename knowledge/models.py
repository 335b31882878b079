"""The corpus: sources, documents with ACLs, and chunks with full text and embeddings.

Access columns on chunks (`tenant_id`, `visibility`, `acl`) and the `acl` array on documents are copies
maintained by database triggers from the document and its DocumentAcl rows (migration 0002). Retrieval
filters on them inside the same index scan, without a join per candidate; the triggers make sure no
write path (service, admin inline, raw SQL) can leave them stale.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from pgvector.django import HnswIndex, VectorField

from groundwork.models import Principal, Tenant

# The vector column's dimension is fixed by migration 0002 from MODEL_EMBEDDING_DIM (default 384, the
# MiniLM dimension). `manage.py reembed --dimension N` changes it; a mismatch with the embedder is
# reported as a configuration fault, never a crash.
DEFAULT_INDEX_DIMENSION = 384


class Visibility(models.TextChoices):
    WORKSPACE = "workspace", "Workspace (everyone in the tenant)"
    RESTRICTED = "restricted", "Restricted (ACL principals only)"


class Source(models.Model):
    class Kind(models.TextChoices):
        UPLOAD = "upload", "Upload"
        FOLDER = "folder", "Folder"
        WIKI = "wiki", "Wiki"
        TICKETS = "tickets", "Tickets"
        CHAT = "chat", "Chat"
        EMAIL = "email", "E-mail"
        DRIVE = "drive", "Drive"
        OTHER = "other", "Other"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="sources")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.UPLOAD)
    name = models.CharField(max_length=200)
    base_url = models.URLField(max_length=500, blank=True)
    # What a new document of this source gets when its input names no visibility / ACL of its own. Documents
    # that inherit (Document.acl_inherited) follow a later change of these defaults.
    default_visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.WORKSPACE,
                                          db_default=Visibility.WORKSPACE)
    default_acl = models.ManyToManyField(Principal, through="SourceAcl", related_name="+", blank=True)
    # Members (not only tenant admins) may upload files into this source.
    members_may_upload = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tenant_id", "name"]
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="knowledge_source_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class Document(models.Model):
    class Format(models.TextChoices):
        TEXT = "text", "Plain text"
        MARKDOWN = "markdown", "Markdown"
        HTML = "html", "HTML"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="documents")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(max_length=512)
    title = models.CharField(max_length=500)
    record_url = models.URLField(max_length=2000, blank=True)
    author = models.ForeignKey(Principal, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.TEXT)
    text = models.TextField()
    content_hash = models.CharField(max_length=64)
    metadata = models.JSONField(default=dict, blank=True)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.WORKSPACE)
    acl_principals = models.ManyToManyField(Principal, through="DocumentAcl", related_name="readable_documents",
                                            blank=True)
    # Trigger-maintained copy of the DocumentAcl principal ids (see module docstring).
    acl = ArrayField(models.BigIntegerField(), default=list, blank=True, editable=False)
    # Trigger-maintained: the AccessClass of (tenant, visibility, acl).
    access_class = models.ForeignKey("AccessClass", null=True, blank=True, editable=False, on_delete=models.DO_NOTHING,
                                     related_name="+", db_index=False)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    observed_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    ingested_at = models.DateTimeField(auto_now=True)
    # True: visibility and ACL come from the source's defaults and follow their changes; False: set per document.
    acl_inherited = models.BooleanField(default=False, db_default=False)

    class Meta:
        ordering = ["-updated_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "external_id"], name="knowledge_document_unique_external_id"),
            models.CheckConstraint(condition=Q(visibility__in=["workspace", "restricted"]),
                                   name="knowledge_document_visibility"),
            models.CheckConstraint(condition=~Q(text=""), name="knowledge_document_text_not_empty"),
            models.CheckConstraint(condition=Q(expires_at__isnull=True) | Q(expires_at__gt=models.F("created_at")),
                                   name="knowledge_document_expires_after_created"),
        ]
        indexes = [
            models.Index(fields=["tenant", "visibility"], name="knowledge_doc_tenant_vis_idx"),
            GinIndex(fields=["acl"], name="knowledge_doc_acl_gin"),
        ]

    def __str__(self) -> str:
        return self.title


class AccessClass(models.Model):
    """One distinct (tenant, visibility, ACL) combination — the unit in which rights are granted.

    Chunks carry the id of their class (trigger-maintained, like their access columns), so the rows one
    caller may read are "the chunks of the classes the access predicate admits": a few classes, each a
    contiguous range of the class-ordered vector index. That turns a selective ACL filter from scattered
    heap visits into an index-only range scan (migration 0005). Rows are only ever added, by the trigger;
    an unused class costs one small row.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    visibility = models.CharField(max_length=10, choices=Visibility.choices)
    acl = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # md5 of the ACL's text form: unique-constrainable whatever the ACL's length (an index on the array
    # itself would reject ACLs of a few hundred principals).
    acl_key = models.CharField(max_length=32)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "visibility", "acl_key"], name="knowledge_accessclass_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.visibility}/{self.acl}"


class SourceAcl(models.Model):
    """A principal in a source's default ACL (see Source.default_acl)."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="default_acl_entries")
    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "principal"], name="knowledge_sourceacl_unique")]

    def __str__(self) -> str:
        return f"{self.principal} by default on {self.source_id}"


class DocumentAcl(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="acl_entries")
    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="acl_entries")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["document", "principal"], name="knowledge_acl_unique")]

    def __str__(self) -> str:
        return f"{self.principal} may read {self.document_id}"


class DocumentGrant(models.Model):
    """A reader added in the app on top of a document's own access: an admin granting an access request or
    adding a reader on the document's sharing panel.

    Kept apart from DocumentAcl (the access the document's source, upload or connector gave it) so that no
    re-ingest or permission sync, which rewrite DocumentAcl wholesale, can undo it: the document's effective
    `acl` array is the union of both tables (knowledge_document_acl_refresh, knowledge/sql/__init__.py). Removing a
    grant removes only what the grant added.
    """

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="grants")
    principal = models.ForeignKey(Principal, on_delete=models.CASCADE, related_name="+")
    granted_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    # Why it exists, as people read it: "access request #12", "added on the sharing panel".
    reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["document", "principal"], name="knowledge_grant_unique")]

    def __str__(self) -> str:
        return f"{self.principal} granted {self.document_id}"


class EmbeddingSpace(models.Model):
    """A (model, dimension) pair. Vectors from different spaces are never compared; exactly one space
    is active for querying."""

    model_id = models.CharField(max_length=200)
    dimension = models.PositiveIntegerField()
    is_active = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model_id", "dimension"], name="knowledge_space_unique"),
            models.UniqueConstraint(fields=["is_active"], condition=Q(is_active=True),
                                    name="knowledge_space_one_active"),
            models.CheckConstraint(condition=Q(dimension__gt=0), name="knowledge_space_dimension_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.model_id} ({self.dimension}d)"


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    text = models.TextField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    heading_path = models.CharField(max_length=1000, blank=True)
    token_count = models.PositiveIntegerField()
    # Where the span sits in the original file, for viewers and citations: "page 3", "pages 3–4", "slide 2",
    # "sheet Budget". Empty for records without pages.
    location = models.CharField(max_length=200, blank=True, default="", db_default="")
    # The text's sentences, headings and list items, [[start, end, kind], ...] in chunk offsets
    # (knowledge.structure), read once at ingest; empty for chunks written before it was stored (read on demand).
    structure = models.JSONField(default=list, blank=True, db_default=[])
    # Trigger-maintained copies of the document's access columns (see module docstring).
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", editable=False)
    visibility = models.CharField(max_length=10, choices=Visibility.choices, editable=False)
    acl = ArrayField(models.BigIntegerField(), default=list, blank=True, editable=False)
    access_class = models.ForeignKey("AccessClass", null=True, blank=True, editable=False, on_delete=models.DO_NOTHING,
                                     related_name="+", db_index=False)
    search = models.GeneratedField(
        expression=SearchVector("heading_path", weight="A", config="english")
        + SearchVector("text", weight="B", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    embedding = VectorField(dimensions=DEFAULT_INDEX_DIMENSION, null=True, blank=True)
    embedding_space = models.ForeignKey(EmbeddingSpace, null=True, blank=True, on_delete=models.SET_NULL,
                                        related_name="chunks")
    embedded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["document_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["document", "ordinal"], name="knowledge_chunk_unique_ordinal"),
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="knowledge_chunk_nonempty_span"),
            models.CheckConstraint(
                condition=Q(embedding__isnull=True) | Q(embedding_space__isnull=False),
                name="knowledge_chunk_embedding_has_space",
            ),
        ]
        indexes = [
            GinIndex(fields=["search"], name="knowledge_chunk_search_gin"),
            # ef_construction 128, not pgvector's 64: at 1M chunks the 64 graph left chunks unreachable (0018).
            HnswIndex(name="knowledge_chunk_embedding_hnsw", fields=["embedding"], m=16, ef_construction=128,
                      opclasses=["vector_cosine_ops"]),
            models.Index(fields=["tenant", "visibility"], name="knowledge_chunk_tenant_vis_idx"),
            GinIndex(fields=["acl"], name="knowledge_chunk_acl_gin"),
            # The lexical channel's candidates for a caller who may read a small share: a bitmap of their access
            # classes ANDed with the full-text match (knowledge.retrieval.lexical; `acl &&` cannot do it under
            # row-level security, the operator not being leakproof).
            models.Index(fields=["access_class"], name="knowledge_chunk_class_idx"),
            models.Index(fields=["embedding_space"], name="knowledge_chunk_space_idx",
                         condition=Q(embedding__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"


class ConfigurationFault(models.Model):
    """A misconfiguration noticed at run time (e.g. embedder dimension ≠ index dimension), reported
    once while open instead of once per document."""

    code = models.CharField(max_length=64)
    message = models.TextField()
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now=True)
    occurrences = models.PositiveIntegerField(default=1)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-last_seen"]
        constraints = [
            models.UniqueConstraint(fields=["code"], condition=Q(resolved_at__isnull=True),
                                    name="knowledge_fault_one_open_per_code"),
        ]

    def __str__(self) -> str:
        return f"{self.code}: {self.message[:60]}"


class GroundingMemo(models.Model):
    """Tier (a) of grounding lookups: a stored response for an exact (name, fingerprint) request.

    Keyed by tenant *and* the caller's principal-set hash: a response built from what one caller may
    read is never served to a caller with other rights. Cited chunks are re-checked on serve."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    principal_hash = models.CharField(max_length=64)
    name = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=128)
    response = models.JSONField()
    chunk_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    hits = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "principal_hash", "name", "fingerprint"],
                                    name="knowledge_memo_unique_request"),
        ]
        indexes = [GinIndex(fields=["chunk_ids"], name="knowledge_memo_chunks_gin")]

    def __str__(self) -> str:
        return f"{self.name}:{self.fingerprint[:12]}"


class UploadBatch(models.Model):
    """Files one person uploaded into a source at once; processed item by item after commit."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting"
        PROCESSING = "processing", "Processing"
        FINISHED = "finished", "Finished"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="upload_batches")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    # An admin service key's job name, when no user uploaded (processing then acts as that admin service).
    service_name = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=["pending", "processing", "finished"]),
                                   name="knowledge_uploadbatch_status"),
            models.CheckConstraint(condition=Q(finished_at__isnull=True) | Q(status="finished"),
                                   name="knowledge_uploadbatch_finished_has_status"),
        ]
        indexes = [models.Index(fields=["tenant", "created_by", "-created_at"], name="knowledge_upload_user_idx")]

    def __str__(self) -> str:
        return f"upload {self.pk} into {self.source_id}"


class UploadItem(models.Model):
    """One file (or zip member) of a batch. `content` is kept only until the item is processed."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting"
        PROCESSING = "processing", "Processing"
        ADDED = "added", "Added"
        UPDATED = "updated", "Updated"
        UNCHANGED = "unchanged", "Unchanged"
        REFUSED = "refused", "Refused"
        FAILED = "failed", "Failed"

    DONE = ("added", "updated", "unchanged", "refused", "failed")

    batch = models.ForeignKey(UploadBatch, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=512)
    size = models.BigIntegerField(default=0)
    content = models.BinaryField(null=True, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    reason = models.CharField(max_length=500, blank=True, default="")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    title = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        ordering = ["batch_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="knowledge_uploaditem_unique_position"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "processing", "added", "updated", "unchanged", "refused",
                                        "failed"]),
                name="knowledge_uploaditem_status"),
            models.CheckConstraint(condition=~Q(status__in=["refused", "failed"]) | ~Q(reason=""),
                                   name="knowledge_uploaditem_refusal_has_reason"),
            models.CheckConstraint(condition=Q(size__gte=0), name="knowledge_uploaditem_size_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"


class DocumentLink(models.Model):
    """A link from one record to another (`knowledge.record_links`): a Markdown/HTML link, a `[[Page]]` link or a
    ticket key mentioned in the text. Written at ingest from the body; `target` is the document of the same tenant
    the (kind, key) reference resolves to, NULL while none does (a link to a record not ingested yet resolves when
    it arrives; a deleted target leaves the link dangling until another record takes its key)."""

    class Kind(models.TextChoices):
        URL = "url", "Link (URL)"
        DOC = "doc", "Link (record viewer)"
        WIKI = "wiki", "Wiki link"
        TICKET = "ticket", "Ticket key"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="links_out")
    target = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="links_in")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    key = models.CharField(max_length=500)
    anchor = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        db_table = "knowledge_document_link"
        ordering = ["source_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["source", "kind", "key"], name="knowledge_link_unique_ref"),
            models.CheckConstraint(condition=Q(kind__in=["url", "doc", "wiki", "ticket"]), name="knowledge_link_kind"),
            models.CheckConstraint(condition=~Q(target=models.F("source")), name="knowledge_link_not_self"),
            models.CheckConstraint(condition=~Q(key=""), name="knowledge_link_key_not_empty"),
        ]
        indexes = [
            models.Index(fields=["tenant", "kind", "key"], name="knowledge_link_ref_idx",
                         condition=Q(target__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} → {self.kind}:{self.key}"


class CorpusStatistics(models.Model):
    """How often each word occurs in one tenant's shared records: what BM25, the refusal gate and the hint probe
    weigh a question's words by (knowledge.retrieval.statistics). Counted per tenant so that no tenant's records
    move another's rankings or answers — statistics pooled across tenants would let one tenant learn, from the order
    of its own results, which words another tenant's records are full of. Counted over the workspace-visible
    records only, which every reader of the tenant shares, so that no restricted record moves the results of a
    caller who cannot read it. A caller's weights combine their own tenant's row with the platform corpus's.

    Counted (knowledge.services.statistics) over the tenant's workspace-visible chunks, or an even sample of them;
    `lexemes` keeps the commonest (Postgres english lexemes, with `counts`: chunks of the sample holding each), and
    `truncated` says whether rarer ones were left out. Recounted when the tenant's shared chunk count has moved."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, primary_key=True, related_name="+")
    chunks = models.PositiveIntegerField()  # the tenant's workspace-visible chunks when counted
    sampled = models.PositiveIntegerField()  # the chunks the lexemes were counted in
    average_tokens = models.FloatField()
    lexemes = ArrayField(models.TextField(), default=list, blank=True)
    counts = ArrayField(models.PositiveIntegerField(), default=list, blank=True)
    truncated = models.BooleanField(default=False)
    counted_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "corpus statistics"
        constraints = [
            models.CheckConstraint(condition=Q(sampled__lte=models.F("chunks")),
                                   name="knowledge_corpus_statistics_sample_within"),
            models.CheckConstraint(
                condition=models.lookups.Exact(models.Func(models.F("lexemes"), function="cardinality"),
                                               models.Func(models.F("counts"), function="cardinality")),
                name="knowledge_corpus_statistics_counts_aligned"),
        ]

    def __str__(self) -> str:
        return f"corpus statistics of tenant {self.tenant_id}"
