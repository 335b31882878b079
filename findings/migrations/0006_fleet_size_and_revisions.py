"""Two additions to the starter vocabulary, so the questions people ask of a changing state can be answered
from claims: how many robots a fleet, site or pilot has (`fleet_size`), and budgets stated as revisions
("the R&D budget was revised to $2.1M").

A phrasing with `{n}` is a value-first template (see findings.extractors.patterns): "{n} robots are in"
reads "12 K2 robots are in the Northgate pilot" as fleet_size(Northgate, "12 K2 robots"). The counted noun is
part of the template, so robots and charging docks never share one state slot.
"""

from django.db import migrations

FLEET_SIZE = ("fleet_size", "state", "How many robots a fleet, site or pilot currently has.",
              ["{n} robots are in", "{n} robots are at", "there are {n} robots in", "there are {n} robots at",
               "fleet is now"],
              ["project", "site", "organisation"], ["value"])
BUDGET_REVISION_PHRASINGS = ["budget was revised to", "budget was raised to", "budget was cut to"]


def add(apps, schema_editor):
    RelationType = apps.get_model("findings", "RelationType")
    name, policy, description, phrasings, subject_kinds, object_kinds = FLEET_SIZE
    RelationType.objects.get_or_create(
        name=name, defaults={"policy": policy, "description": description, "phrasings": phrasings,
                             "subject_kinds": subject_kinds, "object_kinds": object_kinds})
    budget = RelationType.objects.filter(name="budget").first()
    if budget is not None:
        budget.phrasings = list(dict.fromkeys([*budget.phrasings, *BUDGET_REVISION_PHRASINGS]))
        budget.save(update_fields=["phrasings"])


def remove(apps, schema_editor):
    RelationType = apps.get_model("findings", "RelationType")
    RelationType.objects.filter(name=FLEET_SIZE[0], claims__isnull=True).delete()
    budget = RelationType.objects.filter(name="budget").first()
    if budget is not None:
        budget.phrasings = [p for p in budget.phrasings if p not in BUDGET_REVISION_PHRASINGS]
        budget.save(update_fields=["phrasings"])


class Migration(migrations.Migration):
    dependencies = [("findings", "0005_projection_quality_one_per_chunk")]

    operations = [migrations.RunPython(add, remove)]
