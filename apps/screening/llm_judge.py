"""Client for the optional LLM judge: any OpenAI-compatible chat-completions endpoint.

One call rates one item on the rubric's scale questions. Whatever goes wrong on the way (a
timeout, an HTTP error, a reply that is not exactly the JSON object asked for) comes back as a
`JudgeResult` with a status and a message; `judge_item` never raises for a failed call, so one
bad item cannot stop a run.

The parse is strict on purpose: a judge that wraps its answer in prose or code fences, adds keys,
or answers 4.5 on an integer scale is not following the rubric, and quietly repairing its reply
would hide exactly the behaviour the comparison with the humans is meant to show.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from django.conf import settings

from apps.core import jsonsafe, outbound
from apps.screening.models import JudgeVerdict, StudyJudgeConfig
from apps.studies.models import Question, Study
from apps.studies.scales import problem as scale_problem
from apps.studies.scales import step_text
from apps.textmodels.languages import primary_language

CHAT_COMPLETIONS_PATH = "/chat/completions"
# Stored with each verdict so a researcher can see what the judge said; replies longer than this
# are not what was asked for anyway.
RAW_REPLY_LIMIT = 4000
# A reply larger than this is not a small JSON object; reading stops there (bounded memory).
MAX_REPLY_BYTES = 1_000_000
_READ_CHUNK = 65_536

Status = JudgeVerdict.Status


class ConfigSource:
    """Where a judge configuration comes from: the study's own, or the deployment's settings."""

    STUDY = "study"
    ENVIRONMENT = "environment"


@dataclass(frozen=True)
class JudgeConfig:
    url: str
    model: str
    api_key: str
    timeout_seconds: float
    # Calls in flight at once for a run.
    parallelism: int = 1
    source: str = ConfigSource.ENVIRONMENT

    @property
    def is_configured(self) -> bool:
        return bool(self.url and self.model)

    @property
    def url_field(self) -> str:
        """The name a person fixes the URL under: the setting, or the judge page's field."""
        return "url" if self.source == ConfigSource.STUDY else "LLM_JUDGE_URL"

    @property
    def model_field(self) -> str:
        return "model" if self.source == ConfigSource.STUDY else "LLM_JUDGE_MODEL"

    @property
    def url_problem(self) -> str:
        """Why the URL cannot be used, or "". urllib also opens file: and ftp: URLs; the judge is
        only ever an HTTP service."""
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return f"{self.url_field} must be an http:// or https:// URL, not {self.url!r}"
        problem = outbound.url_problem(self.url, keys_setting=KEYS_SETTINGS)
        return f"{self.url_field}: {problem}" if problem else ""

    @property
    def endpoint(self) -> str:
        return chat_completions_url(self.url)

    @property
    def host(self) -> str:
        """Host and port only: the URL may carry credentials in its user part or query."""
        parts = urlsplit(self.url)
        if not parts.hostname:
            return ""
        return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname


# Where the judge's keys are configured, named in messages about URLs that carry one.
KEYS_SETTINGS = "LLM_JUDGE_API_KEY or GENERATION_API_KEYS"


def settings_api_key(url: str) -> str:
    """The key the server's settings hold for this judge URL, or "": LLM_JUDGE_API_KEY goes only
    to LLM_JUDGE_URL, and GENERATION_API_KEYS' keys only to the URL each is listed for. A key is
    never stored with a study: whoever can edit a study's judge cannot send the deployment's key
    to an address of their choosing."""
    if not url.strip():
        return ""
    wanted = chat_completions_url(url)
    default_url = str(settings.LLM_JUDGE_URL or "").strip()
    if default_url and chat_completions_url(default_url) == wanted:
        return str(settings.LLM_JUDGE_API_KEY or "")
    for configured, key in (getattr(settings, "GENERATION_API_KEYS", None) or {}).items():
        if chat_completions_url(str(configured)) == wanted:
            return str(key)
    return ""


def environment_judge_config() -> JudgeConfig:
    """The deployment-wide judge (LLM_JUDGE_* settings): the default of every study."""
    return JudgeConfig(
        url=settings.LLM_JUDGE_URL.strip(),
        model=settings.LLM_JUDGE_MODEL.strip(),
        api_key=settings.LLM_JUDGE_API_KEY,
        timeout_seconds=float(settings.LLM_JUDGE_TIMEOUT_SECONDS),
        parallelism=int(settings.LLM_JUDGE_PARALLELISM),
        source=ConfigSource.ENVIRONMENT,
    )


