"""Conversations and their messages, refusal gap events, and the authority-scoped answer cache."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from pgvector.django import VectorField

from groundwork.models import Tenant


class Outcome(models.TextChoices):
    ANSWERED = "answered"
    NOT_FOUND = "not_found"
    PARTIAL = "partial"  # part of a compound question answered; the rest missing or hidden
    UNAVAILABLE = "unavailable"  # retrieval could not run
    SMALL_TALK = "small_talk"  # thanks, a greeting, "what can you do": no search, no citations (chat.smalltalk)


class Mode(models.TextChoices):
    GROUNDING = "grounding"  # answered strictly from search results, cited
    CONVERSATIONAL = "conversational"  # the model's general knowledge; no citations, no "not found"


class Conversation(models.Model):
    """Belongs to its creator: a user, or a service principal (by name) when a service key asked."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="+")
    service_name = models.CharField(max_length=200, blank=True)
    title = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(user__isnull=False) & Q(service_name=""))
                | (Q(user__isnull=True) & ~Q(service_name="")),
                name="chat_conversation_one_owner",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "user", "-created_at"], name="chat_conv_owner_idx")]

    def __str__(self) -> str:
        return self.title


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=10, choices=Role.choices)
    content = models.TextField()
    outcome = models.CharField(max_length=12, choices=Outcome.choices, blank=True)
    mode = models.CharField(max_length=15, choices=Mode.choices, blank=True)
    corpus = models.CharField(max_length=10, blank=True)  # "tenant" or "empty" (nothing searchable)
    citations = models.JSONField(default=list, blank=True)  # record-level citations the answer uses
    # The records behind the earlier answers a model was shown as conversation history: the answer may restate
    # them without citing them, so reading it back re-checks these as well as its citations.
    context_document_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    hint = models.JSONField(null=True, blank=True)  # hidden-record hint: existence, source system, contact
    # The effective principal set the answer was produced under (see Authority.principal_hash).
    principal_hash = models.CharField(max_length=64, blank=True)
    verification = models.JSONField(default=dict, blank=True)
    # Retrieved by full text alone because the embedder failed or timed out: the answer stands on its citations,
    # but paraphrased evidence may have been missed.
    lexical_only = models.BooleanField(default=False, db_default=False)
    # The version id of the answerability judge that decided the answer ("reader:2026-12", "rules:2026-12-06"; empty
    # when none did: small talk, a statement, an answer from the cache of an older row).
    judge = models.CharField(max_length=40, blank=True, default="", db_default="")
    # The version id of the rule set that composed the answer from evidence sentences ("compose:2026-12-06"; empty
    # when a model wrote it, for a fixed reply, or an answer served from the cache).
    composer = models.CharField(max_length=40, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["conversation", "created_at"], name="chat_msg_conv_idx")]

    def __str__(self) -> str:
        # No content: the admin shows this in titles and as a related row, where the answer's own re-check
        # (chat.admin.MessageAdmin) does not reach.
        return f"{self.role} message {self.pk}"


class GapEvent(models.Model):
    """A refused question, canonicalised so rephrasings count together. The kinds are never merged:
    missing knowledge calls for writing it down, a retrieval failure for fixing search."""

    class Kind(models.TextChoices):
        KNOWLEDGE_MISSING = "knowledge_missing"
        RETRIEVAL_FAILED = "retrieval_failed"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    canonical = models.CharField(max_length=500)
    example = models.TextField()  # the first wording asked
    cause = models.CharField(max_length=64, blank=True)  # RetrievalUnavailable.cause or the gate's reason
    count = models.PositiveIntegerField(default=1)
    first_seen = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "kind", "canonical"], name="chat_gap_unique"),
            models.CheckConstraint(condition=Q(count__gte=1), name="chat_gap_count_positive"),
        ]
        indexes = [models.Index(fields=["tenant", "-count"], name="chat_gap_frequency_idx")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.canonical} ({self.count})"


class AnswerCache(models.Model):
    """A grounded answer reusable by callers with exactly the same rights (tenant + principal hash) and the
    same provider/model. Every citation carries its document's content hash so serving can re-check it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    principal_hash = models.CharField(max_length=64)
    provider = models.CharField(max_length=200)
    question_key = models.CharField(max_length=64)  # sha256 of the normalised question (the exact scope)
    question = models.TextField()
    # The similarity scope: the question's embedding, comparable only within one embedding model.
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    answer = models.TextField()
    citations = models.JSONField(default=list)
    document_ids = ArrayField(models.BigIntegerField(), default=list)
    hits = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "principal_hash", "provider", "question_key"],
                                    name="chat_cache_exact_unique"),
        ]
        indexes = [
            models.Index(fields=["tenant", "principal_hash", "provider"], name="chat_cache_scope_idx"),
            GinIndex(fields=["document_ids"], name="chat_cache_docs_gin"),
        ]

    def __str__(self) -> str:
        return self.question[:60]


class AccessRequest(models.Model):
    """A reader asking the tenant's admins for the records behind a hidden-record hint.

    `document_ids` are computed on the server, under the requester's authority, by the same probe that made
    the hint; they are shown to admins only, never returned to the requester.
    """

    class Status(models.TextChoices):
        OPEN = "open"
        GRANTED = "granted"
        DECLINED = "declined"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="access_requests")
    question = models.TextField()
    document_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="+")
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["requester", "message"], condition=Q(status="open"),
                                    name="chat_access_request_one_open"),
            models.CheckConstraint(
                condition=(Q(status="open") & Q(resolved_at__isnull=True))
                | (~Q(status="open") & Q(resolved_at__isnull=False)),
                name="chat_access_request_resolved_when_closed",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "status", "-created_at"], name="chat_access_req_tenant_idx")]

    def __str__(self) -> str:
        return f"access request {self.pk} ({self.status})"


class AnswerFeedback(models.Model):
    """A reader's thumbs up or down on one of their answers, with an optional reason. One per answer (a second
    vote replaces the first). Downs feed the admins' gaps page beside the refusals: an answer given but judged
    unhelpful is a gap too. `question` and `canonical` are copied at vote time so the page groups rephrasings
    without re-reading the conversation."""

    class Rating(models.TextChoices):
        UP = "up"
        DOWN = "down"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    message = models.OneToOneField(Message, on_delete=models.CASCADE, related_name="feedback")
    rating = models.CharField(max_length=4, choices=Rating.choices)
    reason = models.CharField(max_length=1000, blank=True, default="")
    question = models.TextField(blank=True, default="")
    canonical = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(rating__in=["up", "down"]), name="chat_feedback_rating_valid"),
        ]
        indexes = [models.Index(fields=["tenant", "rating", "-updated_at"], name="chat_feedback_tenant_idx")]

    def __str__(self) -> str:
        return f"{self.rating} on message {self.message_id}"
