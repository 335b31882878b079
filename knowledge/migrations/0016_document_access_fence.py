"""A document's access change or deletion fences its tenant's replica reads (groundwork/replicas.py)."""

from django.db import migrations

# Frozen copy: the live definitions are knowledge.sql.ACCESS_FUNCTIONS and ACCESS_TRIGGERS.
FORWARD = """
CREATE OR REPLACE FUNCTION knowledge_document_access_fence() RETURNS trigger AS $$
BEGIN
    PERFORM platform_access_fence_mark(OLD.tenant_id);
    IF TG_OP = 'UPDATE' AND NEW.tenant_id IS DISTINCT FROM OLD.tenant_id THEN
        PERFORM platform_access_fence_mark(NEW.tenant_id);
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER knowledge_document_access_fence
    AFTER UPDATE OF tenant_id, visibility, acl ON knowledge_document
    FOR EACH ROW
    WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id OR OLD.visibility IS DISTINCT FROM NEW.visibility
          OR OLD.acl IS DISTINCT FROM NEW.acl)
    EXECUTE FUNCTION knowledge_document_access_fence();

CREATE TRIGGER knowledge_document_delete_fence
    AFTER DELETE ON knowledge_document
    FOR EACH ROW EXECUTE FUNCTION knowledge_document_access_fence();
"""

BACKWARD = """
DROP TRIGGER knowledge_document_access_fence ON knowledge_document;
DROP TRIGGER knowledge_document_delete_fence ON knowledge_document;
DROP FUNCTION knowledge_document_access_fence();
"""


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0015_document_grants'),
        ('platform', '0005_access_fence'),
    ]

    operations = [
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
