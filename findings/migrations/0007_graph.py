"""The entity graph's resolution tables (aliases, the merge log, `Entity.merged_into`) and their invariants that a
check constraint cannot hold, because they read other rows (triggers):
- a merge joins two entities of one tenant, and into a canonical entity: the target is not itself merged, and an
  entity others are merged into cannot be merged away (no chains, so a node is one `coalesce(merged_into, id)`);
- an alias and a merge log row belong to their entities' tenant.
"""

import django.contrib.postgres.indexes
import django.db.models.deletion
from django.db import migrations, models


INVARIANTS = """
CREATE OR REPLACE FUNCTION findings_entity_merge_valid() RETURNS trigger AS $$
BEGIN
    IF NEW.merged_into_id IS NOT NULL AND (
        NOT EXISTS (SELECT 1 FROM findings_entity t WHERE t.id = NEW.merged_into_id AND t.tenant_id = NEW.tenant_id
                                                      AND t.merged_into_id IS NULL)
        OR EXISTS (SELECT 1 FROM findings_entity c WHERE c.merged_into_id = NEW.id)) THEN
        RAISE EXCEPTION 'an entity merges into a canonical entity of its own tenant, and only when none is merged into it'
              USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER findings_entity_merge_valid
    BEFORE INSERT OR UPDATE OF merged_into_id, tenant_id ON findings_entity
    FOR EACH ROW EXECUTE FUNCTION findings_entity_merge_valid();

CREATE OR REPLACE FUNCTION findings_entity_row_same_tenant() RETURNS trigger AS $$
DECLARE
    entity_ids bigint[];
BEGIN
    IF TG_TABLE_NAME = 'findings_entity_alias' THEN
        entity_ids := ARRAY[NEW.entity_id];
    ELSE
        entity_ids := ARRAY[NEW.merged_id, NEW.into_id];
    END IF;
    IF EXISTS (SELECT 1 FROM findings_entity e WHERE e.id = ANY(entity_ids) AND e.tenant_id <> NEW.tenant_id) THEN
        RAISE EXCEPTION '% belongs to its entities'' tenant', TG_TABLE_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER findings_entity_alias_same_tenant
    BEFORE INSERT OR UPDATE ON findings_entity_alias
    FOR EACH ROW EXECUTE FUNCTION findings_entity_row_same_tenant();
CREATE TRIGGER findings_entity_merge_same_tenant
    BEFORE INSERT OR UPDATE ON findings_entity_merge
    FOR EACH ROW EXECUTE FUNCTION findings_entity_row_same_tenant();
"""
INVARIANTS_REVERSE = """
DROP TRIGGER IF EXISTS findings_entity_merge_valid ON findings_entity;
DROP TRIGGER IF EXISTS findings_entity_alias_same_tenant ON findings_entity_alias;
DROP TRIGGER IF EXISTS findings_entity_merge_same_tenant ON findings_entity_merge;
DROP FUNCTION IF EXISTS findings_entity_merge_valid();
DROP FUNCTION IF EXISTS findings_entity_row_same_tenant();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('findings', '0006_fleet_size_and_revisions'),
        ('platform', '0002_row_level_security'),
    ]

    operations = [
        migrations.CreateModel(
            name='EntityAlias',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('alias', models.CharField(max_length=300)),
                ('key', models.CharField(max_length=300)),
                ('origin', models.CharField(choices=[('merge', "Merged entity's name"), ('manual', 'Added by a person')], max_length=8)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'db_table': 'findings_entity_alias',
                'ordering': ['alias'],
            },
        ),
        migrations.CreateModel(
            name='EntityMerge',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reason', models.CharField(max_length=200)),
                ('actor', models.CharField(max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('undone_at', models.DateTimeField(blank=True, null=True)),
                ('undone_by', models.CharField(blank=True, default='', max_length=200)),
            ],
            options={
                'db_table': 'findings_entity_merge',
                'ordering': ['-id'],
            },
        ),
        migrations.AddField(
            model_name='entity',
            name='merged_into',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.RESTRICT, related_name='merged', to='findings.entity'),
        ),
        migrations.AddIndex(
            model_name='entity',
            index=django.contrib.postgres.indexes.GinIndex(fields=['key'], name='findings_entity_key_trgm', opclasses=['gin_trgm_ops']),
        ),
        migrations.AddConstraint(
            model_name='entity',
            constraint=models.CheckConstraint(condition=models.Q(('merged_into', models.F('id')), _negated=True), name='findings_entity_not_merged_into_self'),
        ),
        migrations.AddField(
            model_name='entityalias',
            name='entity',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='aliases', to='findings.entity'),
        ),
        migrations.AddField(
            model_name='entityalias',
            name='tenant',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='platform.tenant'),
        ),
        migrations.AddField(
            model_name='entitymerge',
            name='into',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='absorbed_log', to='findings.entity'),
        ),
        migrations.AddField(
            model_name='entitymerge',
            name='merged',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='merge_log', to='findings.entity'),
        ),
        migrations.AddField(
            model_name='entitymerge',
            name='tenant',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='platform.tenant'),
        ),
        migrations.AddField(
            model_name='entityalias',
            name='merge',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='aliases', to='findings.entitymerge'),
        ),
        migrations.AddConstraint(
            model_name='entitymerge',
            constraint=models.CheckConstraint(condition=models.Q(('merged', models.F('into')), _negated=True), name='findings_merge_not_self'),
        ),
        migrations.AddConstraint(
            model_name='entitymerge',
            constraint=models.UniqueConstraint(condition=models.Q(('undone_at__isnull', True)), fields=('merged',), name='findings_merge_one_live'),
        ),
        migrations.AddConstraint(
            model_name='entitymerge',
            constraint=models.CheckConstraint(condition=models.Q(('undone_at__isnull', True), models.Q(('undone_by', ''), _negated=True), _connector='OR'), name='findings_merge_undone_has_actor'),
        ),
        migrations.AddIndex(
            model_name='entityalias',
            index=models.Index(fields=['tenant', 'key'], name='findings_alias_key_idx'),
        ),
        migrations.AddIndex(
            model_name='entityalias',
            index=django.contrib.postgres.indexes.GinIndex(fields=['key'], name='findings_alias_key_trgm', opclasses=['gin_trgm_ops']),
        ),
        migrations.AddConstraint(
            model_name='entityalias',
            constraint=models.UniqueConstraint(fields=('entity', 'key'), name='findings_alias_unique_per_entity'),
        ),
        migrations.AddConstraint(
            model_name='entityalias',
            constraint=models.CheckConstraint(condition=models.Q(('key', ''), _negated=True), name='findings_alias_key_not_empty'),
        ),
        migrations.AddConstraint(
            model_name='entityalias',
            constraint=models.CheckConstraint(condition=models.Q(('origin__in', ['merge', 'manual'])), name='findings_alias_origin_valid'),
        ),
        migrations.AddConstraint(
            model_name='entityalias',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('merge__isnull', False), ('origin', 'merge')), models.Q(('merge__isnull', True), ('origin', 'manual')), _connector='OR'), name='findings_alias_merge_origin'),
        ),
        migrations.RunSQL(INVARIANTS, reverse_sql=INVARIANTS_REVERSE),
    ]
