"""The HNSW graph built with ef_construction 128 (was 64): at 1M synthetic chunks some chunks were unreachable in
the 64 graph whatever the search breadth (ef_search 1,000 did not find them), and vector recall@10 at 100 % readable
was 0.91-0.97; with 128 it is 0.986-0.988 at 100 % and 10 % readable (`make bench-scale`, issue #37). The build takes
longer (1M x 384 on two busy cores: 574 s -> 688 s); searches are no slower. Rebuilds the index: minutes per
million chunks."""

import pgvector.django.indexes
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0017_chunk_class_index'),
        ('platform', '0005_access_fence'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='chunk',
            name='knowledge_chunk_embedding_hnsw',
        ),
        migrations.AddIndex(
            model_name='chunk',
            index=pgvector.django.indexes.HnswIndex(ef_construction=128, fields=['embedding'], m=16, name='knowledge_chunk_embedding_hnsw', opclasses=['vector_cosine_ops']),
        ),
    ]
