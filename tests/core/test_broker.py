"""The demo's embedded broker (apps/core/broker.py): a message file read before it is whole, or
one that is empty or truncated for any reason, never kills the worker; messages written by many
threads at once all arrive whole."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from kombu import Connection
from kombu.transport import filesystem

from apps.core import broker


def _options(root: Path) -> dict[str, object]:
    for name in ("queue", "processed", "control"):
        (root / name).mkdir(parents=True, exist_ok=True)
    return {
        "data_folder_in": str(root / "queue"),
        "data_folder_out": str(root / "queue"),
        "processed_folder": str(root / "processed"),
        "control_folder": str(root / "control"),
        "store_processed": False,
    }


def _empty_message(root: Path, queue: str = "celery") -> Path:
    # What a reader of kombu's own transport sees between its writer's open and write.
    path = root / "queue" / f"0_00000000-0000-0000-0000-000000000000.{queue}.msg"
    path.write_bytes(b"")
    return path


def test_kombus_own_transport_dies_on_an_empty_message_file_and_ours_sets_it_aside(tmp_path):
    options = _options(tmp_path)
    _empty_message(tmp_path, "jobs")
    with (
        Connection("filesystem://", transport=filesystem.Transport, transport_options=options) as c,
        pytest.raises(json.JSONDecodeError),
    ):
        c.SimpleQueue("jobs").get(block=False)

    _empty_message(tmp_path, "jobs")
    with Connection("filesystem://", transport=broker.Transport, transport_options=options) as c:
        queue = c.SimpleQueue("jobs")
        queue.put({"n": 1})
        message = queue.get(block=True, timeout=5)
        assert message.payload == {"n": 1}
        message.ack()
    assert [p.stat().st_size for p in (tmp_path / "rejected").iterdir()] == [0]


def test_messages_from_many_threads_all_arrive_whole(tmp_path):
    options = _options(tmp_path)
    threads, per_thread = 4, 100
    received: list[dict[str, int]] = []

    def produce(k: int) -> None:
        with Connection(
            "filesystem://", transport=broker.Transport, transport_options=options
        ) as c:
            queue = c.SimpleQueue("burst")
            for n in range(per_thread):
                queue.put({"thread": k, "n": n, "pad": "x" * 2000})

    def consume() -> None:
        with Connection(
            "filesystem://", transport=broker.Transport, transport_options=options
        ) as c:
            queue = c.SimpleQueue("burst")
            deadline = time.monotonic() + 60
            while len(received) < threads * per_thread and time.monotonic() < deadline:
                try:
                    message = queue.get(block=True, timeout=0.05)
                except queue.Empty:
                    continue
                received.append({"thread": message.payload["thread"], "n": message.payload["n"]})
                message.ack()

    consumer = threading.Thread(target=consume)
    consumer.start()
    producers = [threading.Thread(target=produce, args=(k,)) for k in range(threads)]
    for thread in producers:
        thread.start()
    for thread in producers:
        thread.join()
    consumer.join()
    assert sorted((r["thread"], r["n"]) for r in received) == [
        (k, n) for k in range(threads) for n in range(per_thread)
    ]
    assert not (tmp_path / "rejected").exists() or not list((tmp_path / "rejected").iterdir())
    assert not list((tmp_path / "staging").iterdir())


def test_a_real_worker_survives_an_empty_message_and_runs_the_next_task(tmp_path):
    app = Celery("broker-test", set_as_current=False)
    app.conf.update(
        broker_url="filesystem://localhost//",
        broker_transport="apps.core.broker:Transport",
        broker_transport_options=_options(tmp_path),
        task_ignore_result=True,
        worker_hijack_root_logger=False,
    )
    done = tmp_path / "done.txt"

    @app.task(name="broker_test.touch")
    def touch(path: str) -> None:
        Path(path).write_text("done", encoding="utf-8")

    _empty_message(tmp_path)
    touch.delay(str(done))
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    assert done.read_text(encoding="utf-8") == "done"
    assert len(list((tmp_path / "rejected").iterdir())) == 1
