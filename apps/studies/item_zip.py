"""Items with pictures arrive as one zip: an items file (`items.jsonl` or `items.csv`, or the
one .jsonl/.csv file at the zip's top) and the pictures it names in its `image_file` column, by their
path inside the zip. Nothing is unpacked to disk: members are read by name, with limits on how
many there are and how large they claim to be, checked before anything is read."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.utils.translation import gettext_noop

from apps.core.errors import ImportRejected, LineError
from apps.core.sentences import Sentence
from apps.studies.images import MAX_BYTES

MAX_MEMBERS = 20_000
MAX_TOTAL_BYTES = 1024 * 1024 * 1024
ITEM_FILES = ("items.jsonl", "items.csv")


def _refused(message: str, **params: object) -> ImportRejected:
    return ImportRejected([LineError.said(0, "(file)", Sentence(message, params))])


@dataclass
class ItemsZip:
    items_name: str
    items_data: bytes
    archive: zipfile.ZipFile

    def picture(self, name: str) -> bytes | None:
        """The member's bytes, or None when the zip has no such file (or it is too large to be
        a picture: the picture check then says so)."""
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            return None
        if info.is_dir():
            return None
        if info.file_size > MAX_BYTES:
            return b"\0" * (MAX_BYTES + 1)  # refused by size, without reading it
        return self.archive.read(info)


def is_zip(filename: str) -> bool:
    return PurePosixPath(filename).suffix.lower() == ".zip"


def items_zip_open(data: bytes) -> ItemsZip:
    """The zip's items file and its pictures; ImportRejected naming what is wrong with it."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise _refused(gettext_noop("is not a zip file that can be read")) from None
    if len(members) > MAX_MEMBERS:
        raise _refused(gettext_noop("holds more than %(max)s files"), max=MAX_MEMBERS)
    if sum(info.file_size for info in members) > MAX_TOTAL_BYTES:
        raise _refused(gettext_noop("unpacks to more than 1 GB"))
    names = {info.filename for info in members if not info.is_dir()}
    chosen = next((name for name in ITEM_FILES if name in names), None)
    if chosen is None:
        top = sorted(
            name
            for name in names
            if "/" not in name and PurePosixPath(name).suffix.lower() in (".jsonl", ".csv")
        )
        if len(top) != 1:
            raise _refused(
                gettext_noop(
                    "needs one items file at its top (items.jsonl or items.csv) beside the "
                    "pictures it names"
                )
            )
        chosen = top[0]
    try:
        items_data = archive.read(chosen)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise _refused(gettext_noop("is not a zip file that can be read")) from None
    return ItemsZip(items_name=chosen, items_data=items_data, archive=archive)
