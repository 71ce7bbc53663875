"""The offense terms LaughLab ships, per language: the documented source of the lists that
migration 0002_default_offense_terms installs (the migration keeps a frozen copy, so that
reversing it removes exactly what it installed even after this list changes; a change here
needs a new data migration).

The lists are deliberately short and avoid slurs: profanity, strong insults, words that demean a
group, threats of violence, sexual terms and self-harm phrases, the kinds content filters commonly
flag. A match never deletes an item; it holds the item out of the human study until a researcher
looks at it and releases it. Terms that mostly occur innocently were left out ("kill" in "killing
it", "跳楼" in "跳楼价", "废物" in "废物利用", "妈的" in "我妈的"). Researchers edit the lists
in the admin.

English terms match whole words, case-insensitively; Chinese terms match anywhere in a text
(see apps/screening/offense.py).
"""

from __future__ import annotations

CATEGORIES = ("profanity", "insult", "hate", "violence", "sexual", "self_harm")

# (language, term, category)
DEFAULT_OFFENSE_TERMS: tuple[tuple[str, str, str], ...] = (
    # English
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
    # Chinese
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
