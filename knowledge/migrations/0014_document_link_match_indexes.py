"""Expression indexes on the record columns a link key is matched against (knowledge.sql._LINK_MATCH), so
resolving the links out of an ingest batch probes the tenant's records by key instead of scanning all of them
for every batch (quadratic over an import: SciFact's abstracts carry ticket-like keys such as IL-6). Frozen
copies of the expressions: an index is used only where its expression is exactly the one in the join."""

from django.db import migrations

INDEXES = {
    "knowledge_doc_link_url_idx":
        "(tenant_id, lower(rtrim(split_part(record_url, '#', 1), '/'))) WHERE record_url <> ''",
    "knowledge_doc_link_wiki_idx": "(tenant_id, lower(regexp_replace(btrim(title), '\\s+', ' ', 'g')))",
    "knowledge_doc_link_ticket_idx":
        "(tenant_id, substring(btrim(title) from '^([A-Z][A-Z0-9]{1,9}-[0-9]{1,6})(?![[:alnum:]_-])'))",
    "knowledge_doc_link_external_idx": "(tenant_id, upper(btrim(external_id)))",
}


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0013_chunk_structure")]

    operations = [
        migrations.RunSQL(f"CREATE INDEX IF NOT EXISTS {name} ON knowledge_document {expression}",
                          reverse_sql=f"DROP INDEX IF EXISTS {name}")
        for name, expression in INDEXES.items()
    ]
