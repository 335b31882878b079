"""Claim.refuted: a claim closed because it was shown false, told apart from one a later value replaced.

"Valid at T" (as known now) answers with the claims that held at T: the current ones and the replaced ones, each
for its own period. A REFUTE closes the recorded range and leaves the valid range as written, so before this
field the two could only be told apart by the range's shape. The backfill uses that shape once: a closed claim
with a successor whose valid range is still open-ended was refuted (a replacement always cuts it).
"""

from django.db import migrations, models

BACKFILL = """
UPDATE findings_claim SET refuted = true
 WHERE NOT upper_inf(recorded) AND superseded_by_id IS NOT NULL AND upper_inf(valid) AND NOT isempty(valid)
"""


class Migration(migrations.Migration):

    dependencies = [
        ("findings", "0008_ticket_kinds"),
    ]

    operations = [
        migrations.AddField(
            model_name="claim",
            name="refuted",
            field=models.BooleanField(default=False, db_default=False),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.AddConstraint(
            model_name="claim",
            constraint=models.CheckConstraint(condition=models.Q(("refuted", False), ("status", "closed"),
                                                                 _connector="OR"),
                                              name="findings_claim_refuted_is_closed"),
        ),
    ]
