"""The findings ontology: which relations an extractor may propose, and how each one consolidates.

`RelationType` is the vocabulary the extractors, the grounding audit and the consolidation rules all read;
the claims derived from the corpus follow it.
"""

from __future__ import annotations

from django.contrib.postgres.constraints import ExclusionConstraint
from django.contrib.postgres.fields import DateTimeRangeField, RangeOperators
from django.contrib.postgres.indexes import GinIndex, GistIndex
from django.db import models
from django.db.models import F, Func, Q
from django.db.models.lookups import Exact
from pgvector.django import VectorField

from knowledge.models import DEFAULT_INDEX_DIMENSION


class RelationType(models.Model):
    """One predicate of the ontology.

    `policy` decides how a new fact meets the facts already claimed (see `findings.consolidation.decide`):
    a `state` relation holds one current value per subject (a new value supersedes the old), a `set`
    relation holds many values at once, an `event` records something that happened at a time, and
    `generic` is reserved for the catch-all `related_to`, which the grounding audit never accepts from a
    model. `phrasings` are lowercase trigger phrases the offline patterns extractor looks for between two
    entities in a sentence.
    """

    class Policy(models.TextChoices):
        STATE = "state", "State (one current value)"
        SET = "set", "Set (many values)"
        EVENT = "event", "Event (something that happened)"
        GENERIC = "generic", "Generic (related_to only)"

    GENERIC_NAME = "related_to"

    name = models.CharField(max_length=64, unique=True)
    policy = models.CharField(max_length=16, choices=Policy.choices)
    description = models.TextField(blank=True)
    phrasings = models.JSONField(default=list, blank=True)
    subject_kinds = models.JSONField(default=list, blank=True)
    object_kinds = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "findings_relation_type"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(policy__in=["state", "set", "event", "generic"]),
                name="findings_relation_type_policy_valid",
            ),
            models.CheckConstraint(
                condition=Q(name__regex=r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$"),
                name="findings_relation_type_name_snake_case",
            ),
            # Only the catch-all may be generic, and the catch-all must be generic: the audit rejects it by
            # name, so a second generic predicate would slip through and a non-generic related_to would lie.
            models.CheckConstraint(
                condition=Q(policy="generic", name="related_to") | (~Q(policy="generic") & ~Q(name="related_to")),
                name="findings_relation_type_generic_is_related_to",
            ),
            # The extractor iterates phrasings as a list of strings; a JSON object or scalar there would only fail
            # later, at extraction time.
            models.CheckConstraint(
                condition=Exact(
                    Func(F("phrasings"), function="jsonb_typeof", output_field=models.CharField()), "array"
                ),
                name="findings_relation_type_phrasings_is_array",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.policy})"


# --- claims ------------------------------------------------------------------------------------------------
#
# A claim carries two time ranges (bi-temporal): `valid` says when the fact was true in the world, `recorded`
# says when we held this row as our belief. A row is *current* while upper(recorded) is infinite; revising it
# closes `recorded` at now() instead of deleting anything, so "what did we know at R" stays answerable.


class Entity(models.Model):
    """A named thing claims are about, per tenant. `key` is `findings.audit.entity_key(name)`.

    `merged_into` makes this entity one node with another in the graph (findings.graph.resolution): its claims
    stay as written and the graph reads them as the other's, so a merge is undone by clearing it. A merged
    entity points at a canonical one, never along a chain (the merge service refuses; the check forbids a
    self-merge)."""

    tenant = models.ForeignKey("platform.Tenant", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=300)
    key = models.CharField(max_length=300)
    kind = models.CharField(max_length=64, blank=True)
    merged_into = models.ForeignKey("self", null=True, blank=True, on_delete=models.RESTRICT, related_name="merged")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "findings_entity"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "key"], name="findings_entity_unique_key"),
            models.CheckConstraint(condition=~Q(merged_into=F("id")), name="findings_entity_not_merged_into_self"),
        ]
        indexes = [GinIndex(fields=["key"], opclasses=["gin_trgm_ops"], name="findings_entity_key_trgm")]

    def __str__(self) -> str:
        return self.name


