"""A/B pairs gain "about the same" (tie) and "neither": an outcome beside a nullable winner.

Existing judgments keep their meaning: the outcome is the side of their winner.
"""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import F, Q


def outcome_from_winner(apps, schema_editor):
    PairJudgment = apps.get_model("judgments", "PairJudgment")
    PairJudgment.objects.filter(winner=F("right")).update(outcome="right")


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0007_not_understood"),
        ("studies", "0015_question_entry"),
    ]

    operations = [
        migrations.AddField(
            model_name="pairjudgment",
            name="outcome",
            field=models.CharField(
                choices=[
                    ("left", "Left"),
                    ("right", "Right"),
                    ("tie", "About the same"),
                    ("neither", "Neither"),
                ],
                default="left",
                max_length=8,
            ),
            preserve_default=False,
        ),
        migrations.RunPython(outcome_from_winner, migrations.RunPython.noop),
        migrations.RemoveConstraint(
            model_name="pairjudgment",
            name="pair_winner_is_shown_item",
        ),
        migrations.AlterField(
            model_name="pairjudgment",
            name="winner",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="studies.item",
            ),
        ),
        migrations.AddConstraint(
            model_name="pairjudgment",
            constraint=models.CheckConstraint(
                condition=Q(outcome="left", winner=F("left"), winner__isnull=False)
                | Q(outcome="right", winner=F("right"), winner__isnull=False)
                | Q(outcome__in=["tie", "neither"], winner__isnull=True),
                name="pair_winner_matches_outcome",
            ),
        ),
    ]
