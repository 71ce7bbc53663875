"""The demo's web server on SQLite keeps a bounded number of database files open however many
requests come at once. A server that opens a connection per request thread and closes it at the
thread's end runs out of file descriptors under a flood: SQLite cannot close a file while
another connection of the process holds a lock on it (POSIX locks belong to the process), so
every close under overlapping requests leaves its descriptor open until the process is idle,
which a busy server never is; after ~1,000 of them every request fails with "unable to open
database file"."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow

REQUESTS_PER_CLIENT = 60
CLIENTS = 8


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _open_database_files(pid: int, database: Path) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(database):
                count += 1
        except OSError:
            continue  # closed while we looked
    return count


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="counts descriptors in /proc")
def test_a_flood_of_requests_leaves_a_bounded_number_of_database_files_open(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DEBUG="1", LAUGHLAB_VAR_DIR=str(tmp_path), LOG_LEVEL="WARNING")
    env.pop("DJANGO_SETTINGS_MODULE", None)
    manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput"], env=env, check=True, capture_output=True)
    port = _free_port()
    server = subprocess.Popen(
        [*manage, "rundemo", "--port", str(port)],
        env=env,
        stdout=(tmp_path / "rundemo.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    statuses: list[int] = []
    peak = 0
    lock = threading.Lock()
    database = tmp_path / "laughlab.sqlite3"

    def client() -> None:
        for _ in range(REQUESTS_PER_CLIENT):
            try:
                # /readyz reads the database on every request.
                with urllib.request.urlopen(f"{base}/readyz", timeout=30) as response:
                    status = response.status
            except urllib.error.HTTPError as exc:
                status = exc.code  # 503 while no worker has answered yet: still a DB read
            with lock:
                statuses.append(status)

    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            peak = max(peak, _open_database_files(server.pid, database))
            time.sleep(0.05)
        settled = _open_database_files(server.pid, database)
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert len(statuses) == CLIENTS * REQUESTS_PER_CLIENT
    assert set(statuses) <= {200, 503}, sorted(set(statuses))
    # One connection per request thread of the server's fixed pool, and the main thread's.
    assert peak <= 16, f"{peak} open descriptors of the database file"
    assert settled <= 16, f"{settled} descriptors of the database file still open at rest"
