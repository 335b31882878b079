from django.db import migrations


class Migration(migrations.Migration):
    initial = True
    dependencies = [("platform", "0001_initial")]
    operations: list = []
