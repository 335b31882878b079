"""The ontology table and its starter vocabulary for a company knowledge base.

The seed rows are frozen here (not imported from app code) so that this migration keeps producing the same
rows however the app later evolves. Reversing deletes only the rows it seeded.
"""

import django.db.models.lookups
from django.db import migrations, models

# (name, policy, description, phrasings, subject_kinds, object_kinds)
STARTER_RELATIONS = [
    ("role", "state", "The position or title someone currently holds.",
     ["took over as", "was appointed as", "was appointed", "was named", "serves as", "joined as", "works as",
      "became", "is the"],
     ["person"], ["role"]),
    ("owns", "state", "Who is accountable for a system, project, process or document.",
     ["is the owner of", "is responsible for", "took ownership of", "owns", "maintains"],
     ["person", "team"], ["project", "product", "system", "process", "document"]),
    ("status", "state", "The current state of a project, product or initiative.",
     ["is currently", "was marked as", "is now", "status is"],
     ["project", "product", "system", "initiative"], ["value"]),
    ("budget", "state", "The money currently allocated to a project, team or initiative.",
     ["has a budget of", "was budgeted at", "was allocated", "budget is"],
     ["project", "team", "initiative"], ["value"]),
    ("reports_to", "state", "Who someone's line manager is.",
     ["reports directly to", "reports to", "is managed by"],
     ["person"], ["person"]),
    ("located_in", "state", "Where a person, team, office or organisation is based.",
     ["is headquartered in", "is located in", "is based in", "relocated to"],
     ["person", "team", "organisation", "office"], ["place"]),
    ("uses", "set", "A tool, vendor or technology a team or system relies on.",
     ["is built with", "relies on", "runs on", "adopted", "uses"],
     ["person", "team", "project", "system"], ["product", "system", "vendor"]),
    ("member_of", "set", "Membership of a team, committee or organisation.",
     ["is a member of", "belongs to", "is part of", "sits on"],
     ["person", "team"], ["team", "organisation", "committee"]),
    ("works_on", "set", "Projects someone is actively contributing to.",
     ["is working on", "contributes to", "works on"],
     ["person", "team"], ["project", "product"]),
    ("depends_on", "set", "A dependency between projects, systems or deliverables.",
     ["is blocked by", "depends on", "requires"],
     ["project", "system", "product"], ["project", "system", "product"]),
    ("partners_with", "set", "An external partner, supplier or customer relationship.",
     ["partnered with", "partners with", "signed with"],
     ["organisation", "team"], ["organisation"]),
    ("launched", "event", "A product, feature or initiative was launched or released.",
     ["rolled out", "launched", "released", "announced"],
     ["person", "team", "organisation"], ["product", "project", "initiative"]),
    ("shipped", "event", "A deliverable was shipped or deployed.",
     ["shipped", "delivered", "deployed"],
     ["person", "team"], ["product", "project", "system"]),
    ("hired", "event", "Someone was hired or brought on.",
     ["brought on", "recruited", "hired"],
     ["team", "organisation", "person"], ["person"]),
    ("left", "event", "Someone left a team, role or organisation.",
     ["stepped down from", "resigned from", "departed", "left"],
     ["person"], ["team", "organisation", "role"]),
    ("decided", "event", "A decision that was taken by a person or body.",
     ["decided to", "agreed to", "approved", "chose"],
     ["person", "team", "organisation", "committee"], ["value", "project", "initiative"]),
    ("acquired", "event", "An organisation or asset was acquired.",
     ["acquired", "purchased", "bought"],
     ["organisation"], ["organisation", "product"]),
    ("related_to", "generic", "Catch-all link. Never accepted from a model; only declared source tags use it.",
     [], [], []),
]


def seed_relations(apps, schema_editor):
    RelationType = apps.get_model("findings", "RelationType")
    for name, policy, description, phrasings, subject_kinds, object_kinds in STARTER_RELATIONS:
        RelationType.objects.update_or_create(
            name=name,
            defaults={"policy": policy, "description": description, "phrasings": phrasings,
                      "subject_kinds": subject_kinds, "object_kinds": object_kinds},
        )


def unseed_relations(apps, schema_editor):
    RelationType = apps.get_model("findings", "RelationType")
    RelationType.objects.filter(name__in=[row[0] for row in STARTER_RELATIONS]).delete()


class Migration(migrations.Migration):
    dependencies = [("findings", "0001_initial")]

    operations = [
        migrations.CreateModel(
            name="RelationType",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=64, unique=True)),
                ("policy", models.CharField(choices=[("state", "State (one current value)"),
                                                     ("set", "Set (many values)"),
                                                     ("event", "Event (something that happened)"),
                                                     ("generic", "Generic (related_to only)")], max_length=16)),
                ("description", models.TextField(blank=True)),
                ("phrasings", models.JSONField(blank=True, default=list)),
                ("subject_kinds", models.JSONField(blank=True, default=list)),
                ("object_kinds", models.JSONField(blank=True, default=list)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
            options={
                "db_table": "findings_relation_type",
                "ordering": ["name"],
                "constraints": [
                    models.CheckConstraint(condition=models.Q(("policy__in", ["state", "set", "event", "generic"])),
                                           name="findings_relation_type_policy_valid"),
                    models.CheckConstraint(condition=models.Q(("name__regex", "^[a-z][a-z0-9]*(_[a-z0-9]+)*$")),
                                           name="findings_relation_type_name_snake_case"),
                    models.CheckConstraint(
                        condition=models.Q(models.Q(("name", "related_to"), ("policy", "generic")),
                                           models.Q(models.Q(("policy", "generic"), _negated=True),
                                                    models.Q(("name", "related_to"), _negated=True)),
                                           _connector="OR"),
                        name="findings_relation_type_generic_is_related_to"),
                    models.CheckConstraint(
                        condition=django.db.models.lookups.Exact(
                            models.Func(models.F("phrasings"), function="jsonb_typeof",
                                        output_field=models.CharField()), "array"),
                        name="findings_relation_type_phrasings_is_array"),
                ],
            },
        ),
        migrations.RunPython(seed_relations, unseed_relations),
    ]
