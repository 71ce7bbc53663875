from typing import Any

from django.db import migrations, models


def name_primary_questions(apps: Any, schema_editor: Any) -> None:
    """Every rubric names the question its results follow, by the rule that chose it before."""
    from apps.studies.rubrics import primary_question_default

    Rubric = apps.get_model("studies", "Rubric")
    Question = apps.get_model("studies", "Question")
    for rubric in Rubric.objects.all():
        questions = Question.objects.filter(rubric=rubric).order_by("position")
        rubric.primary_question = primary_question_default([(q.name, q.kind) for q in questions])
        rubric.save(update_fields=["primary_question"])


class Migration(migrations.Migration):
    dependencies = [
        ("studies", "0010_study_culture_fdr"),
    ]

    operations = [
        migrations.AddField(
            model_name="rubric",
            name="primary_question",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.RunPython(name_primary_questions, migrations.RunPython.noop),
    ]