def judge_config(*, study: Study | None = None) -> JudgeConfig:
    """The judge in force for `study`: its own configuration if it has one, else the
    deployment's settings (also for no study)."""
    stored = None if study is None else StudyJudgeConfig.objects.filter(study_id=study.pk).first()
    if stored is None:
        return environment_judge_config()
    return JudgeConfig(
        url=stored.url,
        model=stored.model,
        api_key=settings_api_key(stored.url),
        timeout_seconds=float(stored.timeout_seconds),
        parallelism=int(stored.parallelism),
        source=ConfigSource.STUDY,
    )


def chat_completions_url(url: str) -> str:
    """Accept a base ("http://host:8000/v1") or the full endpoint; give the full endpoint."""
    base = url.strip().rstrip("/")
    if base.endswith(CHAT_COMPLETIONS_PATH):
        return base
    return base + CHAT_COMPLETIONS_PATH


@dataclass(frozen=True)
class Scale:
    """One question the judge answers with an integer in [min_value, max_value]."""

    name: str
    # The question as the rubric asks it, per language ({"en": ..., "zh": ...}).
    prompts: Mapping[str, str]
    min_value: int
    max_value: int
    # Labels of some scale points per language, e.g. {"en": {"1": "Not funny at all"}}.
    anchors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # A slider's step (answers are min + k * step, fractions allowed); None: integers.
    step: float | None = None

    def prompt(self, language: str) -> str:
        return self.prompts.get(language) or self.prompts.get("en") or self.name

    def anchors_in(self, language: str) -> Mapping[str, str]:
        return self.anchors.get(language) or self.anchors.get("en") or {}


# Likert scales and binary flags are integers in a range, a slider a number on its grid; a
# choice question's value is an index into options the judge would have to be shown
# separately, so it is not asked.
SCALE_KINDS = (Question.Kind.LIKERT, Question.Kind.BINARY, Question.Kind.SLIDER)


def rubric_scales(questions: Iterable[Question]) -> list[Scale]:
    scales = []
    for question in questions:
        if question.kind not in SCALE_KINDS:
            continue
        prompt = question.prompt if isinstance(question.prompt, dict) else {}
        all_anchors = question.anchors if isinstance(question.anchors, dict) else {}
        scales.append(
            Scale(
                name=question.name,
                prompts={str(k): str(v) for k, v in prompt.items() if v},
                min_value=int(question.min_value),
                max_value=int(question.max_value),
                anchors={
                    str(language): {str(k): str(v) for k, v in labels.items()}
                    for language, labels in all_anchors.items()
                    if isinstance(labels, dict)
                },
                step=question.step if question.kind == Question.Kind.SLIDER else None,
            )
        )
    return scales


class JudgedItem(Protocol):
    """What the prompt needs from an item (a `studies.Item` has all of it)."""

    text: str
    language: str
    level: str
    context: Any
    scenario: str


# The prompt in each language the rubric is written in: a Chinese joke is judged in Chinese,
# with the rubric's own Chinese questions and anchors, as a Chinese rater sees it.
_WORDS: dict[str, dict[str, Any]] = {
    "en": {
        "system": (
            "You rate short humorous texts for a research study, the way a careful human rater "
            "would. Answer with one JSON object and nothing else: no code fences, no explanation."
        ),
        "nouns": {
            "single": "joke",
            "multi_turn": "reply in a conversation",
            "scenario": "response to a scenario",
        },
        "noun": "text",
        "rate": "Rate the following {noun} (language: {language}).",
        "conversation": "The conversation so far:",
        "scenario": "The scenario:",
        "text": "The text to rate:",
        "questions": "Questions:",
        "range": "an integer from {low} to {high}",
        "steps": "a number from {low} to {high} in steps of {step}",
        "value": "<integer>",
        "number": "<number>",
        "reply": (
            "Reply with exactly one JSON object with these keys and no others, each value an "
            "integer in its range, and nothing else:"
        ),
        "reply_numbers": (
            "Reply with exactly one JSON object with these keys and no others, each value a "
            "number on its question's scale, and nothing else:"
        ),
        "speaker": "speaker",
        "separator": ", ",
    },
    "zh": {
        "system": (
            "你在为一项研究给简短的幽默文本打分，要像一位认真的人类评分者那样评。"
            "只回答一个 JSON 对象，别的都不要：不要代码块，不要解释。"
        ),
        "nouns": {"single": "笑话", "multi_turn": "对话中的回复", "scenario": "对情境的回应"},
        "noun": "文本",
        "rate": "请为下面这条{noun}打分（语言：{language}）。",
        "conversation": "此前的对话：",
        "scenario": "情境：",
        "text": "要打分的文本：",
        "questions": "问题：",
        "range": "{low} 到 {high} 的整数",
        "steps": "{low} 到 {high} 之间、步长为 {step} 的数",
        "value": "<整数>",
        "number": "<数>",
        "reply": "只回复一个 JSON 对象，恰好包含这些键、不含其他键，每个值都是其范围内的整数：",
        "reply_numbers": "只回复一个 JSON 对象，恰好包含这些键、不含其他键，每个值都是该问题量表上的数：",
        "speaker": "说话人",
        "separator": "，",
    },
}


