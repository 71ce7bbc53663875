from django.db import migrations, models
from django.db.models import Q


def mark_prolific_raters(apps, schema_editor):
    # Raters enrolled before the field: those who brought Prolific's study or session id came
    # through a Prolific link.
    Rater = apps.get_model("raters", "Rater")
    Rater.objects.filter(origin="enrolled").filter(
        ~Q(prolific_study_id="") | ~Q(prolific_session_id="")
    ).update(from_prolific=True)


class Migration(migrations.Migration):
    dependencies = [
        ("raters", "0003_rater_background_unknown"),
    ]

    operations = [
        migrations.AddField(
            model_name="rater",
            name="from_prolific",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(mark_prolific_raters, migrations.RunPython.noop),
    ]
