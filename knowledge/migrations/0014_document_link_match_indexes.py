"""The keys a record answers to when a link names it (knowledge.sql.links._LINK_MATCH), as generated columns with an
index each: resolving the links out of an ingest batch then probes the tenant's records by key instead of
scanning all of them for every batch (quadratic over an import: SciFact's abstracts carry ticket-like keys such
as IL-6). Columns, not expression indexes: under row-level security a qual that applies a non-leakproof
function (lower, substring) to a record's column is evaluated after the policy, so it can never be an index
condition; a plain column equality can. Frozen copies of the expressions."""

from django.db import migrations

COLUMNS = {
    "link_url_key": "CASE WHEN record_url <> '' THEN lower(rtrim(split_part(record_url, '#', 1), '/')) END",
    "link_wiki_key": "lower(regexp_replace(btrim(title), '\\s+', ' ', 'g'))",
    "link_ticket_key": "substring(btrim(title) from '^([A-Z][A-Z0-9]{1,9}-[0-9]{1,6})(?![[:alnum:]_-])')",
    "link_external_key": "upper(btrim(external_id))",
}


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0013_chunk_structure")]

    operations = [
        operation
        for column, expression in COLUMNS.items()
        for operation in (
            migrations.RunSQL(
                f"ALTER TABLE knowledge_document ADD COLUMN IF NOT EXISTS {column} text "
                f"GENERATED ALWAYS AS ({expression}) STORED",
                reverse_sql=f"ALTER TABLE knowledge_document DROP COLUMN IF EXISTS {column}"),
            migrations.RunSQL(
                f"CREATE INDEX IF NOT EXISTS knowledge_doc_{column}_idx ON knowledge_document (tenant_id, {column}) "
                f"WHERE {column} IS NOT NULL",
                reverse_sql=f"DROP INDEX IF EXISTS knowledge_doc_{column}_idx"),
        )
    ]
