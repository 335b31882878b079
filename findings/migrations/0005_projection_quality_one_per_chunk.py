from django.db import migrations, models

# Before the constraint, a re-run extraction added a second audit row for the same chunk and extractor; keep
# the newest of each.
DEDUPLICATE = """
DELETE FROM findings_projection_quality q
 USING findings_projection_quality newer
 WHERE newer.chunk_id = q.chunk_id AND newer.extractor = q.extractor AND newer.id > q.id
"""


class Migration(migrations.Migration):

    dependencies = [
        ('findings', '0004_claims_restrict_not_protect'),
    ]

    operations = [
        migrations.RunSQL(DEDUPLICATE, migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name='projectionquality',
            constraint=models.UniqueConstraint(fields=('chunk', 'extractor'), name='findings_quality_one_per_chunk'),
        ),
    ]
