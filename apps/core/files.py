"""Files through Django's storage API: built exports and uploaded import files.

The default storage is the local folder (MEDIA_ROOT), as a single machine needs; a deployment
with several web servers or workers elsewhere sets an S3-compatible object store
(STORAGE_BACKEND=s3, config/settings.py), so a file one process wrote is read by any other.
Nothing here knows which: names are storage names ("exports/demo/12-results.json"), never
paths on a disk.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from django.core.files import File
from django.core.files.storage import storages

# Upload chunks are kept in memory up to this, then in a temporary file, before the save.
SPOOL_BYTES = 8 * 1024 * 1024


def _storage():  # type: ignore[no-untyped-def]
    return storages["default"]


def save_chunks(name: str, chunks: Iterable[bytes]) -> str:
    """Store the bytes under `name` (the storage may alter it to keep it unique); returns the
    stored name."""
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        for chunk in chunks:
            spool.write(chunk)
        spool.seek(0)
        return str(_storage().save(name, File(spool, name=Path(name).name)))


def save_path(name: str, path: Path) -> str:
    """Store a finished local file under `name`; returns the stored name."""
    with path.open("rb") as handle:
        return str(_storage().save(name, File(handle, name=Path(name).name)))


def open_read(name: str) -> IO[bytes]:
    """The stored file, open for reading; FileNotFoundError when it is not there."""
    storage = _storage()
    if not name or not storage.exists(name):
        raise FileNotFoundError(name)
    return storage.open(name, "rb")


def read_bytes(name: str) -> bytes:
    with open_read(name) as handle:
        return handle.read()


def delete(name: str) -> None:
    """Remove the stored file; a file already gone is no error."""
    if name:
        storage = _storage()
        if storage.exists(name):
            storage.delete(name)


def probe() -> None:
    """Write and remove a small file: the storage takes writes (for /readyz)."""
    name = save_chunks(".readyz/probe", [b"ok"])
    delete(name)
