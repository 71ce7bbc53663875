"""Install the default offense terms in English and Chinese.

The documented source of the lists is apps/screening/offense_defaults.py. This migration keeps a
frozen copy, so that it installs and, reversed, removes exactly the terms it shipped, whatever the
data module says later. Terms a researcher already added are left as they are.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

# (language, term, category), as shipped with this migration.
SHIPPED = (
    ("en", "fuck", "profanity"),
    ("en", "fucking", "profanity"),
    ("en", "motherfucker", "profanity"),
    ("en", "shit", "profanity"),
    ("en", "bullshit", "profanity"),
    ("en", "bitch", "profanity"),
    ("en", "bastard", "profanity"),
    ("en", "asshole", "profanity"),
    ("en", "ass", "profanity"),
    ("en", "son of a bitch", "profanity"),
    ("en", "cunt", "profanity"),
    ("en", "dickhead", "profanity"),
    ("en", "moron", "insult"),
    ("en", "dumbass", "insult"),
    ("en", "scumbag", "insult"),
    ("en", "douchebag", "insult"),
    ("en", "piece of shit", "insult"),
    ("en", "subhuman", "hate"),
    ("en", "retard", "hate"),
    ("en", "retarded", "hate"),
    ("en", "feminazi", "hate"),
    ("en", "white trash", "hate"),
    ("en", "go back to your country", "hate"),
    ("en", "inferior race", "hate"),
    ("en", "i will kill you", "violence"),
    ("en", "i'll kill you", "violence"),
    ("en", "slit your throat", "violence"),
    ("en", "beat you to death", "violence"),
    ("en", "mass shooting", "violence"),
    ("en", "rape", "violence"),
    ("en", "porn", "sexual"),
    ("en", "blowjob", "sexual"),
    ("en", "orgasm", "sexual"),
    ("en", "masturbate", "sexual"),
    ("en", "suicide", "self_harm"),
    ("en", "kill myself", "self_harm"),
    ("en", "kill yourself", "self_harm"),
    ("en", "kys", "self_harm"),
    ("en", "slit my wrists", "self_harm"),
    ("en", "self-harm", "self_harm"),
    ("zh", "他妈的", "profanity"),
    ("zh", "操你妈", "profanity"),
    ("zh", "草泥马", "profanity"),
    ("zh", "傻逼", "profanity"),
    ("zh", "狗日的", "profanity"),
    ("zh", "王八蛋", "profanity"),
    ("zh", "滚蛋", "profanity"),
    ("zh", "卧槽", "profanity"),
    ("zh", "白痴", "insult"),
    ("zh", "脑残", "insult"),
    ("zh", "智障", "insult"),
    ("zh", "蠢货", "insult"),
    ("zh", "贱人", "insult"),
    ("zh", "人渣", "insult"),
    ("zh", "混蛋", "insult"),
    ("zh", "狗娘养的", "insult"),
    ("zh", "去死", "insult"),
    ("zh", "娘炮", "hate"),
    ("zh", "死基佬", "hate"),
    ("zh", "乡巴佬", "hate"),
    ("zh", "绿茶婊", "hate"),
    ("zh", "残废", "hate"),
    ("zh", "劣等民族", "hate"),
    ("zh", "杀了你", "violence"),
    ("zh", "弄死你", "violence"),
    ("zh", "砍死你", "violence"),
    ("zh", "强奸", "violence"),
    ("zh", "恐怖袭击", "violence"),
    ("zh", "做爱", "sexual"),
    ("zh", "色情", "sexual"),
    ("zh", "约炮", "sexual"),
    ("zh", "鸡巴", "sexual"),
    ("zh", "黄片", "sexual"),
    ("zh", "自杀", "self_harm"),
    ("zh", "割腕", "self_harm"),
    ("zh", "不想活了", "self_harm"),
    ("zh", "活不下去", "self_harm"),
    ("zh", "上吊", "self_harm"),
    ("zh", "轻生", "self_harm"),
)


def install(apps: Any, schema_editor: Any) -> None:
    OffenseTerm = apps.get_model("screening", "OffenseTerm")
    OffenseTerm.objects.bulk_create(
        [
            OffenseTerm(language=language, term=term, category=category)
            for language, term, category in SHIPPED
        ],
        ignore_conflicts=True,
    )


def uninstall(apps: Any, schema_editor: Any) -> None:
    OffenseTerm = apps.get_model("screening", "OffenseTerm")
    for language in {language for language, _, _ in SHIPPED}:
        terms = [term for lang, term, _ in SHIPPED if lang == language]
        OffenseTerm.objects.filter(language=language, term__in=terms).delete()


class Migration(migrations.Migration):
    dependencies = [("screening", "0001_initial")]
    operations = [migrations.RunPython(install, uninstall)]
