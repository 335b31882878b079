"""Access fences for replica reads (groundwork/replicas.py): the table, and the triggers that mark a tenant's
fence pending on every access change of the platform layer."""

from django.conf import settings
from django.db import migrations, models

# Frozen copy: the live definitions are groundwork.sql.FENCE_FUNCTIONS and FENCE_TRIGGERS.
FORWARD = """
CREATE OR REPLACE FUNCTION platform_access_fence_mark(t bigint) RETURNS void AS $$
BEGIN
    IF current_setting('groundwork.fence_marked_' || coalesce(t, 0), true) = 'on' THEN RETURN; END IF;
    INSERT INTO platform_access_fence AS f (tenant_id, lsn, pending, generation, changed_at)
    VALUES (coalesce(t, 0), 0, true, 1, now())
    ON CONFLICT (tenant_id) DO UPDATE SET pending = true, generation = f.generation + 1, changed_at = now();
    PERFORM set_config('groundwork.fence_marked_' || coalesce(t, 0), 'on', true);
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION platform_access_fence_row() RETURNS trigger AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM platform_access_fence_mark((to_jsonb(OLD) ->> TG_ARGV[0])::bigint);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM platform_access_fence_mark((to_jsonb(NEW) ->> TG_ARGV[0])::bigint);
    END IF;
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION platform_access_fence_group() RETURNS trigger AS $$
DECLARE
    g bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.group_id ELSE NEW.group_id END;
BEGIN
    PERFORM platform_access_fence_mark(coalesce((SELECT p.tenant_id FROM platform_principal p WHERE p.id = g), 0));
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION platform_access_fence_all() RETURNS trigger AS $$
BEGIN
    PERFORM platform_access_fence_mark(0);
    RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER platform_principal_fence
    AFTER UPDATE OR DELETE ON platform_principal
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_row('tenant_id');

CREATE TRIGGER platform_membership_fence
    AFTER INSERT OR UPDATE OR DELETE ON platform_membership
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_row('tenant_id');

CREATE TRIGGER platform_apikey_fence
    AFTER UPDATE OF revoked_at, expires_at, role, owner_id, service_principal_id OR DELETE ON platform_apikey
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_row('tenant_id');

CREATE TRIGGER platform_groupmembership_fence
    AFTER INSERT OR UPDATE OR DELETE ON platform_groupmembership
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_group();

CREATE TRIGGER platform_user_fence
    AFTER UPDATE OF is_active, email ON auth_user
    FOR EACH ROW
    WHEN (OLD.is_active IS DISTINCT FROM NEW.is_active OR OLD.email IS DISTINCT FROM NEW.email)
    EXECUTE FUNCTION platform_access_fence_all();
CREATE TRIGGER platform_user_delete_fence
    AFTER DELETE ON auth_user
    FOR EACH ROW EXECUTE FUNCTION platform_access_fence_all();
"""

BACKWARD = """
DROP TRIGGER platform_principal_fence ON platform_principal;
DROP TRIGGER platform_membership_fence ON platform_membership;
DROP TRIGGER platform_apikey_fence ON platform_apikey;
DROP TRIGGER platform_groupmembership_fence ON platform_groupmembership;
DROP TRIGGER platform_user_fence ON auth_user;
DROP TRIGGER platform_user_delete_fence ON auth_user;
DROP FUNCTION platform_access_fence_all();
DROP FUNCTION platform_access_fence_group();
DROP FUNCTION platform_access_fence_row();
DROP FUNCTION platform_access_fence_mark(bigint);
"""


class Migration(migrations.Migration):

    dependencies = [
        ('platform', '0004_throttle_bucket'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AccessFence',
            fields=[
                ('tenant_id', models.BigIntegerField(primary_key=True, serialize=False)),
                ('lsn', models.BigIntegerField(default=0)),
                ('pending', models.BooleanField(default=False)),
                ('generation', models.BigIntegerField(default=0)),
                ('changed_at', models.DateTimeField()),
            ],
            options={
                'db_table': 'platform_access_fence',
            },
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
