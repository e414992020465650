"""Content beyond text: images and documents, checked when they are made.

An ``Image`` or a ``Document`` holds its bytes and their media type. Both
are checked on creation, so a part that exists is one every provider
accepts: the media type is one of the supported ones, the bytes start the
way that type starts (a PNG labelled JPEG is refused, as a provider would
refuse it mid-session), and the size is within the smallest limit among
the providers (``MAX_IMAGE_BYTES``, ``MAX_DOCUMENT_BYTES``). A mistake is a
``ValueError`` (or ``TypeError`` for a wrong type) naming the field.

On the JSON wire the bytes travel as base64.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar

import attrs

from .checks import is_optional_str

#: Anthropic takes images of at most 5 MB (OpenAI 20 MB): a part within the
#: smaller limit can go to any provider, and to a fallback model.
MAX_IMAGE_BYTES = 5 * 1024 * 1024
#: Anthropic and OpenAI both take PDFs of at most 32 MB.
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024

#: Each image type, and the bytes a file of that type starts with.
IMAGE_TYPES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # and "WEBP" at offset 8, checked below
}
DOCUMENT_TYPES = ("application/pdf", "text/plain")
#: File name endings read as plain-text documents by ``Document.from_path``.
TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".csv", ".log", ".json", ".yaml", ".yml"})


def image_type(data: bytes) -> str | None:
    """The image media type ``data`` starts like, or None."""
    for media_type, magics in IMAGE_TYPES.items():
        if data.startswith(magics) and (media_type != "image/webp" or data[8:12] == b"WEBP"):
            return media_type
    return None


def _read(path: str | os.PathLike[str], limit: int, cls: type) -> bytes:
    """The file's bytes; a file over ``limit`` is refused without being read whole."""
    with open(path, "rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise ValueError(
            f"{os.fspath(path)}: over the limit of {limit:,} bytes that every provider accepts for a {cls.__name__}"
        )
    return data


def _bytes_repr(data: bytes) -> str:
    return f"<{len(data):,} bytes>"


def _is_bytes(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if type(value) is not bytes:
        kind = "None" if value is None else f"a value of type {type(value).__name__}"
        raise TypeError(f"{type(instance).__name__}.{attribute.name}: expected bytes, got {kind}")


def _is_media_type(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if type(value) is not str:
        raise TypeError(f"{type(instance).__name__}.media_type: expected a str, got {type(value).__name__}")


def _too_big(instance: Any, size: int, limit: int) -> ValueError:
    return ValueError(
        f"{type(instance).__name__}.data: {size:,} bytes is over the limit of {limit:,} bytes "
        "that every provider accepts"
    )


@attrs.frozen
class Image:
    """An image (PNG, JPEG, GIF or WebP), for a user message or a tool result."""

    data: bytes = attrs.field(validator=_is_bytes, repr=_bytes_repr)
    media_type: str = attrs.field(validator=_is_media_type)

    type: ClassVar[str] = "image"

    def __attrs_post_init__(self) -> None:
        if self.media_type not in IMAGE_TYPES:
            raise ValueError(
                f"Image.media_type: expected one of {sorted(IMAGE_TYPES)}, got {self.media_type!r}"
            )
        if len(self.data) > MAX_IMAGE_BYTES:
            raise _too_big(self, len(self.data), MAX_IMAGE_BYTES)
        if (found := image_type(self.data)) != self.media_type:
            what = f"the bytes of {found}" if found else "bytes that are no supported image"
            raise ValueError(f"Image.data: {what}, labelled {self.media_type}")

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Image:
        """The image in the file at ``path``, its type read from its bytes."""
        data = _read(path, MAX_IMAGE_BYTES, cls)
        media_type = image_type(data)
        if media_type is None:
            raise ValueError(f"{os.fspath(path)} is not a PNG, JPEG, GIF or WebP image")
        return cls(data, media_type)


@attrs.frozen
class Document:
    """A document (PDF, or UTF-8 plain text), for a user message or a tool
    result. ``name`` is shown to the model where its provider takes one."""

    data: bytes = attrs.field(validator=_is_bytes, repr=_bytes_repr)
    media_type: str = attrs.field(validator=_is_media_type)
    name: str | None = attrs.field(default=None, validator=is_optional_str)

    type: ClassVar[str] = "document"

    def __attrs_post_init__(self) -> None:
        if self.media_type not in DOCUMENT_TYPES:
            raise ValueError(
                f"Document.media_type: expected one of {list(DOCUMENT_TYPES)}, got {self.media_type!r}"
            )
        if len(self.data) > MAX_DOCUMENT_BYTES:
            raise _too_big(self, len(self.data), MAX_DOCUMENT_BYTES)
        if self.media_type == "application/pdf":
            if not self.data.startswith(b"%PDF-"):
                raise ValueError("Document.data: labelled application/pdf, but does not start with %PDF-")
        else:
            try:
                self.data.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError("Document.data: labelled text/plain, but is not UTF-8 text") from None

    @property
    def text(self) -> str:
        """A plain-text document's text ('' for a PDF)."""
        return self.data.decode("utf-8") if self.media_type == "text/plain" else ""

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, name: str | None = None) -> Document:
        """The document in the file at ``path``: a PDF by its bytes, else
        text by its name's ending (``.txt``, ``.md`` …). ``name`` defaults
        to the file's name."""
        file = Path(path)
        data = _read(file, MAX_DOCUMENT_BYTES, cls)
        if data.startswith(b"%PDF-"):
            media_type = "application/pdf"
        elif file.suffix.lower() in TEXT_SUFFIXES:
            media_type = "text/plain"
        else:
            raise ValueError(
                f"{os.fspath(path)} is neither a PDF nor a text file ({', '.join(sorted(TEXT_SUFFIXES))})"
            )
        return cls(data, media_type, name if name is not None else file.name)