class Claim(models.Model):
    """One grounded fact with its bi-temporal ranges (see the block comment above).

    `policy` is a copy of the predicate's policy: the exclusion constraint needs it in the row, and a
    relation's policy is not meant to change under existing claims. `object_key` is the object as identity
    sees it (the entity key, or the folded literal). `embedding` is the statement's vector in the knowledge
    index's dimension, made only once similarity decides something about it (findings/README.md, "Embedded
    when compared"): NULL for a state relation, for a claim alone in its slot, and when no embedder runs;
    matching then falls back to text similarity.
    """

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    tenant = models.ForeignKey("platform.Tenant", on_delete=models.CASCADE, related_name="+")
    identity = models.UUIDField()
    # RESTRICT, not PROTECT: an entity or relation type cannot be deleted while a claim uses it, except when
    # the claim goes in the same deletion (a tenant deleted with everything in it).
    subject = models.ForeignKey(Entity, on_delete=models.RESTRICT, related_name="claims")
    predicate = models.ForeignKey(RelationType, on_delete=models.RESTRICT, related_name="claims")
    policy = models.CharField(max_length=16)
    object_entity = models.ForeignKey(Entity, null=True, blank=True, on_delete=models.RESTRICT,
                                      related_name="object_claims")
    object_value = models.TextField()
    object_key = models.TextField()
    statement = models.TextField()
    perspective = models.TextField(default="", blank=True)
    scope = models.TextField(default="", blank=True)
    valid = DateTimeRangeField()
    recorded = DateTimeRangeField()
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="supersedes")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    # Closed because it was shown false (a REFUTE verdict, a rejected review item), not because a later value
    # replaced it. A replaced claim still held for its own (cut) valid period; a refuted one never held. Its
    # valid range is left as written, so the range alone cannot tell the two apart.
    refuted = models.BooleanField(default=False, db_default=False)  # raw INSERTs (findings.sql) leave it out
    embedding = VectorField(dimensions=DEFAULT_INDEX_DIMENSION, null=True, blank=True)
    needs_review = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "findings_claim"
        ordering = ["-id"]
        constraints = [
            # One current value per state slot: overlapping validity among current state claims is impossible,
            # whatever write path (writer, admin, raw SQL) tries it.
            ExclusionConstraint(
                name="findings_claim_state_no_overlap",
                expressions=[
                    ("tenant", RangeOperators.EQUAL), ("subject", RangeOperators.EQUAL),
                    ("predicate", RangeOperators.EQUAL), ("perspective", RangeOperators.EQUAL),
                    ("scope", RangeOperators.EQUAL), ("valid", RangeOperators.OVERLAPS),
                ],
                condition=Q(policy="state", recorded__upper_inf=True),
            ),
            # The arbiter of the writer's INSERT … ON CONFLICT DO NOTHING: racing writers converge on one row.
            models.UniqueConstraint(
                fields=["tenant", "identity", "scope", "perspective"], condition=Q(recorded__upper_inf=True),
                name="findings_claim_one_current_identity",
            ),
            # `status` is a readable copy of upper_inf(recorded); the database keeps them in step.
            models.CheckConstraint(
                condition=(Q(status="open", recorded__upper_inf=True)
                           | Q(status="closed", recorded__upper_inf=False)),
                name="findings_claim_status_matches_recorded",
            ),
            models.CheckConstraint(condition=Q(policy__in=["state", "set", "event", "generic"]),
                                   name="findings_claim_policy_valid"),
            models.CheckConstraint(condition=Q(refuted=False) | Q(status="closed"),
                                   name="findings_claim_refuted_is_closed"),
        ]
        indexes = [
            models.Index(fields=["tenant", "subject", "predicate"], name="findings_claim_slot_idx",
                         condition=Q(recorded__upper_inf=True)),
            models.Index(fields=["tenant", "status"], name="findings_claim_status_idx"),
            GistIndex(fields=["valid"], name="findings_claim_valid_gist"),
            GistIndex(fields=["recorded"], name="findings_claim_rec_gist"),
        ]

    def __str__(self) -> str:
        return self.statement[:80]


class ClaimEvidence(models.Model):
    """Where a claim comes from: the quote and its offsets in the chunk text. A repeat of a fact from another
    chunk adds a row here, not a claim. Evidence goes with its chunk (CASCADE): a claim is only as readable as
    its evidence."""

    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="evidence")
    document = models.ForeignKey("knowledge.Document", on_delete=models.CASCADE, related_name="+")
    chunk = models.ForeignKey("knowledge.Chunk", on_delete=models.CASCADE, related_name="+")
    quote = models.TextField()
    quote_start = models.PositiveIntegerField()
    quote_end = models.PositiveIntegerField()
    # The dated id of the extractor's rule set or model that found this quote ("extract-patterns:2026-12",
    # "openai:<model>"); empty for evidence written before versions were kept, or by hand.
    extractor = models.CharField(max_length=40, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "findings_claim_evidence"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "chunk", "quote_start"], name="findings_evidence_unique"),
            models.CheckConstraint(condition=Q(quote_end__gt=F("quote_start")), name="findings_evidence_span"),
        ]
        indexes = [models.Index(fields=["document"], name="findings_evidence_doc_idx")]

    def __str__(self) -> str:
        return f"claim {self.claim_id} ← chunk {self.chunk_id}"


