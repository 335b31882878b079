"""Word statistics are counted over a tenant's shared (workspace-visible) chunks only (knowledge.retrieval.sql): the
rows counted before included restricted records, so they are dropped. Each tenant is counted again on its next
search (knowledge.retrieval.statistics queues the count of a tenant with no row); meanwhile its words are counted
rather than weighed.

The row-level security policies admit a named system scope (groundwork/rls.py); this transaction sets one."""

from django.db import migrations

FORWARD = """
SELECT set_config('groundwork.system_scope', 'migration:knowledge.0012', true);
DELETE FROM knowledge_corpusstatistics;
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0011_corpus_statistics")]

    operations = [migrations.RunSQL(FORWARD, migrations.RunSQL.noop)]