def _prompt_language(item_language: str) -> str:
    return "zh" if primary_language(item_language or "") == "zh" else "en"


def _context_lines(context: Any, speaker: str) -> list[str]:
    if not isinstance(context, list):
        return []
    lines = []
    for turn in context:
        if isinstance(turn, Mapping):
            role = str(turn.get("role") or speaker)
            text = str(turn.get("text") or turn.get("content") or "")
        else:
            role, text = speaker, str(turn)
        if text:
            lines.append(f"{role}: {text}")
    return lines


def _scale_line(scale: Scale, language: str) -> str:
    words = _WORDS[language]
    if scale.step is None:
        scale_text = words["range"].format(low=scale.min_value, high=scale.max_value)
    else:
        scale_text = words["steps"].format(
            low=scale.min_value, high=scale.max_value, step=step_text(scale.step)
        )
    line = f'- "{scale.name}": {scale.prompt(language)} (' + scale_text
    anchors = scale.anchors_in(language)
    if anchors:
        points = sorted(anchors.items(), key=lambda kv: (len(kv[0]), kv[0]))
        line += "; " + words["separator"].join(f"{point} = {label}" for point, label in points)
    return line + ")"


def build_messages(*, item: JudgedItem, scales: Sequence[Scale]) -> list[dict[str, str]]:
    """The judge's prompt in the item's language (English for any language the rubric has no
    text in), asking the rubric's own questions; the reply's shape is the same in both."""
    language = _prompt_language(item.language)
    words = _WORDS[language]
    noun = words["nouns"].get(item.level, words["noun"])
    parts = [words["rate"].format(noun=noun, language=item.language or "unknown")]
    context = _context_lines(item.context, words["speaker"])
    if context:
        parts.append(words["conversation"] + "\n" + "\n".join(context))
    if item.scenario:
        parts.append(f"{words['scenario']}\n{item.scenario}")
    parts.append(f'{words["text"]}\n"""\n{item.text}\n"""')
    parts.append(
        words["questions"] + "\n" + "\n".join(_scale_line(scale, language) for scale in scales)
    )
    shape = ", ".join(
        f'"{scale.name}": {words["value"] if scale.step is None else words["number"]}'
        for scale in scales
    )
    sliders = any(scale.step is not None for scale in scales)
    parts.append(f"{words['reply_numbers' if sliders else 'reply']}\n{{{shape}}}")
    return [
        {"role": "system", "content": words["system"]},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


@dataclass(frozen=True)
class JudgeResult:
    status: str
    scores: dict[str, float]
    error: str
    raw_reply: str
    latency_ms: float | None


class MalformedReply(Exception):
    """The reply is not exactly what the rubric prompt asked for; the message says how."""


def _opener() -> urllib.request.OpenerDirector:
    # The address rule at connect time, no redirects, no proxies (apps/core/outbound.py).
    return outbound.opener()


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError | socket.timeout):
        return True
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        return isinstance(exc.reason, TimeoutError | socket.timeout)
    return False


def _read_body(response: http.client.HTTPResponse, *, deadline: float) -> bytes:
    """The body, read in chunks so that a server trickling bytes still times out: the socket
    timeout alone bounds each read, not the whole reply. read1 returns what one read of the
    socket gives, where read(n) would wait for all n bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("the reply did not arrive in time")
        chunk = response.read1(_READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise MalformedReply(f"the reply is larger than {MAX_REPLY_BYTES} bytes")
        chunks.append(chunk)


def _strict_json(text: str) -> Any:
    """json.loads, refusing duplicate keys and NaN/Infinity (not JSON, but Python accepts them)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in items:
            if key in seen:
                raise MalformedReply(f"duplicate key {key!r}")
            seen[key] = value
        return seen

    def constant(name: str) -> Any:
        raise MalformedReply(f"{name} is not a JSON number")

    # A hostile reply of thousands of nested brackets would exhaust the stack: refuse it as too
    # deep first (jsonsafe's limit), so it fails this item instead of the worker's task.
    if jsonsafe.too_deep(text, jsonsafe.MAX_DEPTH):
        raise MalformedReply(f"the JSON is nested more than {jsonsafe.MAX_DEPTH} levels deep")
    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except RecursionError:
        raise MalformedReply("the JSON is nested too deep to read") from None


