"""Stop-word lists for the L1 metrics (stop-word ratio, adjacent-sentence redundancy).

Both lists are deliberately modest: the function words any text of the language needs
(articles, pronouns, auxiliaries, prepositions, conjunctions, particles), not every frequent
word. A longer list would start counting topic words ("said", "year", "公司") as filler.

- English (`ENGLISH`): about 150 words, close to the core of the NLTK/Snowball English list,
  lowercased, with the contracted forms the word regex keeps whole ("don't", "it's").
- Chinese (`CHINESE`): about 115 words, written as jieba (dictionary mode) segments them:
  structural particles (的 地 得 了 着 过), pronouns, demonstratives, the copula, common
  prepositions, conjunctions, adverbs of degree and sentence-final particles. A word jieba
  joins into a longer word ("的确", "一个人") is not a stop word, by design.
"""

from __future__ import annotations

ENGLISH: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves also may might must shall upon
    don't doesn't didn't isn't aren't wasn't weren't won't can't it's that's there's i'm
    i've i'd i'll you're you've we're they're he's she's let's
    """.split()  # noqa: SIM905 - a word list reads best as running text
)

CHINESE: frozenset[str] = frozenset(
    """
    的 地 得 了 着 过 是 在 和 与 及 或 也 都 就 还 又 而 并 但 但是 而且 并且 或者 因为 所以
    如果 虽然 然而 于是 因此 于 对 对于 把 被 让 给 从 向 往 以 为 为了 由 由于 关于 跟 同
    比 将 我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 这 那 这个 那个 这些 那些 这里
    那里 这样 那样 什么 怎么 哪 哪里 谁 其 之 所 者 很 太 更 最 非常 比较 已经 正在 曾经
    不 没 没有 有 要 会 能 可以 可能 应该 一个 一些 一种 每 各 某 吗 呢 吧 啊 呀 嘛 啦 哦 等
    """.split()  # noqa: SIM905 - a word list reads best as running text
)


def stopwords_for(language: str) -> frozenset[str] | None:
    """The list for a primary language subtag ("en", "zh"), or None when there is none."""
    if language == "en":
        return ENGLISH
    if language == "zh":
        return CHINESE
    return None
