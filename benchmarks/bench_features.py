"""Screening features per second through real Celery workers over Redis, one worker then two,
with the default text models.

1,000 synthetic candidates, half English and half Chinese (single jokes of one and of several
sentences, multi-turn replies and scenario responses, texts varied from word lists), go into a
throwaway database (SQLite in a temporary folder, or with --postgres a recreated
`laughlab_bench` on 127.0.0.1). Then, for one and for two worker processes (`celery -A config
worker --pool solo`, each a subprocess sharing the database, broker Redis db 13 on
127.0.0.1:6379 or BENCH_REDIS_URL, one torch thread each):

- every batch of SCREENING_BATCH_SIZE items is queued as `item_features_compute_task`, which
  computes every L1 feature: surprise (Gemma 3 270M, prepared by `manage.py prepare_models`),
  coherence (the multilingual Universal Sentence Encoder) and valence (VADER / SnowNLP);
- the clock runs from the first queued batch to the last stored row (polling the database);
- the workers are warmed up first (one small batch each: models loaded once per process), so
  the rate is the steady state that a screening run of thousands of items sees;
- each worker's peak resident memory (VmHWM) is read from /proc before it stops.

Then, in this process, one thread: what int8 dynamic quantization of the causal language model
buys (items/s of surprise) and costs (agreement of surprise with float32 on the same items).

    .venv/bin/python benchmarks/bench_features.py             # 1,000 items (SQLite)
    .venv/bin/python benchmarks/bench_features.py --items 200 # fewer
    .venv/bin/python benchmarks/bench_features.py --postgres
    .venv/bin/python benchmarks/bench_features.py --int8      # the workers run SURPRISE_INT8=1
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, setup_django

# The broker's Redis database is flushed before each phase: give the benchmark one of its own.
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")

_SUBJECTS = [
    "my boss",
    "the programmer",
    "a cat",
    "my grandmother",
    "the new intern",
    "a robot vacuum",
    "the weather app",
    "my dentist",
    "the office printer",
    "a penguin",
    "the project manager",
    "my smart fridge",
]
_VERBS = ["asked", "told", "warned", "reminded", "begged", "promised", "emailed", "texted"]
_THINGS = [
    "the deadline",
    "a spreadsheet",
    "the meeting",
    "a banana",
    "the password",
    "my coffee",
    "the weekend",
    "the quarterly report",
    "a bug in production",
    "the team lunch",
    "a tiny umbrella",
    "the group chat",
]
_ENDINGS = [
    "so I scheduled a meeting about it.",
    "and now it only speaks in riddles.",
    "which is why I moved to the moon.",
    "but the printer had already unionized.",
    "and I have never trusted a toaster since.",
    "so we renamed it final_v2 and went home.",
    "because apparently that counts as cardio.",
    "and the cat approved the pull request.",
]
_ZH_SUBJECTS = [
    "我的老板",
    "程序员",
    "一只猫",
    "我奶奶",
    "新来的实习生",
    "扫地机器人",
    "天气预报",
    "产品经理",
]
_ZH_VERBS = ["提醒我", "告诉我", "警告我", "求我", "答应我", "微信问我"]
_ZH_THINGS = [
    "截止日期",
    "那张表格",
    "周会",
    "一根香蕉",
    "密码",
    "我的咖啡",
    "周末",
    "季度报告",
    "线上的bug",
    "团建",
]
_ZH_ENDINGS = [
    "所以我又约了一个会来讨论这个会。",
    "结果它现在只会说谜语。",
    "于是我决定搬到月球上去。",
    "可打印机早就组织罢工了。",
    "从那以后我再也不相信烤面包机了。",
    "我们把文件改名叫最终版2然后下班了。",
    "因为据说这也算有氧运动。",
    "最后是猫批准了这次代码合并。",
]


def _sentence(rng: random.Random, language: str = "en") -> str:
    if language == "zh":
        return (
            f"{rng.choice(_ZH_SUBJECTS)}{rng.choice(_ZH_VERBS)}{rng.choice(_ZH_THINGS)}的事，"
            f"{rng.choice(_ZH_ENDINGS)}"
        )
    return (
        f"{rng.choice(_SUBJECTS).capitalize()} {rng.choice(_VERBS)} me about "
        f"{rng.choice(_THINGS)} {rng.choice(_ENDINGS)}"
    )


def make_items(n_items: int, seed: int) -> list[int]:
    from apps.studies.models import Item
    from apps.studies.services import study_create

    rng = random.Random(seed)
    study = study_create(slug="bench-features", rubric_slug="humor", random_seed=seed)
    items = []
    for i in range(n_items):
        language = "zh" if i % 2 else "en"
        kind = (i // 2) % 4
        level, context, scenario = Item.Level.SINGLE, [], ""
        if kind == 0:  # one sentence: the last 30% is the punchline
            text = _sentence(rng, language)
        elif kind == 1:  # a setup and a punchline sentence
            if language == "zh":
                text = f"为什么{rng.choice(_ZH_SUBJECTS)}要带{rng.choice(_ZH_THINGS)}？{_sentence(rng, language)}"
            else:
                text = (
                    f"Why did {rng.choice(_SUBJECTS)} bring {rng.choice(_THINGS)}? {_sentence(rng)}"
                )
        elif kind == 2:
            level = Item.Level.MULTI_TURN
            reply = (
                f"真的吗？{rng.choice(_ZH_THINGS)}？"
                if language == "zh"
                else (f"Really? {rng.choice(_THINGS).capitalize()}?")
            )
            context = [
                {"role": "user", "text": _sentence(rng, language)},
                {"role": "assistant", "text": reply},
            ]
            text = _sentence(rng, language)
        else:
            level = Item.Level.SCENARIO
            scenario = (
                f"你要向{rng.choice(_ZH_SUBJECTS)}解释{rng.choice(_ZH_THINGS)}。"
                if language == "zh"
                else f"You have to explain {rng.choice(_THINGS)} to {rng.choice(_SUBJECTS)}."
            )
            text = _sentence(rng, language)
        items.append(
            Item(
                study=study,
                external_id=f"f{i:05d}",
                text=text,
                source=f"model-{i % 5}",
                level=level,
                context=context,
                scenario=scenario,
                language=language,
                stage=Item.Stage.CANDIDATE,
            )
        )
    created = Item.objects.bulk_create(items, batch_size=2000)
    return [item.pk for item in created]


def _start_workers(n: int, env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
    workers = []
    for w in range(n):
        log = (logs / f"worker{w}.log").open("wb")
        workers.append(
            subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "celery"),
                    "-A",
                    "config",
                    "worker",
                    "--pool",
                    "solo",
                    "--concurrency",
                    "1",
                    "-n",
                    f"bench{w}@%h",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                    "--loglevel",
                    "WARNING",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
    return workers


def _stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def _cpu_seconds(workers: list[subprocess.Popen[bytes]]) -> float:
    """User + system CPU time of the worker processes so far (Linux /proc)."""
    total = 0
    for worker in workers:
        fields = Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def _wait_until_ready(n_workers: int, timeout: float = 120) -> None:
    """Every worker answers a ping: none can take a second warm-up batch before the other wakes."""
    from config.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(app.control.ping(timeout=1.0) or []) >= n_workers:
            return
    raise TimeoutError(f"{n_workers} workers did not answer within {timeout:.0f} s")


def _wait_for_rows(item_ids: list[int], since: Any, timeout: float) -> float:
    from apps.screening.models import ItemFeatures

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = ItemFeatures.objects.filter(item_id__in=item_ids, computed_at__gte=since).count()
        if done >= len(item_ids):
            return time.perf_counter()
        time.sleep(0.1)
    raise TimeoutError(f"only {done} of {len(item_ids)} items were computed in {timeout:.0f} s")


def _peak_rss_mib(worker: subprocess.Popen[bytes]) -> float:
    """The worker process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{worker.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_workers(
    n_workers: int, item_ids: list[int], batch: int, logs: Path, int8: bool
) -> tuple[float, float, list[float]]:
    """Items per second through `n_workers` worker processes (after a warm-up), items per CPU
    second of the workers (what a worker does on a core of its own), and each worker's peak
    memory in MiB."""
    import redis
    from django.utils import timezone

    from apps.screening.tasks.features import item_features_compute_task

    redis.Redis.from_url(REDIS_URL).flushdb()
    env = {
        **os.environ,
        "REDIS_URL": REDIS_URL,
        "SURPRISE_INT8": "1" if int8 else "0",
        "TORCH_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    workers = _start_workers(n_workers, env, logs)
    try:
        _wait_until_ready(n_workers)
        # Warm-up: each worker takes one small batch (prefetch 1: a busy worker reserves no more)
        # and loads its models.
        warm = item_ids[: 20 * n_workers]
        since = timezone.now()
        for w in range(n_workers):
            item_features_compute_task.delay(warm[20 * w : 20 * (w + 1)])
        _wait_for_rows(warm, since, timeout=900)
        since = timezone.now()
        cpu = _cpu_seconds(workers)
        start = time.perf_counter()
        for i in range(0, len(item_ids), batch):
            item_features_compute_task.delay(item_ids[i : i + batch])
        end = _wait_for_rows(item_ids, since, timeout=3600)
        cpu = _cpu_seconds(workers) - cpu
        peaks = [_peak_rss_mib(worker) for worker in workers]
    finally:
        _stop_workers(workers)
    return len(item_ids) / (end - start), len(item_ids) / cpu, peaks


def int8_comparison(item_ids: list[int], n: int = 200) -> dict[str, float]:
    """Surprise from the float32 causal language model and from its int8 copy (torch.ao dynamic
    quantization of every linear layer) on the same first `n` items, one thread each."""
    import dataclasses
    import warnings

    import numpy as np
    from scipy.stats import pearsonr, spearmanr

    from apps.screening.features.split import split_item
    from apps.screening.features.surprise import surprise_scores
    from apps.studies.models import Item
    from apps.textmodels.registry import causal_lm_info

    items = list(Item.objects.filter(pk__in=item_ids).order_by("pk")[:n])
    splits = [
        split_item(
            i.text, language=i.language, level=i.level, context=i.context, scenario=i.scenario
        )
        for i in items
    ]
    texts = [s.text for s in splits]
    boundaries = [s.boundary for s in splits]
    languages = [i.language for i in items]
    out: dict[str, float] = {}
    values = {}
    info = causal_lm_info()
    for name, int8 in (("float32", False), ("int8", True)):
        model = dataclasses.replace(info, int8=int8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            surprise_scores(texts[:8], boundaries[:8], languages[:8], model=model)  # load
            start = time.perf_counter()
            result = surprise_scores(texts, boundaries, languages, model=model)
        out[f"{name} items/s"] = len(items) / (time.perf_counter() - start)
        values[name] = np.array([r.value for r in result], dtype=float)
    a, b = values["float32"], values["int8"]
    out["pearson"] = float(pearsonr(a, b).statistic)
    out["spearman"] = float(spearmanr(a, b).statistic)
    out["mean abs diff"] = float(np.abs(a - b).mean())
    out["sd float32"] = float(a.std())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--items", type=int, default=1000, help="candidates (half in Chinese)")
    parser.add_argument("--int8", action="store_true", help="workers run SURPRISE_INT8=1")
    parser.add_argument("--skip-int8-comparison", action="store_true")
    args = parser.parse_args()

    os.environ["REDIS_URL"] = REDIS_URL
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    setup_django(args.postgres)
    from django.conf import settings

    from apps.textmodels.registry import causal_lm_info, embedding_info

    info = causal_lm_info()
    if info.unavailable:
        raise SystemExit(info.unavailable)
    batch = settings.SCREENING_BATCH_SIZE
    folder = Path(tempfile.mkdtemp(prefix="laughlab-bench-features-"))
    item_ids = make_items(args.items, seed=20261129)
    print(
        f"{args.items} items (half zh), batches of {batch}, surprise {info.label}"
        f"{' int8' if args.int8 else ''}, coherence {embedding_info().label}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    rates = {}
    for n_workers in (1, 2):
        rate, per_cpu, peaks = run_workers(n_workers, item_ids, batch, folder, args.int8)
        rates[n_workers] = rate
        print(
            f"all features {n_workers} worker(s): {rate:7.1f} items/s, "
            f"{per_cpu:6.1f} items per worker CPU second, peak memory per worker "
            f"{', '.join(f'{p:.0f}' for p in peaks)} MiB"
            f"   (load average {os.getloadavg()[0]:.2f})",
            flush=True,
        )
    print(f"two / one = {rates[2] / rates[1]:.2f}")
    if not args.skip_int8_comparison:
        import torch

        torch.set_num_threads(1)
        q = int8_comparison(item_ids)
        print(
            f"surprise in this process: int8 {q['int8 items/s']:.1f} items/s vs float32 "
            f"{q['float32 items/s']:.1f}; agreement pearson {q['pearson']:.3f}, "
            f"spearman {q['spearman']:.3f}, mean |diff| {q['mean abs diff']:.3f} nats "
            f"(sd of surprise {q['sd float32']:.3f})"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}; worker logs in {folder}")


if __name__ == "__main__":
    main()