def _preview(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _message_content(body: bytes) -> str:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedReply("the reply is not UTF-8 text") from None
    try:
        envelope = _strict_json(text)
    except ValueError:
        # Never the reply's own bytes (see apps.generation.chat.parse_reply).
        raise MalformedReply(f"the reply is not JSON ({len(body)} bytes; not shown)") from None
    try:
        content = envelope["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise MalformedReply("the reply has no choices[0].message.content") from None
    if not isinstance(content, str):
        raise MalformedReply("choices[0].message.content is not text")
    return content


def parse_scores(content: str, scales: Sequence[Scale]) -> dict[str, float]:
    """The scores in the judge's answer, or MalformedReply naming every problem found."""
    stripped = content.strip()
    if stripped.startswith("```"):
        raise MalformedReply(
            "the answer is wrapped in a code fence; a bare JSON object was asked for"
        )
    try:
        answer = _strict_json(stripped)
    except ValueError:
        raise MalformedReply(f"the answer is not a JSON object: {_preview(stripped)!r}") from None
    if not isinstance(answer, dict):
        raise MalformedReply(f"the answer is a JSON {type(answer).__name__}, not an object")
    expected = [scale.name for scale in scales]
    problems = []
    missing = [name for name in expected if name not in answer]
    if missing:
        problems.append("missing " + ", ".join(missing))
    unexpected = sorted(key for key in answer if key not in expected)
    if unexpected:
        problems.append("unexpected " + ", ".join(unexpected))
    scores: dict[str, float] = {}
    for scale in scales:
        if scale.name not in answer:
            continue
        value = answer[scale.name]
        if (
            scale.step is not None
            and isinstance(value, int | float)
            and not isinstance(value, bool)
        ):
            wrong = scale_problem(
                kind="slider",
                low=scale.min_value,
                high=scale.max_value,
                step=scale.step,
                value=float(value),
            )
            if wrong:
                problems.append(f"{scale.name}: {wrong}")
            else:
                scores[scale.name] = value
            continue
        # bool is an int in Python; true/false on a 1..5 scale is not an answer.
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{scale.name}: {_preview(json.dumps(value), 40)} is not an integer")
        elif not scale.min_value <= value <= scale.max_value:
            problems.append(
                f"{scale.name}: {value} is outside {scale.min_value}..{scale.max_value}"
            )
        else:
            scores[scale.name] = value
    if problems:
        raise MalformedReply("; ".join(problems))
    return scores


def _request(config: JudgeConfig, messages: list[dict[str, str]]) -> urllib.request.Request:
    body = json.dumps(
        {"model": config.model, "messages": messages, "temperature": 0}, ensure_ascii=False
    ).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    return urllib.request.Request(config.endpoint, data=body, headers=headers, method="POST")


def judge_item(*, item: JudgedItem, scales: Sequence[Scale], config: JudgeConfig) -> JudgeResult:
    """Ask the judge about one item. Never raises for a failed call: the result says what failed."""
    started = time.monotonic()

    def result(status: str, *, error: str = "", raw: str = "", scores: Any = None) -> JudgeResult:
        return JudgeResult(
            status=status,
            scores=dict(scores or {}),
            error=error,
            raw_reply=raw[:RAW_REPLY_LIMIT],
            latency_ms=round((time.monotonic() - started) * 1000.0, 1),
        )

    timeout = config.timeout_seconds
    if config.url_problem:
        return result(Status.HTTP_ERROR, error=config.url_problem)
    try:
        request = _request(config, build_messages(item=item, scales=scales))
        with _opener().open(request, timeout=timeout) as response:
            body = _read_body(response, deadline=started + timeout)
    except urllib.error.HTTPError as exc:
        try:
            detail = exc.read(RAW_REPLY_LIMIT).decode("utf-8", errors="replace")
        except (OSError, http.client.HTTPException):
            detail = ""
        return result(Status.HTTP_ERROR, error=f"HTTP {exc.code} {exc.reason}".strip(), raw=detail)
    except MalformedReply as exc:
        return result(Status.MALFORMED, error=str(exc))
    except (OSError, http.client.HTTPException, ValueError) as exc:
        # OSError covers URLError (refused, unknown host) and TimeoutError; ValueError an
        # unusable URL. HTTPException: the server hung up or sent something that is not HTTP.
        if _is_timeout(exc):
            return result(Status.TIMEOUT, error=f"no reply within {timeout:g} s")
        if outbound.refused(exc):
            return result(Status.HTTP_ERROR, error=outbound.refused(exc))
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        return result(Status.HTTP_ERROR, error=f"request failed: {reason or type(exc).__name__}")

    try:
        content = _message_content(body)
    except MalformedReply as exc:
        return result(Status.MALFORMED, error=str(exc), raw=body.decode("utf-8", "replace"))
    try:
        scores = parse_scores(content, scales)
    except MalformedReply as exc:
        return result(Status.MALFORMED, error=str(exc), raw=content)
    return result(Status.OK, scores=scores, raw=content)
