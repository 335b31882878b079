"""DocumentAcl inserts and deletes refresh each touched document once per statement, not once per row.

A row trigger re-aggregated the document's ACL array, looked up (or created) its access class and rewrote every
chunk of the document once per inserted or deleted ACL row: sharing one document with 120 people did that 120
times and left 119 intermediate access classes behind. Statement triggers with transition tables do it once per
document. Updates of DocumentAcl rows (rare: nothing in the product moves one) keep the row trigger, which
refreshes both the old and the new document.
"""

from django.db import migrations

# Frozen copy: the live definitions are knowledge.sql.ACCESS_FUNCTIONS and ACCESS_TRIGGERS.
FORWARD = """
CREATE OR REPLACE FUNCTION knowledge_documentacl_rows_changed() RETURNS trigger AS $$
BEGIN
    PERFORM knowledge_document_acl_refresh(changed.document_id)
       FROM (SELECT DISTINCT document_id FROM changed_rows) AS changed;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

DROP TRIGGER knowledge_documentacl_sync ON knowledge_documentacl;
CREATE TRIGGER knowledge_documentacl_sync
    AFTER UPDATE ON knowledge_documentacl
    FOR EACH ROW EXECUTE FUNCTION knowledge_documentacl_changed();
CREATE TRIGGER knowledge_documentacl_insert_sync
    AFTER INSERT ON knowledge_documentacl REFERENCING NEW TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_documentacl_rows_changed();
CREATE TRIGGER knowledge_documentacl_delete_sync
    AFTER DELETE ON knowledge_documentacl REFERENCING OLD TABLE AS changed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_documentacl_rows_changed();
"""

BACKWARD = """
DROP TRIGGER knowledge_documentacl_insert_sync ON knowledge_documentacl;
DROP TRIGGER knowledge_documentacl_delete_sync ON knowledge_documentacl;
DROP TRIGGER knowledge_documentacl_sync ON knowledge_documentacl;
CREATE TRIGGER knowledge_documentacl_sync
    AFTER INSERT OR UPDATE OR DELETE ON knowledge_documentacl
    FOR EACH ROW EXECUTE FUNCTION knowledge_documentacl_changed();
DROP FUNCTION knowledge_documentacl_rows_changed();
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0008_upload_batches")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
