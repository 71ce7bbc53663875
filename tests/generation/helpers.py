from __future__ import annotations

import json
from typing import Any

from apps.generation.models import ModelEndpoint, PromptSet
from apps.generation.services import endpoint_save, prompt_set_import
from apps.studies.models import Study


def jsonl(*lines: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in lines).encode()


def single(pid: str, prompt: str, lang: str = "en", topic: str = "cats", **extra: Any) -> dict:
    return {"id": pid, "level": "single", "lang": lang, "topic": topic, "prompt": prompt, **extra}


def make_set(study: Study, *lines: dict[str, Any], name: str = "set", **kw: Any) -> PromptSet:
    return prompt_set_import(
        study=study, name=name, data=jsonl(*lines), filename="p.jsonl", **kw
    ).prompt_set


def make_endpoint(study: Study, url: str, name: str = "jester-1", **values: Any) -> ModelEndpoint:
    return endpoint_save(
        study=study,
        values={"name": name, "kind": "chat", "url": url, "model": "jester-1", **values},
    )
