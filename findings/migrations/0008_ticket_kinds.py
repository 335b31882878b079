"""Tickets as endpoints of the ontology: a ticket's assignee works on it (`works_on`) and a ticket has a status
(`status`). The offline extractor reads both from a ticket's field lines ("Assignee: Priya Nair",
"Status: Closed"; findings.extractors.fields), and an issue key's form says the entity is a ticket, so the
relations' kinds say it may be one. Only the kind lists change; no relation is added.
"""

from django.db import migrations

TICKET_KINDS = (("works_on", "object_kinds"), ("status", "subject_kinds"))
TICKET = "ticket"


def add(apps, schema_editor):
    RelationType = apps.get_model("findings", "RelationType")
    for name, field in TICKET_KINDS:
        relation = RelationType.objects.filter(name=name).first()
        if relation is not None and TICKET not in getattr(relation, field):
            setattr(relation, field, [*getattr(relation, field), TICKET])
            relation.save(update_fields=[field])


def remove(apps, schema_editor):
    RelationType = apps.get_model("findings", "RelationType")
    for name, field in TICKET_KINDS:
        relation = RelationType.objects.filter(name=name).first()
        if relation is not None and TICKET in getattr(relation, field):
            setattr(relation, field, [k for k in getattr(relation, field) if k != TICKET])
            relation.save(update_fields=[field])


class Migration(migrations.Migration):
    dependencies = [("findings", "0007_graph")]

    operations = [migrations.RunPython(add, remove)]
