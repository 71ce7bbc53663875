"""The chat messages a prompt becomes, per level and language, and the follow-up turn that asks
for the self-explanation. Sent as they are and stored with every output (its `request`)."""

from __future__ import annotations

from typing import Any

SYSTEM = {
    "en": "You are taking part in a study of humor. Answer with the joke or the reply only: "
    "no title, no preface, no explanation.",
    "zh": "你正在参加一项关于幽默的研究。只回答笑话或回复本身：不要标题、不要开场白、不要解释。",
}
SINGLE_FROM_TOPIC = {
    "en": "Write one short, original joke about: {topic}",
    "zh": "请写一个关于“{topic}”的简短原创笑话。",
}
SCENARIO_INTRO = {"en": "The situation:", "zh": "情境："}
CONSTRAINTS_INTRO = {"en": "Your response must:", "zh": "你的回复必须："}
SCENARIO_DEFAULT_TASK = {
    "en": "Respond to this situation with humor.",
    "zh": "请用幽默的方式回应这个情境。",
}
# The follow-up turn; a run may replace it per language.
DEFAULT_EXPLANATION_PROMPTS = {
    "en": "In two or three sentences, explain why your joke is funny: what is the mechanism?",
    "zh": "请用两三句话解释你的笑话为什么好笑：它的笑点机制是什么？",
}


def _say(table: dict[str, str], language: str) -> str:
    base = language.split("-", 1)[0]
    return table.get(language) or table.get(base) or table["en"]


def build_messages(prompt: Any) -> list[dict[str, str]]:
    language = prompt.language
    messages = [{"role": "system", "content": _say(SYSTEM, language)}]
    if prompt.level == "multi_turn":
        if prompt.text:
            messages[0]["content"] += "\n\n" + prompt.text
        for turn in prompt.context or []:
            messages.append({"role": turn["role"], "content": turn["text"]})
        return messages
    if prompt.level == "scenario":
        parts = [f"{_say(SCENARIO_INTRO, language)}\n{prompt.scenario}"]
        if prompt.constraints:
            bullet = "\n".join(f"- {c}" for c in prompt.constraints)
            parts.append(f"{_say(CONSTRAINTS_INTRO, language)}\n{bullet}")
        parts.append(prompt.text or _say(SCENARIO_DEFAULT_TASK, language))
        messages.append({"role": "user", "content": "\n\n".join(parts)})
        return messages
    task = prompt.text or _say(SINGLE_FROM_TOPIC, language).format(topic=prompt.topic)
    messages.append({"role": "user", "content": task})
    return messages


def explanation_prompt(prompts: dict[str, str], language: str) -> str:
    merged = {**DEFAULT_EXPLANATION_PROMPTS, **{k: v for k, v in prompts.items() if v}}
    return _say(merged, language)


def explanation_messages(
    messages: list[dict[str, str]], joke: str, follow_up: str
) -> list[dict[str, str]]:
    return [
        *messages,
        {"role": "assistant", "content": joke},
        {"role": "user", "content": follow_up},
    ]
