"""The owner's function that read the chunk tsvector's most common elements from pg_stats goes: word statistics
are counted per tenant now (knowledge.models.CorpusStatistics), never pooled across tenants — and pg_stats only
showed them to the function when its owner was a superuser, so on a managed server there were none at all."""

from django.db import migrations
from psycopg import sql


def column_statistics_drop(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP FUNCTION IF EXISTS groundwork_column_common_elems(text, text)")


def column_statistics_create(apps, schema_editor):
    # Frozen copy of the function as 0002_row_level_security created it.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT current_schema()")
        schema = cursor.fetchone()[0]
        cursor.execute(sql.SQL(
            "CREATE OR REPLACE FUNCTION groundwork_column_common_elems(tbl text, col text) "
            "RETURNS TABLE (elems text[], freqs real[]) LANGUAGE sql STABLE SECURITY DEFINER "
            "SET search_path = pg_catalog, pg_temp AS $$ "
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_catalog.pg_stats "
            "WHERE schemaname = {schema} AND tablename = tbl AND attname = col $$").format(schema=sql.Literal(schema)))


class Migration(migrations.Migration):
    dependencies = [("platform", "0002_row_level_security")]

    operations = [
        migrations.RunPython(column_statistics_drop, column_statistics_create, elidable=False),
    ]
