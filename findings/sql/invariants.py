"""The live text of the entity graph's database invariants (migration 0007 keeps a frozen copy; changing one here
needs a new migration, and tests/knowledge/test_db_functions.py fails until the database and this module agree).

- a merge joins two entities of one tenant, into a canonical entity (no chains: a node is `coalesce(merged_into, id)`);
- an alias and a merge log row belong to their entities' tenant.
Triggers, because a check constraint cannot read other rows.
"""

from __future__ import annotations

# Keyed by signature (as `::regprocedure` reads it).
GRAPH_FUNCTIONS: dict[str, str] = {
    "findings_entity_merge_valid()": """
CREATE OR REPLACE FUNCTION findings_entity_merge_valid() RETURNS trigger AS $$
BEGIN
    IF NEW.merged_into_id IS NOT NULL AND (
        NOT EXISTS (SELECT 1 FROM findings_entity t WHERE t.id = NEW.merged_into_id AND t.tenant_id = NEW.tenant_id
                                                      AND t.merged_into_id IS NULL)
        OR EXISTS (SELECT 1 FROM findings_entity c WHERE c.merged_into_id = NEW.id)) THEN
        RAISE EXCEPTION 'an entity merges into a canonical entity of its own tenant, \
and only when none is merged into it'
              USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
""",
    "findings_entity_row_same_tenant()": """
CREATE OR REPLACE FUNCTION findings_entity_row_same_tenant() RETURNS trigger AS $$
DECLARE
    entity_ids bigint[];
BEGIN
    IF TG_TABLE_NAME = 'findings_entity_alias' THEN
        entity_ids := ARRAY[NEW.entity_id];
    ELSE
        entity_ids := ARRAY[NEW.merged_id, NEW.into_id];
    END IF;
    IF EXISTS (SELECT 1 FROM findings_entity e WHERE e.id = ANY(entity_ids) AND e.tenant_id <> NEW.tenant_id) THEN
        RAISE EXCEPTION '% belongs to its entities'' tenant', TG_TABLE_NAME USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
""",
}

# Trigger name -> (table, CREATE TRIGGER statement).
GRAPH_TRIGGERS: dict[str, tuple[str, str]] = {
    "findings_entity_merge_valid": ("findings_entity", """
CREATE TRIGGER findings_entity_merge_valid
    BEFORE INSERT OR UPDATE OF merged_into_id, tenant_id ON findings_entity
    FOR EACH ROW EXECUTE FUNCTION findings_entity_merge_valid();

"""),
    "findings_entity_alias_same_tenant": ("findings_entity_alias", """
CREATE TRIGGER findings_entity_alias_same_tenant
    BEFORE INSERT OR UPDATE ON findings_entity_alias
    FOR EACH ROW EXECUTE FUNCTION findings_entity_row_same_tenant();
"""),
    "findings_entity_merge_same_tenant": ("findings_entity_merge", """
CREATE TRIGGER findings_entity_merge_same_tenant
    BEFORE INSERT OR UPDATE ON findings_entity_merge
    FOR EACH ROW EXECUTE FUNCTION findings_entity_row_same_tenant();
"""),
}
