"""Pictures that come with items (a cartoon and its caption; the method's multimodal humor).

A picture is accepted only if it decodes as JPEG, PNG or WebP within the size limits; it is then
encoded again from its pixels, which drops every byte of metadata (EXIF with its camera and GPS,
XMP, comments, colour profiles' names), and stored through Django's storage API under the hash
of the stored bytes, so a deployment may keep pictures in object storage and one picture shared
by many items is stored once.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils.translation import gettext_noop
from PIL import Image, UnidentifiedImageError

from apps.core.sentences import Sentence

FORMATS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp"}
MAX_BYTES = 5 * 1024 * 1024
MAX_SIDE = 4096
STORAGE_FOLDER = "item-images"


class ImageRefused(ValueError):
    """The file is not a picture LaughLab takes; the sentence says why."""

    def __init__(self, sentence: Sentence) -> None:
        super().__init__(sentence.english())
        self.sentence = sentence


@dataclass(frozen=True)
class PreparedImage:
    content: bytes
    extension: str
    sha256: str
    width: int
    height: int

    @property
    def storage_name(self) -> str:
        return f"{STORAGE_FOLDER}/{self.sha256}.{self.extension}"


def image_prepare(data: bytes) -> PreparedImage:
    """Decode, check and re-encode a picture without its metadata, or raise ImageRefused."""
    if len(data) > MAX_BYTES:
        raise ImageRefused(
            Sentence(
                gettext_noop("the picture is larger than %(limit)s MB"),
                {"limit": MAX_BYTES // (1024 * 1024)},
            )
        )
    try:
        with warnings.catch_warnings():
            # Pillow warns before it refuses a decompression bomb; the size check below says it.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as probe:
                kind = probe.format or ""
                width, height = probe.size
                probe.verify()
            if kind not in FORMATS:
                raise ImageRefused(
                    Sentence(
                        gettext_noop("the picture must be JPEG, PNG or WebP, not %(kind)s"),
                        {"kind": kind or "unknown"},
                    )
                )
            if max(width, height) > MAX_SIDE:
                raise ImageRefused(
                    Sentence(
                        gettext_noop(
                            "the picture is %(width)s × %(height)s pixels; at most %(max)s a side"
                        ),
                        {"width": width, "height": height, "max": MAX_SIDE},
                    )
                )
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                pixels = _without_metadata(image)
    except ImageRefused:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError):
        raise ImageRefused(
            Sentence(gettext_noop("the file is not a picture that can be read (JPEG, PNG or WebP)"))
        ) from None
    out = io.BytesIO()
    if kind == "JPEG":
        pixels.save(out, format="JPEG", quality=90, optimize=True)
    elif kind == "PNG":
        pixels.save(out, format="PNG", optimize=True)
    else:
        pixels.save(out, format="WEBP", quality=90)
    content = out.getvalue()
    return PreparedImage(
        content=content,
        extension=FORMATS[kind],
        sha256=hashlib.sha256(content).hexdigest(),
        width=width,
        height=height,
    )


def _without_metadata(image: Image.Image) -> Image.Image:
    """A new image of the same pixels and nothing else."""
    mode = image.mode
    if mode not in ("RGB", "RGBA", "L", "LA"):
        mode = "RGBA" if "A" in image.getbands() or "transparency" in image.info else "RGB"
    converted = image.convert(mode)
    if image.format == "JPEG" and mode in ("RGBA", "LA"):
        converted = converted.convert("RGB")
    clean = Image.new(converted.mode, converted.size)
    clean.paste(converted)
    return clean


def image_store(prepared: PreparedImage) -> str:
    """Store the picture (once per content) and return its storage name."""
    name = prepared.storage_name
    if not default_storage.exists(name):
        saved = default_storage.save(name, ContentFile(prepared.content))
        if saved != name:  # stored at the same moment by another import: keep one copy
            default_storage.delete(saved)
    return name


CONTENT_TYPES = {"jpg": "image/jpeg", "png": "image/png", "webp": "image/webp"}


def image_type(name: str) -> str:
    return CONTENT_TYPES.get(name.rsplit(".", 1)[-1], "application/octet-stream")
