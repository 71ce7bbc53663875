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
  worker.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from queue import Empty
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)


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
