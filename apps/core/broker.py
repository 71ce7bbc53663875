"""The embedded task broker of the demo: kombu's filesystem transport, made safe to share.

kombu's filesystem `_put` creates a message file under its final name, then locks it, then
writes; `_get` takes no lock. A reader listing the folder in between reads an empty file, and
the JSON error it raises kills the worker's consumer loop (kombu #1551): the demo's worker then
dies silently. Two changes close that, and nothing else differs from kombu's transport:

- a message is written whole to a temporary file in a sibling folder and renamed into the
  queue folder (`os.replace`: atomic on one file system), so a reader never sees it half done;
- a message file that still cannot be read (empty, truncated, not JSON: written by something
  else, or by a process killed mid-write before this transport) is moved to a `rejected` folder
  beside the queue with a warning, and the next message is read: one bad file never stops the
  worker;
- an exchange's table of bound queues (read on every publish) is changed under an exclusive
  lock on a file of its own and replaced whole: kombu's truncates it in place, so a publisher
  reading it meanwhile found it empty and dropped its message, or failed on the empty JSON;
- within a process, a publish waits for a bind in progress: kombu records a binding in the
  process's state before it writes the table, so another thread that saw the queue as bound
  published before the table existed, and its message was dropped without a word.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.transport.filesystem import LOCK_EX, exchange_queue_t, lock, unlock
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)
# Binds and table reads of this process, one at a time (see the module's last point).
_BINDING = threading.RLock()


class Channel(filesystem.Channel):
    @property
    def _staging_folder(self) -> Path:
        folder = Path(self.data_folder_out).parent / "staging"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    @property
    def _rejected_folder(self) -> Path:
        folder = Path(self.data_folder_in).parent / "rejected"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # kombu's own base classes disagree on this signature; this one is filesystem.Channel's.
    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Put the message onto the queue: written whole, then renamed into place."""
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        staged = self._staging_folder / name
        try:
            with open(staged, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(staged, Path(self.data_folder_out) / name)
        except OSError as exc:
            staged.unlink(missing_ok=True)
            raise ChannelError(f"Cannot add file {name!r} to the queue") from exc

    def _get(self, queue: Any, timeout: Any = None) -> Any:
        """The next readable message of the queue; unreadable files are set aside."""
        wanted = f"{queue}.msg"
        for filename in sorted(os.listdir(self.data_folder_in)):
            if filename.partition(".")[2] != wanted:
                continue
            processed = self.processed_folder if self.store_processed else tempfile.gettempdir()
            try:
                shutil.move(os.path.join(self.data_folder_in, filename), processed)
            except OSError:
                continue  # another consumer took it meanwhile
            path = os.path.join(processed, filename)
            try:
                with open(path, "rb") as handle:
                    payload = handle.read()
                message = loads(bytes_to_str(payload))
            except OSError as exc:
                raise ChannelError(f"Cannot read file {path!r} from the queue") from exc
            except (ValueError, UnicodeDecodeError):
                self._reject(path, filename, len(payload))
                continue
            if not isinstance(message, dict):
                self._reject(path, filename, len(payload))
                continue
            if not self.store_processed:
                os.remove(path)
            return message
        raise Empty()

    def _update_table(self, exchange: str, change: Any) -> None:
        """Apply `change` (a list of bound queues -> the new list, or None for no change) to the
        exchange's table: under an exclusive lock on a sidecar file, written whole elsewhere and
        renamed into place, so readers see the old table or the new one, never a partial one."""
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(parents=True, exist_ok=True)
        with open(self.control_folder / f"{file.name}.lock", "ab") as guard:
            lock(guard, LOCK_EX)
            try:
                try:
                    queues = [exchange_queue_t(*q) for q in loads(file.read_text("utf-8"))]
                except FileNotFoundError:
                    queues = []
                changed = change(queues)
                if changed is None:
                    return
                staged = self._staging_folder / f"{uuid.uuid4()}.exchange"
                staged.write_bytes(str_to_bytes(dumps(changed)))
                os.replace(staged, file)
            except (OSError, ValueError) as exc:
                raise ChannelError(f"Cannot update {file}") from exc
            finally:
                unlock(guard)

    def queue_bind(self, *args: Any, **kwargs: Any) -> Any:
        with _BINDING:
            return super().queue_bind(*args, **kwargs)

    def get_table(self, exchange: Any) -> Any:
        """The exchange's bound queues: the table on file, and any this process bound that the
        file does not show yet."""
        with _BINDING:
            on_file = list(super().get_table(exchange))
            known = {(q.routing_key, q.queue) for q in on_file}
            here = self.state.exchanges.get(exchange, {}).get("table", [])
            extra = [
                exchange_queue_t(rkey or "", pattern or "", queue or "")
                for rkey, pattern, queue in here
                if (rkey or "", queue or "") not in known
            ]
            return on_file + extra

    def _queue_bind(self, exchange: Any, routing_key: Any, pattern: Any, queue: Any) -> None:
        entry = exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def add(queues: list[Any]) -> list[Any] | None:
            return None if entry in queues else [entry, *queues]

        self._update_table(exchange, add)

    def _delete(
        self, queue: Any, exchange: Any, routing_key: Any, pattern: Any, *args: Any, **kwargs: Any
    ) -> None:
        filesystem.virtual.Channel._delete(
            self, queue, exchange, routing_key, pattern, *args, **kwargs
        )
        entry = exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def remove(queues: list[Any]) -> list[Any] | None:
            return [q for q in queues if q != entry] if entry in queues else None

        if self._exchange_file(exchange).exists():
            self._update_table(exchange, remove)

    def _reject(self, path: str, filename: str, size: int) -> None:
        target = self._rejected_folder / filename
        try:
            shutil.move(path, target)
        except OSError:
            target = Path(path)
        logger.warning(
            "set aside an unreadable message file of %s bytes (%s); the worker goes on",
            size,
            target,
        )


class Transport(filesystem.Transport):
    Channel = Channel
    # Its own state: kombu's filesystem transport keeps a class-level one.
    global_state = filesystem.virtual.BrokerState()
