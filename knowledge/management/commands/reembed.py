"""Embed chunks that have no vector, or everything again after a model change.

  manage.py reembed                 embed what is missing (after an outage or a config fix)
  manage.py reembed --all           clear every vector and embed again (new model, same dimension)
  manage.py reembed --dimension N   re-type the index to N dimensions, then embed everything
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import connection, transaction
from tqdm import tqdm

from ...embedders import embedder_get
from ...embedding import DIMENSION_FAULT, chunks_embed, fault_resolve
from ...models import Chunk
from ...sql import index_dimension_get, index_dimension_set


class Command(BaseCommand):
    help = "Embed missing chunk vectors, or re-embed everything after a model or dimension change."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="clear all vectors first")
        parser.add_argument("--dimension", type=int, help="change the index dimension first")
        parser.add_argument("--batch-size", type=int, default=None)

    def handle(self, *args, all, dimension, batch_size, **options):
        embedder = embedder_get()
        if embedder is None:
            raise CommandError("EMBEDDER=none: there is no embedder to embed with")
        if dimension is not None:
            if dimension != embedder.dimension:
                raise CommandError(f"the embedder {embedder.model_id} produces {embedder.dimension}-d vectors, "
                                   f"not {dimension}")
            with transaction.atomic():
                index_dimension_set(connection, dimension)
            fault_resolve(DIMENSION_FAULT)
            self.stdout.write(f"index re-typed to vector({dimension})")
        elif all:
            Chunk.objects.exclude(embedding=None).update(embedding=None, embedding_space=None, embedded_at=None)
        todo = Chunk.objects.filter(embedding__isnull=True).count()
        self.stdout.write(f"embedding {todo} chunks with {embedder.model_id} (index {index_dimension_get()}-d)")
        with tqdm(total=todo, unit="chunk", disable=todo == 0) as bar:
            report = chunks_embed(batch_size=batch_size, progress=bar.update)
        if report.faulted:
            raise CommandError("embedder and index dimensions differ; see the configuration fault in admin")
        self.stdout.write(f"embedded {report.embedded}, skipped {report.skipped_zero} zero vectors, "
                          f"{report.skipped_dimension} of the wrong size")
