"""The findings ontology: which relations an extractor may propose, and how each one consolidates.

Claims themselves live in a later migration; this module only holds `RelationType`, the vocabulary the
extractors, the grounding audit and the consolidation rules all read.
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Func, Q
from django.db.models.lookups import Exact


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
