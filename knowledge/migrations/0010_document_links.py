"""Record links (knowledge.record_links), and the invariant a link stays inside one tenant: its source and target
documents belong to its tenant, whatever the write path (a trigger: a check constraint cannot read other rows).
`manage.py links_backfill` fills the links of documents ingested before this migration."""

import django.db.models.deletion
from django.db import migrations, models


SAME_TENANT = """
CREATE OR REPLACE FUNCTION knowledge_document_link_same_tenant() RETURNS trigger AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM knowledge_document d WHERE d.id = NEW.source_id AND d.tenant_id = NEW.tenant_id)
       OR (NEW.target_id IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM knowledge_document d WHERE d.id = NEW.target_id AND d.tenant_id = NEW.tenant_id)) THEN
        RAISE EXCEPTION 'a record link joins documents of its own tenant only' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER knowledge_document_link_same_tenant
    BEFORE INSERT OR UPDATE OF tenant_id, source_id, target_id ON knowledge_document_link
    FOR EACH ROW EXECUTE FUNCTION knowledge_document_link_same_tenant();
"""
SAME_TENANT_REVERSE = """
DROP TRIGGER IF EXISTS knowledge_document_link_same_tenant ON knowledge_document_link;
DROP FUNCTION IF EXISTS knowledge_document_link_same_tenant();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0009_documentacl_statement_triggers'),
        ('platform', '0002_row_level_security'),
    ]

    operations = [
        migrations.CreateModel(
            name='DocumentLink',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('url', 'Link (URL)'), ('doc', 'Link (record viewer)'), ('wiki', 'Wiki link'), ('ticket', 'Ticket key')], max_length=8)),
                ('key', models.CharField(max_length=500)),
                ('anchor', models.CharField(blank=True, default='', max_length=300)),
                ('source', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='links_out', to='knowledge.document')),
                ('target', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='links_in', to='knowledge.document')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='platform.tenant')),
            ],
            options={
                'db_table': 'knowledge_document_link',
                'ordering': ['source_id', 'id'],
                'indexes': [models.Index(condition=models.Q(('target__isnull', True)), fields=['tenant', 'kind', 'key'], name='knowledge_link_ref_idx')],
                'constraints': [models.UniqueConstraint(fields=('source', 'kind', 'key'), name='knowledge_link_unique_ref'), models.CheckConstraint(condition=models.Q(('kind__in', ['url', 'doc', 'wiki', 'ticket'])), name='knowledge_link_kind'), models.CheckConstraint(condition=models.Q(('target', models.F('source')), _negated=True), name='knowledge_link_not_self'), models.CheckConstraint(condition=models.Q(('key', ''), _negated=True), name='knowledge_link_key_not_empty')],
            },
        ),
        migrations.RunSQL(SAME_TENANT, reverse_sql=SAME_TENANT_REVERSE),
    ]
