"""Grants made in the app (DocumentGrant) join each document's effective ACL array, apart from the DocumentAcl
rows a re-ingest or permission sync rewrites, so a granted access request is not undone by the next sync."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


# Frozen copy: the live definitions are knowledge.sql.ACCESS_FUNCTIONS and ACCESS_TRIGGERS.
FORWARD = """
CREATE OR REPLACE FUNCTION knowledge_document_acl_refresh(doc bigint) RETURNS void AS $$
    UPDATE knowledge_document d
       SET acl = coalesce((SELECT array_agg(p.principal_id ORDER BY p.principal_id)
                             FROM (SELECT a.principal_id FROM knowledge_documentacl a WHERE a.document_id = doc
                                   UNION
                                   SELECT g.principal_id FROM knowledge_documentgrant g WHERE g.document_id = doc)
                                  AS p), '{}')
     WHERE d.id = doc;
$$ LANGUAGE sql;

CREATE TRIGGER knowledge_documentgrant_insert_sync
    AFTER INSERT ON knowledge_documentgrant REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_documentacl_rows_changed();
CREATE TRIGGER knowledge_documentgrant_delete_sync
    AFTER DELETE ON knowledge_documentgrant REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_documentacl_rows_changed();
"""

BACKWARD = """
DROP TRIGGER knowledge_documentgrant_insert_sync ON knowledge_documentgrant;
DROP TRIGGER knowledge_documentgrant_delete_sync ON knowledge_documentgrant;
CREATE OR REPLACE FUNCTION knowledge_document_acl_refresh(doc bigint) RETURNS void AS $$
    UPDATE knowledge_document d
       SET acl = coalesce((SELECT array_agg(a.principal_id ORDER BY a.principal_id)
                             FROM knowledge_documentacl a WHERE a.document_id = doc), '{}')
     WHERE d.id = doc;
$$ LANGUAGE sql;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0014_document_link_match_indexes'),
        ('platform', '0004_throttle_bucket'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='DocumentGrant',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reason', models.CharField(blank=True, max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('document', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='grants', to='knowledge.document')),
                ('granted_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('principal', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='platform.principal')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('document', 'principal'), name='knowledge_grant_unique')],
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