class ReviewItem(models.Model):
    """A claim written as ADD without a model verdict although it resembles a current claim (similarity in the
    borderline band): a person decides later."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"

    tenant = models.ForeignKey("platform.Tenant", on_delete=models.CASCADE, related_name="+")
    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="review_items")
    similar_claim = models.ForeignKey(Claim, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    similarity = models.FloatField()
    reason = models.CharField(max_length=64, default="ambiguous_without_model")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "findings_review_item"
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["claim"], name="findings_review_one_per_claim")]

    def __str__(self) -> str:
        # Not the similarity: the admin names an item by str() (titles, history), also where the pair is hidden.
        return f"review of claim {self.claim_id}"


class ProjectionQuality(models.Model):
    """What the grounding audit kept of one extractor run over one chunk (`GroundedProjection.quality`)."""

    chunk = models.ForeignKey("knowledge.Chunk", on_delete=models.CASCADE, related_name="+")
    tenant = models.ForeignKey("platform.Tenant", on_delete=models.CASCADE, related_name="+")
    extractor = models.CharField(max_length=32)
    proposed = models.PositiveIntegerField()
    accepted = models.PositiveIntegerField()
    reasons = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "findings_projection_quality"
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=Q(accepted__lte=F("proposed")),
                                   name="findings_quality_accepted_le_proposed"),
            # One audit per chunk and extractor: a re-delivered or forced extraction replaces it, never adds one.
            models.UniqueConstraint(fields=["chunk", "extractor"], name="findings_quality_one_per_chunk"),
        ]

    def __str__(self) -> str:
        return f"chunk {self.chunk_id}: {self.accepted}/{self.proposed}"


class ModelUsage(models.Model):
    """Model calls and tokens per tenant, purpose and day; updated with F() increments, never read-modify-write."""

    tenant = models.ForeignKey("platform.Tenant", on_delete=models.CASCADE, related_name="+")
    purpose = models.CharField(max_length=32)
    day = models.DateField()
    calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)

    class Meta:
        db_table = "findings_model_usage"
        ordering = ["-day", "purpose"]
        constraints = [models.UniqueConstraint(fields=["tenant", "purpose", "day"], name="findings_usage_unique")]

    def __str__(self) -> str:
        return f"{self.purpose} {self.day}: {self.calls} calls"


# --- the entity graph: aliases and merges (findings.graph) ------------------------------------------------------


class EntityAlias(models.Model):
    """Another name of an entity ("Priya" for "Priya Nair"). `key` is `entity_key(alias)`; query linking matches
    it exactly or by trigram similarity. An alias a merge added names that merge, and goes when it is undone."""

    class Origin(models.TextChoices):
        MERGE = "merge", "Merged entity's name"
        MANUAL = "manual", "Added by a person"

    tenant = models.ForeignKey("platform.Tenant", on_delete=models.CASCADE, related_name="+")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="aliases")
    alias = models.CharField(max_length=300)
    key = models.CharField(max_length=300)
    origin = models.CharField(max_length=8, choices=Origin.choices)
    merge = models.ForeignKey("EntityMerge", null=True, blank=True, on_delete=models.CASCADE, related_name="aliases")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "findings_entity_alias"
        ordering = ["alias"]
        constraints = [
            models.UniqueConstraint(fields=["entity", "key"], name="findings_alias_unique_per_entity"),
            models.CheckConstraint(condition=~Q(key=""), name="findings_alias_key_not_empty"),
            models.CheckConstraint(condition=Q(origin__in=["merge", "manual"]), name="findings_alias_origin_valid"),
            models.CheckConstraint(condition=Q(origin="merge", merge__isnull=False)
                                   | Q(origin="manual", merge__isnull=True), name="findings_alias_merge_origin"),
        ]
        indexes = [
            models.Index(fields=["tenant", "key"], name="findings_alias_key_idx"),
            GinIndex(fields=["key"], opclasses=["gin_trgm_ops"], name="findings_alias_key_trgm"),
        ]

    def __str__(self) -> str:
        return f"{self.alias} → {self.entity_id}"


class EntityMerge(models.Model):
    """The log of entity merges: who merged which entity into which, why, and whether it was undone. A row is
    never deleted; an unmerge stamps `undone_at` (and `undone_by`)."""

    tenant = models.ForeignKey("platform.Tenant", on_delete=models.CASCADE, related_name="+")
    merged = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="merge_log")
    into = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="absorbed_log")
    reason = models.CharField(max_length=200)
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        db_table = "findings_entity_merge"
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(merged=F("into")), name="findings_merge_not_self"),
            # At most one live merge per entity: the live row is what an unmerge undoes.
            models.UniqueConstraint(fields=["merged"], condition=Q(undone_at__isnull=True),
                                    name="findings_merge_one_live"),
            models.CheckConstraint(condition=Q(undone_at__isnull=True) | ~Q(undone_by=""),
                                   name="findings_merge_undone_has_actor"),
        ]

    def __str__(self) -> str:
        return f"{self.merged_id} → {self.into_id}"
