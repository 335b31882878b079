"""A plain index on the chunk's access class: the lexical channel ANDs a bitmap of the caller's classes with the
full-text match, so a caller who may read a small share visits only their own matches' heap pages
(knowledge.retrieval.lexical)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0016_document_access_fence'),
        ('platform', '0005_access_fence'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='chunk',
            index=models.Index(fields=['access_class'], name='knowledge_chunk_class_idx'),
        ),
    ]
