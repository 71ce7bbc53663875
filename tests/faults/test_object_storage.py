"""Files through the storage API, across machines: two web servers with separate local folders
and a worker share only the database, the broker and an S3-compatible object store (moto's
server, started here). An export asked for on one web server and written by the worker
downloads from the other, with the same permission checks; no local folder holds it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from apps.judgments.services import study_judgments_import
from apps.studies.models import Item
from apps.studies.services import study_create
from tests.conftest import skip_or_fail
from tests.faults import PrivateRedis, free_port
from tests.faults.test_worker_killed import _database_url, _stop

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]

BUCKET = "laughlab-test"


def _wait_http(url: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{url} did not answer in {seconds} s")


@pytest.fixture
def object_store(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "moto.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http(url)
        import boto3

        s3 = boto3.client(
            "s3",
            endpoint_url=url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        s3.create_bucket(Bucket=BUCKET)
        yield url
    finally:
        _stop(server)


@pytest.fixture
def broker(postgres_only: None) -> Iterator[str]:
    if not PrivateRedis.available():
        skip_or_fail("needs redis-server on PATH")
    server = PrivateRedis()
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def _environment(store: str, broker_url: str, media: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        SECRET_KEY="object-storage-test",
        DEBUG="0",
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=_database_url(),
        REDIS_URL=broker_url,
        MEDIA_ROOT=str(media),
        STORAGE_BACKEND="s3",
        STORAGE_BUCKET=BUCKET,
        STORAGE_ENDPOINT_URL=store,
        STORAGE_REGION="us-east-1",
        STORAGE_ACCESS_KEY_ID="testing",
        STORAGE_SECRET_ACCESS_KEY="testing",
        OMP_NUM_THREADS="1",
    )
    return env


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *command],
        cwd=django_settings.BASE_DIR,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def _call(url: str, token: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="GET" if body is None else "POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_an_export_written_by_the_worker_downloads_from_either_web_server(
    object_store: str, broker: str, builtin_rubrics: None, tmp_path: Path
) -> None:
    alice = User.objects.create_user("alice", password="pw-alice-123")
    bob = User.objects.create_user("bob", password="pw-bob-123")
    study = study_create(slug="shared", rubric_slug="humor", owner=alice, backgrounds=[])
    for i in range(5):
        Item.objects.create(study=study, external_id=f"t{i}", text=f"joke {i}", source="human")
    lines = [
        {
            "kind": "score",
            "rater": f"r{r}",
            "background": "unknown",
            "item": f"t{i}",
            "surprise": 3,
            "coherence": 3,
            "funniness": 1 + (i + r) % 7,
            "offensive": 0,
        }
        for r in range(3)
        for i in range(5)
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    study_judgments_import(study=study, data=data, filename="j.jsonl")
    mine = Token.objects.create(user=alice).key
    theirs = Token.objects.create(user=bob).key

    log = tmp_path / "processes.log"
    media = {name: tmp_path / f"media-{name}" for name in ("web1", "web2", "worker")}
    ports = {"web1": free_port(), "web2": free_port()}
    processes = [
        _start(
            ["manage.py", "runserver", f"127.0.0.1:{ports[name]}", "--noreload"],
            _environment(object_store, broker, media[name]),
            log,
        )
        for name in ("web1", "web2")
    ]
    processes.append(
        _start(
            ["-m", "celery", "-A", "config", "worker", "--pool=solo", "-l", "INFO"],
            _environment(object_store, broker, media["worker"]),
            log,
        )
    )
    try:
        web1, web2 = (f"http://127.0.0.1:{ports[name]}/api/v1/studies/shared" for name in ports)
        for base in (web1, web2):
            _wait_http(f"{base}/")
        status, body = _call(f"{web1}/exports/", mine, {"format": "raw"})
        assert status == 201, body
        job = json.loads(body)["id"]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            state = json.loads(_call(f"{web1}/exports/{job}/", mine)[1])["status"]
            if state in ("done", "failed"):
                break
            time.sleep(0.3)
        assert state == "done", log.read_text()[-3000:]

        status, from_web2 = _call(f"{web2}/exports/{job}/download/", mine)
        assert status == 200, from_web2[:300]
        status, from_web1 = _call(f"{web1}/exports/{job}/download/", mine)
        assert status == 200
        assert from_web1 == from_web2
        assert len(from_web2.decode().splitlines()) == 1 + len(lines) * 4  # a row per answer
        # The same permission checks on either server: another researcher gets nothing.
        assert _call(f"{web2}/exports/{job}/download/", theirs)[0] == 404
        assert _call(f"{web1}/exports/{job}/download/", theirs)[0] == 404
    finally:
        for process in processes:
            _stop(process)
    # The file lives in the object store, in no server's local folder.
    for folder in media.values():
        assert not any(path.is_file() for path in folder.rglob("*")) if folder.exists() else True
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=object_store,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    keys = [entry["Key"] for entry in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    assert any(key.startswith("laughlab/exports/shared/") for key in keys), keys
