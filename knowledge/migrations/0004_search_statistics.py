"""Richer statistics for the chunk tsvector: BM25 reads lexeme frequencies from pg_stats
(most_common_elems), and the default target keeps only ~1,000 of them."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0003_grounding_memo")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE knowledge_chunk ALTER COLUMN search SET STATISTICS 1000",
            "ALTER TABLE knowledge_chunk ALTER COLUMN search SET STATISTICS -1",
        ),
    ]
